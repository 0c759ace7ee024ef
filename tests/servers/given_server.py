"""An SDK server over stdio that tells how it was started (its arguments, directory and environment), and
a tool with an optional parameter that does not take ``null``, as most servers' are."""

import json
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("given", version="1.0", log_level="WARNING")


@server.tool()
def given() -> str:
    """This process's arguments, working directory and environment, as JSON."""
    return json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": given_environment()})


def given_environment() -> dict[str, str]:
    """The environment as given: without what the test run's fork server adds (``tests/forkserver.py``)."""
    env = dict(os.environ)
    if env.pop("LAZYMCP_TEST_FORKSERVER", None) is not None:
        path = [entry for entry in env.pop("PYTHONPATH", "").split(os.pathsep) if entry and not entry.endswith("fork")]
        if path:
            env["PYTHONPATH"] = os.pathsep.join(path)
    return env


@server.tool()
def repeat(text: str, times: int = 2) -> str:
    """Repeat a text a number of times."""
    return text * times


if __name__ == "__main__":
    server.run()
