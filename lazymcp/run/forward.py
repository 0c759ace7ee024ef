"""A request of a session another instance owns, sent on to that owner (``lazymcp.run.cluster``): a POST
or a DELETE answered with the owner's answer, a GET with the owner's event stream relayed as it comes.

Only what the owner needs goes with it: the session id, the protocol version, the token, Host and
Origin (checked again there), the content headers, ``Last-Event-ID``, and ``FORWARDED_HEADER``, which
keeps the owner from sending it on again. Every wait has an end: connecting to the owner
(``CONNECT_WAIT``), its answer (the front's own bound on a request), each piece of an event stream
(``STREAM_WAIT``, well past the owner's keep-alive pings). An owner that cannot be reached, or that
drops the connection before answering, is taken for dead: the client gets 404, and starts a new
session as the transport says.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import httpx2
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.limits import Limits
from lazymcp.run.http_checks import disconnected, error_response, read_body
from lazymcp.run.peer_http import KEEP_ALIVE, PeerPool, PeerTimeout, PeerUnreachable

FORWARDED_HEADER = "lazymcp-forwarded-by"
"""Set on a forwarded request (the id of the instance that sent it on): its receiver answers it itself."""
CONNECT_WAIT = 1.0
"""Seconds to connect to an owner: past it the owner counts as dead."""
STREAM_WAIT = 60.0
"""Seconds a forwarded event stream may bring nothing (the owner pings every 15)."""
ANSWER_GRACE = 10.0
"""Seconds past the front's own bound on a request that a forwarded one waits for its owner."""
PASSED_ON = ("host", "authorization", "content-type", "accept", "origin", "last-event-id")
PASSED_BACK = ("content-type", "mcp-session-id", "retry-after", "www-authenticate", "cache-control")
WATCH_AFTER = 2.0
"""Seconds a forwarded request waits before its owner's liveness is checked."""
WATCH_EVERY = 1.0
"""Seconds between two checks of a waiting forwarded request's owner (a heartbeat)."""
T = TypeVar("T")
MAX_CONNECTIONS = 256
"""Connections to peers at once, over all of them (each a forwarded request or event stream)."""


@dataclass(frozen=True, slots=True)
class Owner:
    """The instance that owns a session: its id, its address, a hash of the session's principal."""

    instance: str
    address: str
    principal: str


class _Waiting:
    """A forwarded request waiting for its owner's answer in the request's own task, stopped early when
    the client leaves or the owner stops writing its sessions. The common case, an answer within
    milliseconds, costs one task (the watch on the client) and one timer, not a task per wait."""

    def __init__(self, request: Request, alive: Callable[[], Awaitable[bool]]) -> None:
        self.request = request
        self.alive = alive
        self.stopped: str | None = None
        """Why the wait ended early: ``left`` (the client) or ``dead`` (the owner); None: it did not."""
        self._task: asyncio.Task[object] | None = None
        self._settled = False

    def _stop(self, reason: str) -> None:
        if self._settled or self.stopped is not None or self._task is None:
            return
        self.stopped = reason
        self._task.cancel()

    async def _watch_owner(self) -> None:
        """From ``WATCH_AFTER`` seconds on, asks every ``WATCH_EVERY`` whether the owner still writes its
        sessions: a request answered sooner costs Redis nothing."""
        while True:
            if not await self.alive():
                self._stop("dead")
                return
            await asyncio.sleep(WATCH_EVERY)

    async def run(self, exchange: Awaitable[T]) -> T | None:
        """What ``exchange`` returns; None when stopped early (``stopped`` says why)."""
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        left = asyncio.ensure_future(disconnected(self.request))
        left.add_done_callback(lambda done: None if done.cancelled() else self._stop("left"))
        watching: list[asyncio.Task[None]] = []
        timer = loop.call_later(WATCH_AFTER, lambda: watching.append(asyncio.ensure_future(self._watch_owner())))
        try:
            return await exchange
        except asyncio.CancelledError:
            if self.stopped is None or self._task is None:
                raise
            self._task.uncancel()
            return None
        finally:
            self._settled = True
            timer.cancel()
            left.cancel()
            for task in watching:
                task.cancel()


