"""The gateway: every MCP server of a user's configuration behind one lazy endpoint.

``config`` reads the configuration files clients already have, ``namespace`` names each server's tools,
``merged`` builds the one catalog, ``manifest`` is a server's cached lists, ``lifecycle`` a server's
states, ``servers`` every server of a session, ``passthrough`` routes prompts and resources, ``relay``
passes notifications and the servers' requests between client and servers, ``handshake`` makes both
handshakes, and ``front`` is the sans-IO core the client meets. Its I/O is ``lazymcp.run.gateway``.

May import: every room below it (``core`` and down). No I/O and no SDK.
"""
