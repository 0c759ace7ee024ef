"""An SDK server whose tools declare their related tools in their own ``_meta`` (``lazymcp.tools.tool_meta``):
``read`` names ``write`` and ``wipe``, which a policy may grant apart."""

from mcp.server.mcpserver import MCPServer

from lazymcp.tools.metadata import tool_meta

server = MCPServer("related", version="1.0", log_level="WARNING")


@server.tool(meta=tool_meta(related=["write", "wipe"]))
def read(key: str) -> str:
    """Read the value stored under a key."""
    return f"value of {key}"


@server.tool(meta=tool_meta(related=["read"]))
def write(key: str, value: str) -> str:
    """Store a value under a key."""
    return "stored"


@server.tool(meta=tool_meta(related=["read", "write"]))
def wipe() -> str:
    """Delete every stored value."""
    return "wiped"


if __name__ == "__main__":
    server.run()
