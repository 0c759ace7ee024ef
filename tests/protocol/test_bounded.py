"""Bounded under abuse: real proxy and serve processes, raw JSON-RPC and raw HTTP drivers, and fake
upstreams that misbehave on purpose (``servers/hostile_upstream.py``). Every wait here is bounded, and
waits on what it waits for: none sleeps for a fixed time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from lazymcp.core.actions import ToClient, ToServer
from lazymcp.core.proxy import Proxy
from lazymcp.protocol.limits import DropOldest
from lazymcp.surfaces.options import Options

from ..conftest import SERVERS, exited, free_port, until, until_listening
from ..cores import UPSTREAM, proxy_core, wire
from ..raw import (
    INIT,
    INITIALIZED,
    MODERN_HEADERS,
    PROXY,
    TIMEOUT,
    children,
    frame,
    gone,
    hostile,
    http,
    http_proxy,
    modern_call,
    open_session,
    peer,
    post,
    proxy,
    put_in_flight,
    request,
    rss_kib,
    tool_call,
)

# --- every wait has an end --------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "why"), [("endless", "did not end within 1000 pages"), ("looping", "repeated")])
async def test_an_upstream_listing_that_never_ends_is_stopped_with_an_error_naming_it(kind: str, why: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*hostile(kind))) as client:
            await client.handshake()
            await client.send(request(1, "tools/list"))
            answer = await client.answer(1)
            code = await client.process.wait()
            stderr = await client.stderr()
    assert answer["error"]["code"] == -32000
    assert why in answer["error"]["message"] and "'hostile'" in answer["error"]["message"]
    assert code == 1 and why in stderr


@pytest.mark.anyio
async def test_tool_requests_before_initialized_are_answered_with_an_error() -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*hostile())) as client:
            await client.send(request(0, "initialize", INIT))
            await client.answer(0)
            await client.send(request(1, "tools/list"), request(2, "tools/describe", {"names": ["echo"]}))
            early = [await client.answer(1), await client.answer(2)]
            await client.send(INITIALIZED, request(3, "tools/list"))
            listed = await client.answer(3)
    assert all(answer["error"]["code"] == -32600 for answer in early)
    assert "notifications/initialized" in early[0]["error"]["message"]
    assert "result" in listed


def test_a_server_request_the_client_never_answers_has_its_own_bounded_wait() -> None:
    router = legacy_router(timeout=5, client_timeout=20)
    asking = b'{"jsonrpc":"2.0","id":"q1","method":"elicitation/create","params":{}}'
    assert wire(router.from_server(UPSTREAM, asking, 0)) == [("client", asking)]
    assert router.expire(10) == []  # the client is within its own bound
    expired = router.expire(21)
    assert [type(action) for action in expired] == [ToServer, ToClient]
    assert json.loads(expired[0].data)["error"]["code"] == -32001  # the upstream hears why
    assert json.loads(expired[1].data)["params"]["requestId"] == "q1"  # the client is told to stop
    router.from_client(frame(tool_call(7, "echo")), 22)
    assert "did not answer tools/call" in str(router.expire(28))  # the proxy's own timeout runs again


def test_a_server_request_the_server_cancels_stops_holding_the_timeout() -> None:
    router = legacy_router(timeout=5)
    router.from_server(UPSTREAM, b'{"jsonrpc":"2.0","id":"q1","method":"elicitation/create","params":{}}', 0)
    router.from_server(UPSTREAM, b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"q1"}}', 1)
    router.from_client(frame(tool_call(7, "echo")), 2)
    assert "did not answer tools/call" in str(router.expire(8))


@pytest.mark.anyio
async def test_a_server_request_cancelled_by_the_server_leaves_the_proxys_timeout_working() -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*hostile(), flags=["--timeout", "2"])) as client:
            await client.handshake()
            await client.send(tool_call(1, "ask", cancel=True))
            assert "result" in await client.answer(1)
            await client.send(tool_call(2, "hang"))
            hung = await client.answer(2)
            assert await client.process.wait() == 1
    assert "did not answer tools/call within 2 s" in hung["error"]["data"]["reason"]


def legacy_router(**settings: Any) -> Proxy:
    router = proxy_core(Options(), **settings)
    router.from_client(frame(request(1, "initialize", INIT)), 0)
    router.from_server(
        UPSTREAM, b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}', 0
    )
    [_, fetch] = router.from_client(frame(INITIALIZED), 0)
    assert isinstance(fetch, ToServer)
    fetched = json.loads(fetch.data)["id"]
    router.from_server(UPSTREAM, json.dumps({"jsonrpc": "2.0", "id": fetched, "result": {"tools": []}}).encode(), 0)
    return router


# --- a bad upstream tool is quarantined -------------------------------------------------------------


@pytest.mark.anyio
async def test_duplicate_and_unserializable_tools_are_left_out_and_named_once() -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*hostile("bad-tools"), flags=["--mode", "eager"])) as client:
            await client.handshake()
            await client.send(request(1, "tools/list"), request(2, "resources/list"), tool_call(3, "echo", text="hi"))
            listed, resources, echoed = await client.answer(1), await client.answer(2), await client.answer(3)
            await client.send(request(4, "tools/list"))
            await client.answer(4)
            assert client.process.stdin is not None
            await client.process.stdin.aclose()
            assert await client.process.wait() == 0
            stderr = await client.stderr()
    names = [tool["name"] for tool in listed["result"]["tools"]]
    assert names == ["echo", "slow", "hang", "ask", "flood", "die", "deaf", "swamp"]
    assert listed["result"]["tools"][0]["description"] == "The echo tool."  # the first definition wins
    assert resources["result"]["resources"][0]["uri"] == "memo://one"
    assert "result" in echoed
    assert stderr.count("second definition of the upstream's tool 'echo'") == 1
    assert stderr.count("tool 'nested'") == 1


# --- end of input is not loss of answers; stdin and stdout of any kind ------------------------------


def piped(
    command: Sequence[str], messages: Sequence[dict[str, Any]], **streams: Any
) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` with ``messages`` on its stdin, closed right after (bounded)."""
    data = b"".join(frame(message) for message in messages)
    return subprocess.run(
        list(command), input=data, capture_output=not streams, timeout=TIMEOUT, check=False, **streams
    )


