"""The sans-IO cores: one message in, a list of actions out, and no I/O.

``actions`` is what they decide; ``upstream`` is one server spoken to as its client (shared by the proxy
and the gateway); ``proxy`` is the single-server proxy; ``session`` is a client session's state;
``waits`` and ``fetch`` are the timed waits and the tool-list fetch of one server.

``entries`` is a server entry: how a server is started or reached and how its tools are listed.

May import: ``protocol``, ``local``, ``tools``, ``search``, ``access``, ``surfaces``. No I/O and no SDK.
"""
