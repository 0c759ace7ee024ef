"""Code mode against hostile code, through a real HTTP gateway and two SDK client sessions: a tool that
never returns is cut off by the run's time limit, the network is out of reach, and nothing a run leaves
behind is seen by another session's run or by the next run of its own."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ..conftest import SERVERS, free_port
from ..raw import config_of, http_gateway, mcp_url

pytest.importorskip("pydantic_monty")

TIMEOUT = 120
PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]
FAULTY = [sys.executable, str(SERVERS / "faulty_server.py")]  # its hang sleeps for an hour


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def _run(client: Client, code: str) -> tuple[bool, str]:
    result = await client.call_tool("run_code", {"code": code})
    return bool(result.is_error), _text(result)


@pytest.mark.anyio
async def test_a_tool_that_never_returns_is_cut_off_by_the_runs_limit_and_every_session_goes_on(
    tmp_path: Path,
) -> None:
    port = free_port()
    config = config_of(tmp_path, plain=PLAIN, faulty=FAULTY)
    flags = ["--mode", "code", "--code-timeout", "3", "--timeout", "600"]
    async with http_gateway(config, tmp_path / "cache", port, flags):
        with anyio.fail_after(TIMEOUT):
            async with (
                Client(streamable_http_client(mcp_url(port)), mode="legacy") as first,
                Client(streamable_http_client(mcp_url(port)), mode="legacy") as second,
            ):
                code = "print('before')\nawait faulty.hang()\nprint('after')"
                failed, said = await _run(first, code)
                assert failed and said == "before\nstopped: the run took over 3 s (--code-timeout)", said
                assert await _run(first, "await plain.add(a=1, b=2)") == (False, '{"result":3}')
                assert await _run(second, "await plain.add(a=2, b=2)") == (False, '{"result":4}')
                assert [tool.name for tool in (await second.list_tools()).tools] == ["search_tools", "run_code"]


NETWORK = {
    "import socket\nsocket.create_connection(('127.0.0.1', 80))": "No module named 'socket'",
    "import urllib.request\nurllib.request.urlopen('http://127.0.0.1/')": "No module named 'urllib'",
    "import http.client": "No module named 'http'",
    "import asyncio\nawait asyncio.open_connection('127.0.0.1', 80)": "has no attribute 'open_connection'",
    "__import__('socket')": "name '__import__' is not defined",
    "import subprocess": "No module named 'subprocess'",
}


@pytest.mark.anyio
async def test_the_network_is_out_of_reach_and_no_run_sees_what_another_left(tmp_path: Path) -> None:
    """Each run starts from nothing: a global, a function or a changed namespace of one run is not in the
    next, whether that is another session's or its own (the docs say so)."""
    port = free_port()
    config = config_of(tmp_path, plain=PLAIN)
    async with http_gateway(config, tmp_path / "cache", port, ["--mode", "code"]):
        with anyio.fail_after(TIMEOUT):
            async with (
                Client(streamable_http_client(mcp_url(port)), mode="legacy") as first,
                Client(streamable_http_client(mcp_url(port)), mode="legacy") as second,
            ):
                for code, said in NETWORK.items():
                    failed, text = await _run(first, code)
                    assert failed and said in text, (code, text)
                left = "secret = 'first'\ndef helper():\n    return secret\nplain.add = helper\nhelper()"
                assert await _run(first, left) == (False, '"first"')  # it may even rebind a tool, for its own run
                for client in (second, first):
                    for name in ("secret", "helper"):
                        failed, text = await _run(client, name)
                        assert failed and f"NameError: name '{name}' is not defined" in text, text
                    assert await _run(client, "await plain.add(a=1, b=1)") == (False, '{"result":2}')