def _passed_back(headers: Mapping[str, str]) -> dict[str, str]:
    """What of the owner's answer headers the client gets (``PASSED_BACK``)."""
    return {name: headers[name] for name in PASSED_BACK if name in headers}


def gone(request_id: object = None) -> Response:
    """The answer for a session whose owner cannot be reached."""
    return error_response(request_id, 404, "Session not found: the instance that held it is gone; initialize again")


class Forwarder:
    """Requests sent on to their sessions' owners, over connections kept open to them."""

    def __init__(self, instance: str) -> None:
        self.instance = instance
        limits = httpx2.Limits(
            max_connections=MAX_CONNECTIONS, max_keepalive_connections=64, keepalive_expiry=KEEP_ALIVE
        )
        timeout = httpx2.Timeout(STREAM_WAIT, connect=CONNECT_WAIT)
        self.client = httpx2.AsyncClient(limits=limits, timeout=timeout, trust_env=False)
        """Event streams' connections."""
        self.peers = PeerPool()
        """POSTs' and DELETEs' connections: the hop every forwarded request pays, kept lean."""

    async def aclose(self) -> None:
        self.peers.close()
        await self.client.aclose()

    def _headers(self, request: Request) -> dict[str, str]:
        headers = {name: request.headers[name] for name in PASSED_ON if name in request.headers}
        headers |= {name: value for name, value in request.headers.items() if name.startswith("mcp-")}
        headers[FORWARDED_HEADER] = self.instance
        return headers

    async def forward(
        self, request: Request, owner: Owner, limits: Limits, alive: Callable[[], Awaitable[bool]]
    ) -> Response:
        """The owner's answer; 404 when it cannot be reached, or stops writing its sessions (``alive``
        says no) while this request waits for it."""
        url = f"{owner.address}/mcp"
        if request.method == "GET":
            return await self._stream(request, url)
        body = b""
        if request.method == "POST":
            read = await read_body(request, limits.max_body)
            if isinstance(read, Response):
                return read
            body = read
        exchange = self.peers.request(
            owner.address,
            request.method,
            "/mcp",
            list(self._headers(request).items()),
            body,
            connect_wait=CONNECT_WAIT,
            answer_wait=limits.wait + ANSWER_GRACE,
        )
        waiting = _Waiting(request, alive)
        try:
            answer = await waiting.run(exchange)
        except PeerTimeout:
            text = "Request timed out: the session's instance did not answer"
            return error_response(None, 504, text, code=ErrorCode.REQUEST_TIMEOUT)
        except PeerUnreachable:  # refused, reset, or closed before answering
            return gone()
        if answer is None:  # the client left (the owner then cancels it), or the owner died meanwhile
            return Response(status_code=499) if waiting.stopped == "left" else gone()
        headers = _passed_back(answer.headers)
        return Response(answer.body, status_code=answer.status, headers=headers)

    async def _stream(self, request: Request, url: str) -> Response:
        outgoing = self.client.build_request("GET", url, headers=self._headers(request))
        try:
            upstream = await self.client.send(outgoing, stream=True)
        except httpx2.HTTPError:
            return gone()
        if upstream.status_code != 200:
            try:
                content = await upstream.aread()
            except httpx2.HTTPError:
                return gone()
            finally:
                await upstream.aclose()
            headers = _passed_back(upstream.headers)
            return Response(content, status_code=upstream.status_code, headers=headers)

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            except httpx2.HTTPError:
                return  # the owner went away: the stream ends, and the client's next request gets 404
            finally:
                await upstream.aclose()

        headers = _passed_back(upstream.headers)
        headers.setdefault("cache-control", "no-store")
        return StreamingResponse(relay(), headers={**headers, "x-accel-buffering": "no"})
