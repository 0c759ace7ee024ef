"""The gateway and the proxy serve each host its mode: real SDK clients sending real hosts' ``clientInfo``
names over stdio, with the environment a host gives the process; the gateway's instructions describe each
server in a line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import Implementation

from lazymcp.surfaces.hosts import ALWAYS_LOAD

from ..conftest import free_port, until_listening

TIMEOUT = 90
PLAIN = str(Path(__file__).parents[1] / "servers" / "plain_server.py")
HOST_VARIABLES = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "ENABLE_TOOL_SEARCH", "ANTHROPIC_BASE_URL", "LAZYMCP_MODE")


def environment(cache: Path, **given: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if k not in HOST_VARIABLES}
    return {**kept, "LAZYMCP_CACHE_DIR": str(cache), **given}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A configuration of one plain server, its manifest built (so the gateway knows its tools at once)."""
    about = {"description": "Adds, echoes and shouts."}
    servers = {"plain": {"command": sys.executable, "args": [PLAIN], "lazymcp": about}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"hosts": {"codex-mcp-client": "proxy"}}}))
    refresh = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(path), "--refresh"]
    done = subprocess.run(refresh, env=environment(tmp_path / "cache"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return path


async def listed(command: list[str], env: dict[str, str], name: str) -> tuple[list[Any], str | None]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "lazymcp", *command], env=env)
    info = Implementation(name=name, version="2.1.197" if name == "claude-code" else "1.0.0")
    with anyio.fail_after(TIMEOUT):
        async with Client(params, mode="legacy", client_info=info) as client:
            tools = (await client.list_tools()).tools
            return list(tools), client.instructions


@pytest.mark.anyio
async def test_the_gateway_serves_claude_code_by_its_tool_search_and_describes_each_server(
    config: Path, tmp_path: Path
) -> None:
    gateway = ["gateway", "--config", str(config)]
    on = environment(tmp_path / "cache", CLAUDECODE="1", ENABLE_TOOL_SEARCH="true")
    tools, instructions = await listed(gateway, on, "claude-code")
    assert [tool.name for tool in tools] == ["plain__add", "plain__echo", "plain__upper"]
    assert tools[0].input_schema["properties"]
    assert instructions is not None
    assert "- plain__: Adds, echoes and shouts. 3 tools (plain__add, plain__echo, plain__upper)." in instructions
    off = environment(tmp_path / "cache", CLAUDECODE="1", ENABLE_TOOL_SEARCH="false")
    tools, _ = await listed(gateway, off, "claude-code")
    assert tools[0].name == "describe_tools" and (tools[0].meta or {})[ALWAYS_LOAD] is True


@pytest.mark.anyio
async def test_the_configurations_host_block_and_the_table_choose_for_other_hosts(config: Path, tmp_path: Path) -> None:
    gateway = ["gateway", "--config", str(config)]
    codex, _ = await listed(gateway, environment(tmp_path / "cache"), "codex-mcp-client")
    assert [tool.name for tool in codex] == ["list_tool_categories", "search_tools", "describe_tools", "invoke_tool"]
    gemini, _ = await listed(gateway, environment(tmp_path / "cache"), "gemini-cli-mcp-client")
    assert gemini[0].name == "describe_tools" and not gemini[-1].input_schema.get("properties")
    pinned, _ = await listed([*gateway, "--mode", "describe"], environment(tmp_path / "cache"), "claude-code")
    assert pinned[0].name == "describe_tools"  # a mode for every host wins over the table


@pytest.mark.anyio
async def test_the_proxy_serves_codex_full_definitions_and_claude_code_off_search_stubs(tmp_path: Path) -> None:
    proxy = ["proxy", "--", sys.executable, PLAIN]
    codex, _ = await listed(proxy, environment(tmp_path / "cache"), "codex-mcp-client")
    assert [tool.name for tool in codex] == ["add", "echo", "upper"]
    off = environment(tmp_path / "cache", CLAUDECODE="1", ENABLE_TOOL_SEARCH="false")
    claude, _ = await listed(proxy, off, "claude-code")
    assert claude[0].name == "describe_tools" and (claude[0].meta or {})[ALWAYS_LOAD] is True


@pytest.mark.anyio
async def test_over_http_the_endpoint_urls_mode_chooses_for_the_session(config: Path, tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"127.0.0.1:{port}"]
    claude = Implementation(name="claude-code", version="2.1.197")
    async with await anyio.open_process(command, env=environment(tmp_path / "cache")) as process:
        try:
            with anyio.fail_after(TIMEOUT):
                await until_listening(port, process)
                url = f"http://127.0.0.1:{port}/mcp"
                async with Client(url, mode="legacy", client_info=claude) as client:
                    assert len((await client.list_tools()).tools) == 3  # nothing tells over HTTP: the table's
                async with Client(f"{url}?mode=describe", mode="legacy", client_info=claude) as client:
                    tools = (await client.list_tools()).tools
                assert tools[0].name == "describe_tools" and (tools[0].meta or {})[ALWAYS_LOAD] is True
                async with Client(f"{url}?mode=proxy", mode="2026-07-28", client_info=claude) as client:
                    assert len((await client.list_tools()).tools) == 4
                with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a refused initialize
                    async with Client(f"{url}?mode=lazy", mode="legacy", client_info=claude) as client:
                        await client.list_tools()
        finally:
            process.kill()


@pytest.mark.anyio
async def test_two_servers_whose_names_make_one_namespace_are_one_line_of_the_instructions(tmp_path: Path) -> None:
    """``a-b`` and ``a_b``: under gateway names each is a line of its own prefix; in code mode both are the
    namespace ``a_b`` (their tools ``a_b.add`` ... ``a_b.add_2`` ...), named once, as ``run_code`` names it."""
    pytest.importorskip("pydantic_monty")
    servers = {
        name: {"command": sys.executable, "args": [PLAIN], "lazymcp": {"description": f"The {name} copy."}}
        for name in ("a-b", "a_b")
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    env = environment(tmp_path / "cache")
    refresh = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(path), "--refresh"]
    with anyio.fail_after(TIMEOUT):
        done = await anyio.run_process(refresh, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    gateway = ["gateway", "--config", str(path)]
    _, named = await listed([*gateway, "--mode", "proxy"], env, "some-client")
    lines = [line for line in (named or "").splitlines() if line.startswith("- ")]
    assert lines == [
        "- a-b__: The a-b copy. 3 tools (a-b__add, a-b__echo, a-b__upper).",
        "- a_b__: The a_b copy. 3 tools (a_b__add, a_b__echo, a_b__upper).",
    ]
    tools, named = await listed([*gateway, "--mode", "code"], env, "some-client")
    lines = [line for line in (named or "").splitlines() if line.startswith("- ")]
    assert lines == ["- a_b: The a-b copy. The a_b copy. 6 tools (a_b.add, a_b.upper, a_b.echo_2, ...)."], named
    assert "a_b (6): The a-b copy / The a_b copy." in (tools[1].description or "")
