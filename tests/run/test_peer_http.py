"""The hop of a forwarded request (``lazymcp.run.peer_http``) read from a fake peer (a stream fed the
bytes a peer would write), and the front's gathered writes (``lazymcp.run.http_writes``) on a fake
transport: each framing an owner's front may use, and each answer that is not one refused as a peer that
cannot be reached, never a hang or a traceback; and a forwarded request's wait (``lazymcp.run.forward``),
ended by the client leaving or the owner dying, and by nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazymcp.run.http_writes import _GatheredWrites  # pyright: ignore[reportPrivateUsage]
from lazymcp.run.peer_http import MAX_ANSWER, READ_SIZE, PeerUnreachable, read_answer, request_head


def peer(data: bytes, *, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=READ_SIZE)
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


@pytest.mark.anyio
async def test_an_answer_framed_by_its_length_is_read_whole_and_leaves_the_connection_reusable() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nWWW-Authenticate: a\r\nwww-authenticate: b\r\n"
    reader = peer(head + b"content-length: %d\r\n\r\n" % len(body) + body + b"HTTP/1.1 2", eof=False)
    answer, reusable = await read_answer(reader)
    assert (answer.status, answer.body, reusable) == (200, body, True)
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["www-authenticate"] == "a, b"  # a repeated field's values, joined
    assert await reader.readexactly(10) == b"HTTP/1.1 2"  # nothing past the answer was read


@pytest.mark.anyio
async def test_a_chunked_answer_is_read_whole() -> None:
    reader = peer(
        b"HTTP/1.1 202 Accepted\r\ntransfer-encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nt: 1\r\n\r\n"
    )
    answer, reusable = await read_answer(reader)
    assert (answer.status, answer.body, reusable) == (202, b"hello!", True)


@pytest.mark.anyio
async def test_an_answer_that_closes_its_connection_is_not_reused() -> None:
    answer, reusable = await read_answer(
        peer(b"HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
    )
    assert (answer.status, answer.body, reusable) == (404, b"", False)
    answer, reusable = await read_answer(peer(b"HTTP/1.1 200 OK\r\n\r\nto the end"))
    assert (answer.body, reusable) == (b"to the end", False)


@pytest.mark.parametrize(
    "data",
    [
        b"",  # closed before answering
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort",  # closed mid-body
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n spaced : x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % (MAX_ANSWER + 1),
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nx: " + b"a" * (READ_SIZE + 10) + b"\r\n\r\n",  # a head past its bound
    ],
)
@pytest.mark.anyio
async def test_what_is_not_a_whole_answer_is_a_peer_that_cannot_be_reached(data: bytes) -> None:
    with pytest.raises((PeerUnreachable, asyncio.IncompleteReadError, asyncio.LimitOverrunError)):
        await asyncio.wait_for(read_answer(peer(data)), 10)


def test_a_request_is_written_in_one_piece_and_no_field_can_smuggle_another() -> None:
    head = request_head("POST", "/mcp", [("host", "a:1"), ("mcp-session-id", "s")])
    assert head == b"POST /mcp HTTP/1.1\r\nhost: a:1\r\nmcp-session-id: s\r\n\r\n"
    for name, value in (("x", "a\r\nevil: 1"), ("x", "a\nb"), ("x\r\ny", "1"), ("x:y", "1")):
        with pytest.raises(ValueError):
            request_head("POST", "/mcp", [(name, value)])


class Recording:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> Any:
        return f"info {name}"


@pytest.mark.anyio
async def test_what_one_step_writes_goes_out_in_one_write_in_order() -> None:
    real = Recording()
    gathered = _GatheredWrites(real)  # pyright: ignore[reportArgumentType]
    gathered.write(b"HTTP/1.1 200 OK\r\n\r\n")
    gathered.write(b"")
    gathered.write(b"body")
    assert real.writes == []  # held until the step ends
    await asyncio.sleep(0)
    assert real.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    gathered.write(b"event 1")
    await asyncio.sleep(0)
    gathered.write(b"event 2")
    await asyncio.sleep(0)
    assert real.writes[1:] == [b"event 1", b"event 2"]  # an event stream's events go as they come
    gathered.write(b"last")
    gathered.close()  # closing sends what was held first
    assert real.writes[-1] == b"last" and real.closed
    assert gathered.get_extra_info("peername") == "info peername"


@pytest.mark.anyio
async def test_a_forwarded_wait_ends_when_the_client_leaves_or_the_owner_dies_and_not_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from starlette.requests import Request

    from lazymcp.run import forward

    monkeypatch.setattr(forward, "WATCH_AFTER", 0.05)
    monkeypatch.setattr(forward, "WATCH_EVERY", 0.05)
    checks: list[bool] = []

    def request(leaves: bool) -> Request:
        async def receive() -> dict[str, Any]:
            if not leaves:
                await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        return Request({"type": "http", "method": "POST", "headers": []}, receive)

    def owner(dies_after: int) -> Any:
        async def alive() -> bool:
            checks.append(True)
            return len(checks) < dies_after

        return alive

    async def answer(after: float) -> str:
        await asyncio.sleep(after)
        return "answer"

    async def never() -> str:
        await asyncio.Event().wait()
        return "never"

    quick = forward._Waiting(request(leaves=False), owner(10**6))  # pyright: ignore[reportPrivateUsage]
    assert await asyncio.wait_for(quick.run(answer(0.0)), 10) == "answer" and quick.stopped is None
    assert checks == []  # answered within WATCH_AFTER: the owner was never asked about
    slow = forward._Waiting(request(leaves=False), owner(10**6))  # pyright: ignore[reportPrivateUsage]
    assert await asyncio.wait_for(slow.run(answer(0.3)), 10) == "answer" and checks  # alive all along
    checks.clear()
    left = forward._Waiting(request(leaves=True), owner(10**6))  # pyright: ignore[reportPrivateUsage]
    assert await asyncio.wait_for(left.run(never()), 10) is None and left.stopped == "left"
    dead = forward._Waiting(request(leaves=False), owner(3))  # pyright: ignore[reportPrivateUsage]
    assert await asyncio.wait_for(dead.run(never()), 10) is None and dead.stopped == "dead"
    assert len(checks) == 3
    assert asyncio.current_task() is not None and not asyncio.current_task().cancelling()  # pyright: ignore[reportOptionalMemberAccess]
