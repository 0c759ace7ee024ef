"""The I/O around the cores: the client sides (``stdio``, ``http_front`` with its ``http_sessions`` and
``http_checks``), the servers' processes and connections (``connections``), the ``driver`` that carries
out a core's actions, the manifest files (``manifests``), and the entry points (``proxy``, ``gateway``).
"""