SCRIPT = [
    request(0, "initialize", INIT),
    INITIALIZED,
    request(1, "tools/list"),
    tool_call(2, "slow", seconds=0.5),
    request(3, "resources/list"),
    tool_call(4, "echo", text="last"),
]


def ids_of(output: bytes) -> list[object]:
    return sorted(json.loads(row)["id"] for row in output.splitlines() if row.strip())


def test_at_the_end_of_input_every_request_already_read_is_answered_then_exit_0() -> None:
    done = piped(proxy(*hostile()), SCRIPT)
    assert done.returncode == 0, done.stderr
    assert ids_of(done.stdout) == [0, 1, 2, 3, 4]


def test_stdin_and_stdout_may_be_regular_files(tmp_path: Path) -> None:
    source, sink = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(b"".join(frame(message) for message in SCRIPT))
    with source.open("rb") as stdin, sink.open("wb") as stdout:
        done = subprocess.run(proxy(*hostile()), stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert ids_of(sink.read_bytes()) == [0, 1, 2, 3, 4]
    assert b"Traceback" not in done.stderr


def test_stdin_at_dev_null_ends_the_proxy_at_once_without_a_traceback() -> None:
    with open(os.devnull, "rb") as stdin:
        done = subprocess.run(proxy(*hostile()), stdin=stdin, capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0
    assert done.stdout == b"" and b"Traceback" not in done.stderr


# --- clean shutdown ---------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_answers_what_is_in_flight_and_reaps_the_upstream(signum: int) -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*hostile())) as client:
            await client.handshake()
            await client.send(tool_call(1, "hang"))
            await client.send(request(2, "ping"))
            await client.answer(2)  # the hang is in flight upstream
            [upstream] = children(client.process.pid)
            client.process.send_signal(signum)
            answer = await client.answer(1)
            code = await client.process.wait()
    assert answer["error"]["code"] == -32000 and "stopped by" in answer["error"]["message"]
    assert code == 128 + signum
    assert gone(upstream)


# --- every buffer has a bound -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_client_that_never_reads_its_answers_is_not_read_either(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    big = [{"name": f"tool_{n}", "description": "d" * 400, "inputSchema": {"type": "object"}} for n in range(500)]
    catalog.write_text(json.dumps(big))
    upstream = [sys.executable, str(SERVERS / "legacy_only_server.py"), str(catalog)]
    listing = frame(request(9, "tools/list", {"lazy": False}))
    with anyio.fail_after(TIMEOUT * 2):
        async with peer(proxy(*upstream, flags=["--mode", "eager"])) as client:
            await client.handshake()
            await client.send(request(1, "tools/list"))
            await client.answer(1)
            assert client.process.stdin is not None
            written = 0
            with anyio.move_on_after(5):  # the proxy stops reading: the writes block
                while written < 20_000:
                    await client.process.stdin.send(listing * 10)
                    written += 10
            peak = rss_kib(client.process.pid)
            client.process.kill()
    assert written < 20_000  # each answer is ~250 kB: unbounded buffering would have taken them all
    # The lines of one read wait too once the output is full: ~110 MB here, where answering a whole
    # read (a thousand requests) before pausing took the proxy past 300 MB.
    assert peak < 200_000


def test_drop_oldest_keeps_the_newest_and_reports_the_first_drop_once() -> None:
    reports: list[str] = []
    queue: DropOldest[int] = DropOldest(3, lambda: reports.append("dropped"))
    for number in range(10):
        queue.put(number)
    assert len(queue) == 3 and queue.dropped == 7 and reports == ["dropped"]


# --- HTTP: sealed sessions, bounded requests, sessions and processes, addresses ---------------------


async def http_chunked(port: int, body: bytes) -> int:
    """POST ``body`` with chunked transfer encoding (no Content-Length to refuse it by); the status."""
    head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    head += "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(head.encode())
        try:
            for start in range(0, len(body), 1 << 16):
                piece = body[start : start + (1 << 16)]
                await stream.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await stream.send(b"0\r\n\r\n")
        except (anyio.BrokenResourceError, OSError):
            pass  # refused mid-body: the answer is already on its way
        reply = await stream.receive()
    return int(reply.split(b" ", 2)[1])


@pytest.mark.anyio
async def test_a_2026_client_cannot_cancel_or_see_another_clients_request() -> None:
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile()) as (port, _):
            results: dict[str, Any] = {}

            async def victim() -> None:
                results["victim"] = await post(port, modern_call(1, "slow", seconds=1.5), MODERN_HEADERS)

            async with anyio.create_task_group() as group:
                group.start_soon(victim)
                await post(port, modern_call(50, "echo"), MODERN_HEADERS)  # the proxy is up; the victim is in flight
                for request_id in (1, 2, "1"):  # the victim's id as its client knows it, and ids it may have upstream
                    cancel = {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": request_id},
                    }
                    assert (await post(port, cancel, MODERN_HEADERS))[0] == 202
            mine = await post(port, modern_call(1, "echo", token="t"), MODERN_HEADERS)
            theirs = await post(port, modern_call(1, "echo", token="t"), MODERN_HEADERS)
    status, answer = results["victim"]
    assert status == 200 and answer is not None and answer["id"] == 1 and "result" in answer
    tokens = [json.loads(body["result"]["content"][0]["text"])["meta"]["progressToken"] for _, body in (mine, theirs)]  # type: ignore[index]
    assert tokens[0] != tokens[1]  # two clients' token "t" are two tokens upstream


@pytest.mark.anyio
@pytest.mark.parametrize(
    "message",
    [
        request(True, "ping"),
        request(1.5, "ping"),
        request([1], "ping"),
        {"jsonrpc": "2.0", "id": 1, "method": 7},
    ],
    ids=["id-true", "id-float", "id-array", "method-number"],
)
async def test_a_post_with_a_bad_id_or_method_is_refused_at_once_and_sigterm_still_works(
    message: dict[str, Any],
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile()) as (port, process):
            status, _, _ = await http(port, "POST", json.dumps(message).encode(), MODERN_HEADERS)
            init_status, init_headers, _ = await http(port, "POST", json.dumps(request(1, "initialize", INIT)).encode())
            session = {"Mcp-Session-Id": init_headers["mcp-session-id"]}
            legacy_status, _, _ = await http(port, "POST", json.dumps(message).encode(), session)
            process.terminate()
            with anyio.fail_after(10):
                await process.wait()
    assert status == legacy_status == 400 and init_status == 200


@pytest.mark.anyio
async def test_sigterm_ends_the_http_proxy_with_a_request_in_flight_and_reaps_its_upstreams() -> None:
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile()) as (port, process):
            session = await open_session(port)
            await post(port, modern_call(1, "echo"), MODERN_HEADERS)
            upstreams = children(process.pid)
            outcome: list[Any] = []
            async with anyio.create_task_group() as group:
                await put_in_flight(group, port, tool_call(2, "hang"), session, outcome)
                process.terminate()
                with anyio.fail_after(10):
                    await process.wait()
    assert len(upstreams) == 2 and all(gone(pid) for pid in upstreams)
    status, answer = outcome[0]
    assert status == 200 and answer["error"]["code"] == -32000 and "shutting down" in answer["error"]["message"]


