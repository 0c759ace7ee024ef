"""A plain SDK server over stdio, without lazymcp: what most servers in the field are."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("plain", version="1.0", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers. Returns the sum, exactly, for any size of integer."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back. Useful for testing a connection end to end."""
    return text


@server.tool()
def upper(text: str) -> str:
    """Upper-case a text. Uses Unicode case mapping rules, so it works beyond ASCII."""
    return text.upper()


if __name__ == "__main__":
    server.run()
