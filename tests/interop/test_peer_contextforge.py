"""ContextForge, the peer ``bench.peers`` can put beside lazymcp, comes up in front of real stdio servers
(``bench/peer_contextforge.py``) and says clearly when it cannot.

The end-to-end test runs only where ContextForge's environment is installed (``python -m
bench.peer_contextforge`` installs it on first use); the failure paths run everywhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.load import children
from bench.peer_contextforge import HOME, ContextForgeError, Running, check, start

from ..conftest import ROOT, SERVERS, free_port

INSTALLED = (HOME / ".installed").exists()


def write_config(path: Path, everything: list[str] | None = None) -> Path:
    servers = {"plain": {"command": sys.executable, "args": [str(SERVERS / "plain_server.py")]}}
    if everything:
        servers["everything"] = {"command": everything[0], "args": everything[1:]}
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def through_wrapper(running: Running) -> str:
    """Calls echo through ContextForge's stdio wrapper, as a stdio client would."""
    command, env = running.stdio()
    async with stdio_client(StdioServerParameters(command=command[0], args=command[1:], env=env)) as streams:
        async with ClientSession(*streams) as session:
            await session.initialize()
            result = await session.call_tool("everything-echo", {"message": "by stdio"})
            return "".join(getattr(block, "text", "") for block in result.content)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not INSTALLED, reason=f"ContextForge is not installed in {HOME} (mcp-contextforge-gateway)")
def test_a_client_lists_namespaced_tools_and_calls_them_through_contextforge(
    everything_command: list[str], tmp_path: Path
) -> None:
    running = start(write_config(tmp_path / "servers.json", everything_command), free_port(), tmp_path / "cf")
    try:
        assert running.url.startswith("http://127.0.0.1:") and running.url.endswith("/mcp")
        assert running.headers["Authorization"].startswith("Bearer ")
        tree = [pid for root in running.pids for pid in [root, *children(root)]]
        assert len(tree) >= 5  # the gateway, two bridges, the two servers under them
        names, echoed = anyio.run(check, running, "everything-echo", {"message": "hi"})
        assert {"everything-echo", "plain-add", "plain-echo", "plain-upper"} <= set(names)
        assert echoed == "Echo: hi"
        _, summed = anyio.run(check, running, "plain-add", {"a": 2, "b": 3})
        assert summed == "5"
        assert anyio.run(through_wrapper, running) == "Echo: by stdio"
    finally:
        running.stop()
    assert not [pid for pid in tree if alive(pid)]


def test_a_contextforge_that_cannot_start_is_one_error_naming_the_step(tmp_path: Path) -> None:
    # This interpreter has no ContextForge in it: the first of its tools fails.
    with pytest.raises(ContextForgeError, match="mcpgateway"):
        start(write_config(tmp_path / "servers.json"), free_port(), tmp_path / "cf", Path(sys.executable))
    command = [sys.executable, "-m", "bench.peer_contextforge", str(tmp_path / "servers.json")]
    command += ["--port", str(free_port()), "--python", sys.executable, "--workdir", str(tmp_path / "cli")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert done.stderr.startswith("contextforge: ") and "Traceback" not in done.stderr


def test_a_config_without_servers_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text('{"servers": {}}')
    command = [sys.executable, "-m", "bench.peer_contextforge", str(tmp_path / "empty.json"), "--port", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert done.stderr.startswith("contextforge: ") and "Traceback" not in done.stderr
