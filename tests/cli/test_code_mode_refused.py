"""Code mode is the gateway's: ``serve`` and ``proxy`` asked for it stop at once, in one line that says
where it runs, instead of listing a ``run_code`` that cannot run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ..conftest import SERVERS
from ..raw import http_proxy, mcp_url

PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]
SAID = "code mode is a gateway mode: lazymcp {} runs no code; use lazymcp gateway --mode code"


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["serve", "--mode", "code"], {}),
        (["serve", "--http", "127.0.0.1:0"], {"LAZYMCP_MODE": "code"}),
        (["proxy", "--mode", "code", "--", *PLAIN], {}),
        (["proxy", "--host-mode", "claude-code=code", "--", *PLAIN], {}),
        (["proxy", "--http", "127.0.0.1:0", "--url", "http://127.0.0.1:9/mcp"], {"LAZYMCP_MODE": "code"}),
    ],
)
def test_serve_and_proxy_refuse_code_mode_in_one_line(tmp_path: Path, argv: list[str], env: dict[str, str]) -> None:
    environ = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path), **env}
    done = subprocess.run(
        [sys.executable, "-m", "lazymcp", *argv],
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("lazymcp: error: " + SAID.format(argv[0])), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.anyio
async def test_a_proxy_session_asking_for_code_mode_in_its_url_is_told_where_code_runs() -> None:
    async with http_proxy(*PLAIN) as (port, _):
        with anyio.fail_after(60):
            async with Client(streamable_http_client(mcp_url(port) + "?mode=code"), mode="legacy") as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == ["search_tools", "run_code"]
                result = await client.call_tool("run_code", {"code": "1 + 1"})
    assert result.is_error
    assert [block.text for block in result.content if block.type == "text"] == [
        "run_code is served by the gateway (lazymcp gateway --mode code); nothing here runs code."
    ]
