"""An SDK server over stdio that tells what it was given: its environment and its pid. With ``--linger``
it stays alive after its input ends, as a server that ignores end of input would."""

import json
import os
import sys
import time

from given_env import given_environment
from mcp.server.mcpserver import MCPServer

server = MCPServer("env", version="1.0", log_level="WARNING")


@server.tool()
def env() -> str:
    """This process's environment, as JSON (as given: without the test run's fork server)."""
    return json.dumps(given_environment())


@server.tool()
def pid() -> int:
    """This process's id."""
    return os.getpid()


if __name__ == "__main__":
    server.run()
    if "--linger" in sys.argv:
        time.sleep(3600)
