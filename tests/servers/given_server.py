"""An SDK server over stdio that tells how it was started (its arguments, directory and environment), and
a tool with an optional parameter that does not take ``null``, as most servers' are."""

import json
import os
import sys

from given_env import given_environment
from mcp.server.mcpserver import MCPServer

server = MCPServer("given", version="1.0", log_level="WARNING")


@server.tool()
def given() -> str:
    """This process's arguments, working directory and environment, as JSON."""
    return json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": given_environment()})


@server.tool()
def repeat(text: str, times: int = 2) -> str:
    """Repeat a text a number of times."""
    return text * times


if __name__ == "__main__":
    server.run()