@pytest.mark.anyio
async def test_a_2025_client_cancelling_its_request_gets_its_post_answered() -> None:
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile()) as (port, _):
            session = await open_session(port)
            outcome: list[Any] = []
            async with anyio.create_task_group() as group:
                await put_in_flight(group, port, tool_call(2, "hang"), session, outcome)
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
                assert (await post(port, cancel, session))[0] == 202
            after = await post(port, tool_call(2, "echo"), session)  # the cancelled request's id is free again
    assert outcome[0][1]["error"]["code"] == -32800
    assert after[0] == 200 and "result" in after[1]


@pytest.mark.anyio
async def test_a_post_reusing_an_id_in_flight_is_refused() -> None:
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile()) as (port, _):
            session = await open_session(port)
            results: list[Any] = []
            async with anyio.create_task_group() as group:
                await put_in_flight(group, port, tool_call(5, "slow", seconds=1), session, results)
                reused = await post(port, tool_call(5, "echo"), session)
    assert reused[0] == 409
    assert results[0][0] == 200 and "result" in results[0][1]


@pytest.mark.anyio
async def test_a_body_past_the_limit_gets_413() -> None:
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile()) as (port, _):
            declared, _, _ = await http(port, "POST", b"", {"Content-Length": str(5 << 20)})
            huge = json.dumps(request(1, "ping", {"pad": "x" * (5 << 20)})).encode()
            chunked = await http_chunked(port, huge)
    assert declared == chunked == 413


