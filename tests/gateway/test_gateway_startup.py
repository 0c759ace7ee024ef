"""Start-up, and requests that meet a session not yet started: the gateway's start-up line and its
``--http`` address (and the proxy's, refused alike), requests a client sends before ``initialize``, an
HTTP ``initialize`` whose body is valid JSON over several lines, and what the gateway reports on stderr
of servers that fail to start. Real ``lazymcp`` processes; every wait is bounded."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from ..conftest import free_port, until_listening
from ..raw import INIT, children, config_of, gateway, hostile, http, http_proxy, request

LAZYMCP = [sys.executable, "-m", "lazymcp"]
ANSWER_WITHIN = 10.0
"""Seconds a request may wait here for an answer when the server's timeout is 2 s."""


def run_on_busy_port(*arguments: str) -> subprocess.CompletedProcess[str]:
    """Run lazymcp with ``--http`` on a port another socket listens on."""
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        command = [*LAZYMCP, *arguments[:1], "--http", f"127.0.0.1:{port}", *arguments[1:]]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)


# --- the start-up line, and what comes before initialize --------------------------------------------


def test_the_gateway_refuses_an_address_it_cannot_listen_on_in_one_line(tmp_path: Path) -> None:
    """Like ``lazymcp proxy --http`` and ``serve --http``, ``lazymcp gateway --http`` checks the address
    first (``_can_listen``): one line, status 2; not its start-up line ("clients on http://…") as if it
    served, then uvicorn's own ``ERROR: [Errno 98] …`` and status 3."""
    config = config_of(tmp_path)
    done = run_on_busy_port("gateway", "--config", str(config))
    assert done.returncode == 2, done.stderr
    assert "cannot listen on" in done.stderr and "clients on" not in done.stderr, done.stderr


def test_the_gateways_start_up_line_writes_an_ipv6_address_as_a_url(tmp_path: Path) -> None:
    """``--http [::1]:PORT`` is parsed to host ``::1``; the start-up line must name ``http://[::1]:PORT/mcp``
    (checked on the line itself: this machine may not listen on IPv6 at all)."""
    from lazymcp.gateway.front import Gateway
    from lazymcp.run.gateway import start_line

    line = start_line(Gateway([]), str(tmp_path / "mcp.json"), ("::1", 8123), eager=False)
    assert "clients on http://[::1]:8123/mcp" in line, line


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["tools/list", "prompts/list"])
async def test_a_request_sent_before_initialize_is_answered(tmp_path: Path, method: str) -> None:
    """A server without a manifest is started at launch and then waits (``spawned``) for the client's
    ``initialize``. A request sent before it is answered all the same (an error, as the proxy gives:
    "tools are listed once the client has sent ..."), not kept waiting with it under no timeout
    (``tools/*`` in ``Gateway._waiting``, lists in the server's queue) for as long as the client stays."""
    answer: dict[str, Any] | None = None
    async with gateway(config_of(tmp_path, h=hostile()), tmp_path / "cache", "--timeout", "2") as peer:
        with anyio.move_on_after(ANSWER_WITHIN):
            await peer.send(request(1, method))
            answer = await peer.answer(1)
    assert answer is not None, f"{method} before initialize: no answer within {ANSWER_WITHIN:g}s"


@pytest.mark.anyio
async def test_an_http_body_of_pretty_printed_json_reaches_a_stdio_server_as_one_line() -> None:
    """A POST body may be valid JSON over several lines (``json.dumps(..., indent=2)``). The HTTP front,
    shared by the proxy and the gateway, hands a stdio server such a message as one line: its body's
    bytes as they are would reach the server as several broken lines, and the request would go
    unanswered (here, until the server's 2 s timeout answered it with an error)."""
    async with http_proxy(*hostile(), flags=["--timeout", "2"]) as (port, _):
        with anyio.fail_after(30):
            body = json.dumps(request(1, "initialize", INIT), indent=2).encode()
            status, _, content = await http(port, "POST", body)
    assert status == 200
    assert "result" in json.loads(content), content[:300]


