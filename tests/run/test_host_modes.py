"""``lazymcp serve`` picks each host's mode: real SDK clients sending real hosts' ``clientInfo`` names, over
stdio (where the host's environment reaches the server) and streamable HTTP (where ``?mode=`` chooses)."""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from lazymcp.protocol.errors import ErrorCode
from lazymcp.run.serve import build_server
from lazymcp.surfaces.hosts import ALWAYS_LOAD
from lazymcp.surfaces.options import Options
from lazymcp.tools.sample import sample_tools

from ..conftest import lazy_http_server

TIMEOUT = 60
SAMPLE_TOOLS = 130
HOST_VARIABLES = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "ENABLE_TOOL_SEARCH", "ANTHROPIC_BASE_URL", "LAZYMCP_MODE")


def environment(**given: str) -> dict[str, str]:
    """This environment without any host's variables, then ``given``."""
    return {**{k: v for k, v in os.environ.items() if k not in HOST_VARIABLES}, **given}


async def listed_over_stdio(name: str, version: str, env: dict[str, str], *args: str) -> tuple[list[Any], str | None]:
    """The tools ``lazymcp serve`` lists to a client calling itself ``name``, and its instructions."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "lazymcp", "serve", *args], env=env)
    with anyio.fail_after(TIMEOUT):
        async with Client(params, mode="legacy", client_info=Implementation(name=name, version=version)) as client:
            listed = await client.list_tools()
            instructions = client.instructions
    return list(listed.tools), instructions


def schema_is_stub(tool: Any) -> bool:
    return not (tool.input_schema or {}).get("properties")


@pytest.mark.anyio
async def test_claude_code_with_its_tool_search_on_gets_full_definitions_and_always_loaded_meta_tools() -> None:
    env = environment(CLAUDECODE="1", CLAUDE_CODE_ENTRYPOINT="cli", ENABLE_TOOL_SEARCH="true")
    tools, instructions = await listed_over_stdio("claude-code", "2.1.197", env, "--meta-tools", "search_tools")
    names = [tool.name for tool in tools]
    assert names[0] == "search_tools" and len(names) == SAMPLE_TOOLS + 1
    assert (tools[0].meta or {}).get(ALWAYS_LOAD) is True
    full = {tool["name"]: tool["inputSchema"] for tool in sample_tools()}
    assert {tool.name: tool.input_schema for tool in tools[1:]} == full
    assert instructions and "130 tools" in instructions


@pytest.mark.anyio
async def test_claude_code_with_search_unset_gets_full_definitions_behind_any_base_url() -> None:
    for env in (environment(CLAUDECODE="1"), environment(CLAUDECODE="1", ANTHROPIC_BASE_URL="http://127.0.0.1:9/v1")):
        tools, _ = await listed_over_stdio("claude-code", "2.1.197", env)
        assert len(tools) == SAMPLE_TOOLS and not any(tool.name == "describe_tools" for tool in tools)


@pytest.mark.anyio
async def test_claude_code_told_search_is_false_gets_stubs_and_a_mode_flag_wins_over_the_table() -> None:
    env = environment(CLAUDECODE="1", ENABLE_TOOL_SEARCH="false")
    tools, _ = await listed_over_stdio("claude-code", "2.1.197", env)
    assert tools[0].name == "describe_tools" and (tools[0].meta or {}).get(ALWAYS_LOAD) is True
    assert all(schema_is_stub(tool) for tool in tools[3:])
    on = environment(CLAUDECODE="1", ENABLE_TOOL_SEARCH="true")
    tools, _ = await listed_over_stdio("claude-code", "2.1.197", on, "--mode", "proxy")
    assert [tool.name for tool in tools][-1] == "invoke_tool" and len(tools) == 4


@pytest.mark.anyio
async def test_codex_gets_full_definitions_and_gemini_cli_gets_stubs_over_stdio() -> None:
    codex, _ = await listed_over_stdio("codex-mcp-client", "0.171.0", environment())
    full = {tool["name"]: tool["inputSchema"] for tool in sample_tools()}
    assert {tool.name: tool.input_schema for tool in codex} == full
    gemini, _ = await listed_over_stdio("gemini-cli-mcp-client", "0.61.0", environment())
    assert gemini[0].name == "describe_tools" and (gemini[0].meta or {}).get(ALWAYS_LOAD) is None


@pytest.mark.anyio
async def test_a_host_mode_given_on_the_command_line_wins_over_the_table() -> None:
    tools, _ = await listed_over_stdio(
        "codex-mcp-client", "0.171.0", environment(), "--host-mode", "codex-mcp-client=proxy"
    )
    assert len(tools) == 4


def _sample_server() -> Any:
    return build_server(sample_tools(), Options.from_env({}))


@pytest.mark.anyio
async def test_over_http_the_endpoints_mode_query_chooses_and_the_table_decides_otherwise() -> None:
    lazy = _sample_server()
    async with lazy_http_server(lazy, stateless=False) as url:
        claude = Implementation(name="claude-code", version="2.1.197")
        with anyio.fail_after(TIMEOUT):
            async with Client(url, mode="legacy", client_info=claude) as client:
                assert len((await client.list_tools()).tools) == SAMPLE_TOOLS  # no environment over HTTP
            async with Client(f"{url}?mode=describe", mode="legacy", client_info=claude) as client:
                tools = (await client.list_tools()).tools
                assert tools[0].name == "describe_tools" and (tools[0].meta or {}).get(ALWAYS_LOAD) is True
            async with Client(f"{url}?mode=nonsense", mode="legacy", client_info=claude) as client:
                with pytest.raises(MCPError) as refused:
                    await client.list_tools()
                assert refused.value.error.code == ErrorCode.INVALID_PARAMS


@pytest.mark.anyio
async def test_a_2026_client_is_served_by_the_clientinfo_of_its_requests() -> None:
    lazy = _sample_server()
    async with lazy_http_server(lazy, stateless=True) as url:
        gemini = Implementation(name="gemini-cli-mcp-client", version="0.61.0")
        with anyio.fail_after(TIMEOUT):
            async with Client(url, mode="2026-07-28", client_info=gemini) as client:
                assert (await client.list_tools()).tools[0].name == "describe_tools"
            codex = Implementation(name="codex-mcp-client", version="0.171.0")
            async with Client(url, mode="2026-07-28", client_info=codex) as client:
                assert len((await client.list_tools()).tools) == SAMPLE_TOOLS