@pytest.mark.anyio
async def test_sessions_past_the_cap_get_503_and_a_failed_sessions_process_is_reaped() -> None:
    init = json.dumps(request(1, "initialize", INIT)).encode()
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile(), flags=["--max-sessions", "2"]) as (port, process):
            first = await http(port, "POST", init)
            second = await http(port, "POST", init)
            sessions = [{"Mcp-Session-Id": opened[1]["mcp-session-id"]} for opened in (first, second)]
            async with anyio.create_task_group() as group:
                for number, session in enumerate(sessions):
                    await post(port, INITIALIZED, session)
                    group.start_soon(post, port, tool_call(10 + number, "slow", seconds=3), session)
                    await post(port, request(20 + number, "ping"), session)  # the slow call is in flight
                third = await http(port, "POST", init)  # both busy: refused
                assert len(children(process.pid)) == 2
            died = await post(port, tool_call(2, "die"), sessions[0])
            fourth = await http(port, "POST", init)  # the dead session's place is free again
            fifth = await http(port, "POST", init)  # the idle second session makes room
            stale = await post(port, request(3, "ping"), sessions[1])
            await until(lambda: len(children(process.pid)) <= 2, what="the ended sessions' processes reaped")
    assert (first[0], second[0], third[0], fourth[0], fifth[0]) == (200, 200, 503, 200, 200)
    assert b"--max-sessions" in third[2]
    assert died[1] is not None and died[1]["error"]["code"] == -32000
    assert stale[0] == 404


@pytest.mark.anyio
async def test_a_session_that_failed_on_the_timeout_has_its_upstream_reaped() -> None:
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile(), flags=["--timeout", "1"]) as (port, process):
            session = await open_session(port)
            [upstream] = children(process.pid)
            hung = await post(port, tool_call(2, "hang"), session)
            await exited(upstream)  # the failed session's process is ended
            after = await post(port, request(3, "ping"), session)
    assert hung[1] is not None and "did not answer tools/call within 1 s" in hung[1]["error"]["message"]
    assert after[0] == 404  # the failed session is gone


@pytest.mark.anyio
async def test_a_session_that_never_reads_its_event_stream_keeps_a_bounded_buffer() -> None:
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile()) as (port, process):
            session = await open_session(port)
            for number in range(3):  # 3 x 1,500 notifications for a buffer of 1,024, never read
                assert "result" in (await post(port, tool_call(2 + number, "flood", count=1500, size=50), session))[1]
            process.terminate()
            await process.wait()
            assert process.stderr is not None
            stderr = b"".join([chunk async for chunk in process.stderr]).decode()
    assert stderr.count("event stream is not being read: past 1024 messages the oldest are dropped") == 1