@pytest.mark.anyio
async def test_the_http_gateways_start_up_line_counts_the_servers_it_started(tmp_path: Path) -> None:
    """The start-up line of ``gateway --http`` is made from a core built at launch that the HTTP front
    never starts: servers start per session, so it must not say any started now, and none runs while no
    client has come."""
    port = free_port()
    command = [*LAZYMCP, "gateway", "--config", str(config_of(tmp_path, h=hostile())), "--http", f"127.0.0.1:{port}"]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    async with await anyio.open_process(command, env=env) as process:
        try:
            with anyio.fail_after(30):
                assert process.stderr is not None
                first = (await BufferedByteReceiveStream(process.stderr).receive_until(b"\n", 1 << 16)).decode()
                await until_listening(port, process)
            assert "started now" not in first, first  # over HTTP each session starts its own
            running = children(process.pid)
        finally:
            process.kill()
    assert running == [], first


# --- refused addresses, and reports of servers that fail ----------------------------------------------


def test_the_proxy_refuses_an_address_it_cannot_listen_on_in_one_line() -> None:
    done = run_on_busy_port("proxy", "--", *hostile())
    assert done.returncode == 2, done.stderr
    assert "cannot listen on" in done.stderr


SILENT = [sys.executable, "-c", "import sys\nfor _ in sys.stdin: pass"]
"""A server that reads everything and answers nothing, not even ``initialize``."""


async def stderr_of_a_session_with(
    tmp_path: Path, command: list[str] | None = None, server_timeout: float = 2, **servers: list[str]
) -> str:
    """Initialize, list tools (which waits for the servers' fates, ``server_timeout`` seconds each at most), leave;
    the gateway's stderr. One server ``s`` runs ``command``, or one per keyword."""
    config = config_of(tmp_path, **(servers or {"s": command or []}))
    async with gateway(config, tmp_path / "cache", "--timeout", f"{server_timeout:g}") as peer:
        with anyio.fail_after(server_timeout + 30):
            await peer.send(request(0, "initialize", INIT), request(1, "tools/list"))
            await peer.answer(1)
            assert peer.process.stdin is not None
            await peer.process.stdin.aclose()
            await peer.process.wait()
            return await peer.stderr()


@pytest.mark.anyio
async def test_the_gateways_reports_on_stderr_name_the_gateway(tmp_path: Path) -> None:
    """The gateway runs on the proxy's ``Driver``; what it reports of its servers ("server 's': …") still
    names the gateway, not the proxy ("lazymcp proxy: …")."""
    err = await stderr_of_a_session_with(tmp_path, [sys.executable, "-c", "raise SystemExit(4)"])
    assert "server 's'" in err, err
    assert "lazymcp proxy:" not in err, err


@pytest.mark.anyio
async def test_a_server_that_never_answers_its_handshake_fails_once_and_is_not_said_to_refuse(
    tmp_path: Path,
) -> None:
    """The router's timeout fails the server (``_down``) once: the router's error for the gateway's own
    pending ``initialize`` is not taken for the handshake's answer, which would fail it a second time
    (a second report, "it refused the gateway's initialize", and a first backoff already doubled)."""
    err = await stderr_of_a_session_with(tmp_path, SILENT)
    reports = [line for line in err.splitlines() if "server 's'" in line]
    assert len(reports) == 1 and "refused" not in reports[0], reports


@pytest.mark.anyio
async def test_start_up_says_each_server_as_it_lists_and_the_total_when_the_first_listing_is_ready(
    tmp_path: Path,
) -> None:
    """Eight servers' first start took 7.5-10 s with nothing on stderr while the client waited."""
    plain = [sys.executable, str(Path(__file__).parents[1] / "servers" / "plain_server.py")]
    bad = [sys.executable, "-c", "raise SystemExit(4)"]
    # The plain server must list on a loaded machine; the bad one fails by exiting, not by the timeout.
    err = (await stderr_of_a_session_with(tmp_path, server_timeout=30, plain=plain, bad=bad)).splitlines()
    assert "lazymcp gateway: server 'plain': 3 tools" in err, err
    [total] = [line for line in err if "the first listing is ready" in line]
    assert total.startswith("lazymcp gateway: 1 of 2 servers started now listed, 3 tools known, in "), total
    assert err.index("lazymcp gateway: server 'plain': 3 tools") < err.index(total)
