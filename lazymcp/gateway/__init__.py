"""The gateway: every MCP server of a user's configuration behind one lazy endpoint.

``config`` reads the configuration files clients already have, ``namespace`` names each server's tools,
``manifest`` caches each server's tool list, ``core`` is the sans-IO gateway over one ``Router`` per
server, and ``run`` is its I/O.
"""