@pytest.mark.anyio
async def test_a_non_loopback_address_checks_host_and_origin_against_the_lists() -> None:
    flags = ["--allow-host", "mcp.example.test", "--allow-origin", "https://app.example.test"]
    init = json.dumps(request(1, "initialize", INIT)).encode()
    with anyio.fail_after(TIMEOUT):
        async with http_proxy(*hostile(), flags=flags, bind="0.0.0.0") as (port, _):
            allowed = await http(port, "POST", init, {"Origin": "https://app.example.test"}, host="mcp.example.test")
            wrong_host = await http(port, "POST", init, host="evil.test")
            wrong_origin = await http(port, "POST", init, {"Origin": "https://evil.test"}, host="mcp.example.test")
    assert (allowed[0], wrong_host[0], wrong_origin[0]) == (200, 421, 403)


@pytest.mark.anyio
async def test_a_non_loopback_address_without_lists_warns_once() -> None:
    port = free_port()
    command = [*PROXY, "--http", f"0.0.0.0:{port}", "--", *hostile()]
    with anyio.fail_after(TIMEOUT):
        async with await anyio.open_process(command) as process:
            assert process.stderr is not None
            warning = BufferedByteReceiveStream(process.stderr)
            row = await warning.receive_until(b"\n", 4096)
            process.terminate()
            await process.wait()
    assert b"warning: listening on 0.0.0.0" in row


@pytest.mark.anyio
async def test_serve_on_a_non_loopback_address_accepts_the_hosts_it_is_given() -> None:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "lazymcp",
        "serve",
        "--http",
        f"0.0.0.0:{port}",
        "--allow-host",
        "mcp.example.test",
    ]
    init = json.dumps(request(1, "initialize", INIT)).encode()
    with anyio.fail_after(TIMEOUT):
        async with await anyio.open_process(command, stdout=None) as process:
            await until_listening(port, process)
            allowed = await http(port, "POST", init, host="mcp.example.test")
            refused = await http(port, "POST", init, host="evil.test")
            process.terminate()
            await process.wait()
    assert (allowed[0], refused[0]) == (200, 421)


# --- serve over stdio: every id is answered ---------------------------------------------------------


@pytest.mark.parametrize("request_id", [None, True, 1.5, [1], {"a": 1}])
def test_serve_answers_a_request_whatever_its_id(request_id: object) -> None:
    command = [sys.executable, "-m", "lazymcp", "serve"]
    done = piped(
        command, [request(0, "initialize", INIT), INITIALIZED, request(request_id, "tools/list"), request(2, "ping")]
    )
    answers = [json.loads(row) for row in done.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [0, None, 2]
    assert answers[1]["error"]["code"] == -32600


def test_serve_answers_every_request_read_before_the_end_of_input() -> None:
    script = [
        request(0, "initialize", INIT),
        INITIALIZED,
        request(1, "tools/list"),
        tool_call(2, "issues_get", issue_id="X-1"),
        request(3, "ping"),
    ]
    for _ in range(3):
        done = piped([sys.executable, "-m", "lazymcp", "serve"], script)
        assert done.returncode == 0
        assert ids_of(done.stdout) == [0, 1, 2, 3]


@pytest.mark.anyio
async def test_serve_does_not_read_a_client_that_never_reads_its_answers(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    big = [{"name": f"tool_{n}", "description": "d" * 400, "inputSchema": {"type": "object"}} for n in range(500)]
    catalog.write_text(json.dumps(big))
    command = [sys.executable, "-m", "lazymcp", "serve", "--catalog", str(catalog), "--mode", "eager"]
    with anyio.fail_after(TIMEOUT * 2):
        async with peer(command) as client:
            await client.handshake()
            assert client.process.stdin is not None
            written = 0
            with anyio.move_on_after(5):  # serve stops reading: the writes block
                while written < 20_000:
                    await client.process.stdin.send(b"".join(frame(request(10 + n, "tools/list")) for n in range(10)))
                    written += 10
            peak = rss_kib(client.process.pid)
            client.process.kill()
    # Bounded, serve reads ~2,000 of them (64 unanswered and a pipe's worth); unbounded it read ~14,000
    # in the same 5 s, its memory growing with every answer (~250 kB each) it could not write.
    assert written < 4_000
    assert peak < 200_000
