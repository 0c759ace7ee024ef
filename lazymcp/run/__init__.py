"""The I/O around the cores: the client sides (``stdio``, ``http_front`` with its ``http_sessions`` and
``http_checks``), the servers' processes and connections (``connections``; a remote server: ``remote``,
and why one cannot be used: ``reach``), the ``driver`` that carries out a core's actions, the manifest
files (``manifests``), and the entry points (``proxy``, ``gateway``).

``serve`` is ``lazymcp serve`` and ``--http`` for an SDK server, ``stats`` measures listings with a real
client, ``notices`` is what the command line says on stderr.

May import: every room below it and the public modules at the top (``client``, ``sdk``, ``sdk_private``).
"""
