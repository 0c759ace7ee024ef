"""Code mode through a real gateway: an SDK client over stdio calls ``run_code``, whose Python runs in the
real sandbox (pydantic-monty) and calls a real server's tools through the gateway's own door (the
policy, the audit line with ``via: run_code``); hostile code is stopped, each with a clear error, and
the gateway goes on answering."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from ..conftest import SERVERS, free_port
from ..raw import (
    MODERN_HEADERS,
    children,
    config_of,
    gateway,
    http_gateway,
    mcp_url,
    modern_call,
    post,
    request,
    tool_call,
)

pytest.importorskip("pydantic_monty")

TIMEOUT = 120
PLAIN = str(SERVERS / "plain_server.py")  # add, echo, upper


def _config(tmp_path: Path, **more: str) -> Path:
    """One plain server; the anonymous principal may use add and echo, not upper (``more``: in the
    configuration's ``lazymcp`` block)."""
    path = tmp_path / "mcp.json"
    servers = {"plain": {"command": sys.executable, "args": [PLAIN], "lazymcp": {"description": "Adds and echoes."}}}
    access = {"*": {"allow": ["plain__add", "plain__echo"]}}
    path.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": access, **more}}))
    return path


def _params(tmp_path: Path, *flags: str) -> StdioServerParameters:
    """The gateway in code mode: by ``--mode`` among ``flags``, else by its configuration."""
    config = _config(tmp_path) if "--mode" in flags else _config(tmp_path, mode="code")
    command = ["-m", "lazymcp", "gateway", "--config", str(config), *flags]
    command += ["--audit-file", str(tmp_path / "audit.jsonl")]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    return StdioServerParameters(command=sys.executable, args=command, env=env)


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


@pytest.mark.anyio
async def test_code_calls_two_tools_sees_only_granted_ones_and_gets_errors_it_can_catch(tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with Client(_params(tmp_path), mode="legacy") as client:
            tools = (await client.list_tools()).tools
            assert [tool.name for tool in tools] == ["search_tools", "run_code"]
            assert "plain (2): Adds and echoes" in (tools[1].description or "")
            code = (
                "total = (await plain.add(a=2, b=3))['result']\n"
                "said = await plain.echo(text=f'sum {total}')\n"
                "print('found', [m['name'] for m in await search('echo text')])\n"
                "[total, said]"
            )
            result = await client.call_tool("run_code", {"code": code})
            assert not result.is_error, _text(result)
            assert "found ['plain.echo'" in _text(result)
            assert _text(result).endswith('[5,{"result":"sum 5"}]')
            denied = await client.call_tool("run_code", {"code": "await plain.upper(text='x')"})
            assert denied.is_error and "upper" in _text(denied)  # the policy's denied tool is not there
            wrong = "try:\n    await plain.add(a='x')\nexcept TypeError as e:\n    print('refused:', e)\n"
            refused = _text(await client.call_tool("run_code", {"code": wrong}))
            assert "refused: Invalid arguments for tool 'plain__add'" in refused
            assert "'b' is a required property" in refused
            shown = _text(await client.call_tool("run_code", {"code": "await describe('plain.add')"}))
            assert "async def add(*, a: int, b: int)" in shown
            found = _text(await client.call_tool("search_tools", {"query": "add numbers"}))
            assert json.loads(found)["tools"][0]["python"] == "plain.add"
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    from_code = [line for line in lines if line["via"] == "run_code"]
    assert [(line["tool"], line["outcome"]) for line in from_code][:2] == [("add", "ok"), ("echo", "ok")]
    runs = [(line["tool"], line["server"], line["outcome"]) for line in lines if line["via"] == "direct"]
    assert runs[:2] == [("run_code", None, "ok"), ("run_code", None, "tool_error")]  # the runs themselves


HOSTILE = {
    "while True:\n    pass": "over 2 s",
    "x = []\nwhile True:\n    x.append('a' * 1000000)": "memory limit",
    "def f(n):\n    return f(n + 1)\nf(0)": "recursion",
    "for i in range(10000):\n    await plain.echo(text='x')": "more than 50 tool calls",
    "print('x' * 10_000_000)": "memory limit",
    "for i in range(20000):\n    print('line', i)": "output",
    "import os\nos.getenv('HOME')": "not supported",
    "open('/etc/passwd').read()": "PermissionError",
}


@pytest.mark.anyio
async def test_hostile_code_is_stopped_with_a_clear_error_and_the_gateway_goes_on(tmp_path: Path) -> None:
    flags = (
        "--mode",
        "code",
        "--code-timeout",
        "2",
        "--code-memory",
        "64",
        "--code-calls",
        "50",
        "--code-output",
        "1000",
    )
    with anyio.fail_after(TIMEOUT):
        async with Client(_params(tmp_path, *flags), mode="legacy") as client:
            for code, said in HOSTILE.items():
                result = await client.call_tool("run_code", {"code": code})
                assert result.is_error or said == "output", code
                assert said in _text(result), (code, _text(result)[-300:])
                assert len(_text(result)) < 5000
                after = await client.call_tool("run_code", {"code": "await plain.add(a=1, b=1)"})
                assert _text(after) == '{"result":2}', code


@pytest.mark.anyio
async def test_a_cancelled_run_is_stopped_with_its_call_in_flight_and_owes_nothing(tmp_path: Path) -> None:
    """The run's call of a tool that never answers is cancelled with it: the client gets no answer for it,
    the next run is answered, and with nothing owed the gateway ends at once when its input does
    (``--timeout`` is far off)."""
    config = config_of(tmp_path, faulty=[sys.executable, str(SERVERS / "faulty_server.py")])
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "code", "--timeout", "600") as peer:
            await peer.begin()
            await peer.send(tool_call(5, "run_code", code="await faulty.hang()"))
            await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
            await peer.send(tool_call(6, "run_code", code="await faulty.ok(text='after')"))
            seen = await peer.read()
            while seen.get("id") != 6:
                assert seen.get("id") != 5, seen
                seen = await peer.read()
            assert seen["result"]["content"][0]["text"] == '"after"'
            assert peer.process.stdin is not None
            await peer.process.stdin.aclose()
            assert await peer.process.wait() == 0


@pytest.mark.anyio
async def test_an_http_session_asks_for_code_mode_in_its_url(tmp_path: Path) -> None:
    port = free_port()
    async with http_gateway(_config(tmp_path), tmp_path / "cache", port):
        with anyio.fail_after(TIMEOUT):
            async with Client(streamable_http_client(mcp_url(port) + "?mode=code"), mode="legacy") as client:
                assert "- plain: Adds and echoes." in (client.instructions or "")
                assert "run_code runs Python" in (client.instructions or "")  # its instructions are code mode's too
                assert [tool.name for tool in (await client.list_tools()).tools] == ["search_tools", "run_code"]
                code = "print(await plain.echo(text='over http'))\nlen(await search('add'))"
                result = await client.call_tool("run_code", {"code": code})
                assert _text(result) == "{'result': 'over http'}\n1", _text(result)


@pytest.mark.anyio
async def test_a_2026_request_gets_its_run_answered_in_the_envelope_of_its_era(tmp_path: Path) -> None:
    port = free_port()
    async with http_gateway(_config(tmp_path, mode="code"), tmp_path / "cache", port):
        with anyio.fail_after(TIMEOUT):
            status, answer = await post(
                port, modern_call("m-1", "run_code", code="await plain.add(a=1, b=2)"), MODERN_HEADERS
            )
    assert status == 200 and answer is not None, answer
    assert answer["result"]["content"][0]["text"] == '{"result":3}'
    assert answer["result"]["resultType"] == "complete"


def _workers(pid: int) -> list[int]:
    """The sandbox's worker processes among ``pid``'s children."""
    found: list[int] = []
    for child in children(pid):
        try:
            if b"monty" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            continue
    return found


RATE_LIMITED = """limited = 0
for i in range(10):
    try:
        await plain.add(a=1, b=i)
    except ToolError as e:
        limited += 'Rate limit' in str(e)
limited
"""


@pytest.mark.anyio
async def test_a_crashed_worker_is_an_error_and_calls_from_code_meet_the_rate_limit(tmp_path: Path) -> None:
    config = config_of(tmp_path, plain=[sys.executable, PLAIN])
    flags = ("--mode", "code", "--code-timeout", "120", "--rate-limit", "8/min")
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", *flags) as peer:
            await peer.begin()
            await peer.send(tool_call(2, "run_code", code="1"))
            assert (await peer.answer(2))["result"]["content"][0]["text"] == "1"
            await peer.send(tool_call(3, "run_code", code="while True:\n    pass"))
            await peer.send(request(30, "ping"), tool_call(31, "search_tools", query="add"))
            assert "result" in await peer.answer(31)  # answered while the code spins
            crashed: dict[str, Any] | None = None
            while crashed is None:  # the worker that runs it is killed (and any the pool starts meanwhile)
                for worker in _workers(peer.process.pid):
                    os.kill(worker, signal.SIGKILL)
                with anyio.move_on_after(1):
                    crashed = await peer.answer(3)
            assert crashed["result"]["isError"] and "crashed" in crashed["result"]["content"][0]["text"]
            await peer.send(tool_call(4, "run_code", code="1 + 1"))
            assert (await peer.answer(4))["result"]["content"][0]["text"] == "2"
            await peer.send(tool_call(5, "run_code", code=RATE_LIMITED))
            assert int((await peer.answer(5))["result"]["content"][0]["text"]) >= 1


@pytest.mark.anyio
async def test_the_model_is_told_the_python_names_the_code_calls_not_the_gateways(tmp_path: Path) -> None:
    """A server whose name is no identifier (``my-plain``): the instructions and ``run_code``'s description
    name its namespace and tools as the code calls them (``my_plain.add``), never as the gateway does."""
    config = tmp_path / "mcp.json"
    servers = {"my-plain": {"command": sys.executable, "args": [PLAIN], "lazymcp": {"description": "Adds."}}}
    config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"mode": "code"}}))
    command = ["-m", "lazymcp", "gateway", "--config", str(config)]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    with anyio.fail_after(TIMEOUT):
        refreshed = await anyio.run_process([sys.executable, *command, "--refresh"], env=env)  # its tools known
        assert refreshed.returncode == 0
        async with Client(
            StdioServerParameters(command=sys.executable, args=command, env=env), mode="legacy"
        ) as client:
            said = client.instructions or ""
            description = (await client.list_tools()).tools[1].description or ""
            result = await client.call_tool("run_code", {"code": "await my_plain.add(a=1, b=2)"})
    assert "run_code" in said and "- my_plain: Adds. 3 tools (my_plain.add, my_plain.echo, my_plain.upper)." in said
    assert "my_plain (3): Adds" in description
    assert "my-plain" not in said + description, (said, description)
    assert _text(result) == '{"result":3}'
