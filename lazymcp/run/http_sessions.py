"""One session of the HTTP front: a ``Driver`` whose answers are matched to the POSTs waiting for them,
and whose other messages go to the session's event streams (its GET stream, its 2026 listen streams).

Sessions are sealed: every id, cancellation, progress token and notification is mapped within one
session, and nothing one session sends can name another's request. Each event stream keeps at most
``event_buffer`` unread messages, dropping the oldest.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast
from uuid import uuid4

from starlette.responses import Response

from lazymcp.core.actions import Called
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.bridge import SUBSCRIPTION_ID_KEY
from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.protocol.limits import MAX_UNANSWERED, DropOldest, Limits
from lazymcp.run.driver import UNANSWERED, Driver, FrameSink
from lazymcp.run.http_checks import SESSION_HEADER, error_response

if TYPE_CHECKING:
    from starlette.requests import Request


def session_hash(session_id: str) -> str:
    """What the audit names a session by: a hash of its id, stable across instances, that does not let a
    reader of the audit use the session."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:16]


class HttpSession:
    """One session of HTTP clients behind one driver: answers matched to the POSTs waiting for them."""

    def __init__(self, driver: Callable[[FrameSink], Driver], *, remap_ids: bool, limits: Limits) -> None:
        self.driver = driver(self._to_client)
        self.held: set[str] = set()
        """Why the session takes no new messages now (``Driver.on_hold``): a POST gets 503 meanwhile."""
        self.driver.on_hold = lambda reason, held: (self.held.add if held else self.held.discard)(reason)
        self.remap_ids = remap_ids
        """2026 requests: each gets an id of the session's own on the way in, its own back on the way out."""
        self.limits = limits
        self.waiting: dict[tuple[str, object], asyncio.Future[Frame]] = {}
        self.events: DropOldest[Frame] = DropOldest(limits.event_buffer, self._dropping)
        self.listens: dict[object, DropOldest[Frame]] = {}
        self.last_seen = asyncio.get_running_loop().time()
        self.principal: object = None
        """Who opened it (``lazymcp.access.policy.Principal``: a bearer token's name, or an OAuth token's client,
        issuer, subject and scopes); only they may use it."""
        self.grant: object = None
        """What its principal's latest credentials are granted (``lazymcp.run.http_grants``); None: all."""
        self.streams = 0
        """Event streams open on this session (GET, listen): a session with one is busy."""
        self._ids = itertools.count(1)
        self.session_hash: str | None = None
        """A stable hash of its ``Mcp-Session-Id`` (``session_hash``), for the audit; None for 2026 requests."""
        self.related: dict[tuple[str, object], DropOldest[Frame]] = {}
        """The progress of requests answered on their own POST's event stream (``http_answers``), by the
        progress token the core sees; any other goes to the GET stream."""
        self.calls: dict[tuple[str, object], tuple[object, str | None]] = {}
        """``tools/call`` requests waiting, by the id the core sees: the client's own id and its address."""
        self.driver.on_called = self._reported

    def _reported(self, call: Called) -> Called:
        """A call's report, with this session, and the client's id and address."""
        original, address = self.calls.get(jsonrpc.id_key(call.request_id), (call.request_id, None))
        return replace(call, request_id=original, session=self.session_hash, address=address)

    def _dropping(self) -> None:
        size = self.limits.event_buffer
        self.driver.say(f"a session's event stream is not being read: past {size} messages the oldest are dropped")

    def _to_client(self, frame: Frame) -> None:
        if frame.is_answer:
            waiter = self.waiting.pop(jsonrpc.id_key(frame.id), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(frame)
            return  # an answer nobody waits for (cancelled, timed out) has no stream to go to
        if frame.message.get("method") == "notifications/progress" and self.related:
            params = frame.message.get("params")
            token = cast(dict[str, object], params).get("progressToken") if isinstance(params, dict) else None
            related = self.related.get(jsonrpc.id_key(token))
            if related is not None:
                related.put(frame)
                return
        stream = self.listens.get(jsonrpc.params_meta(frame.message).get(SUBSCRIPTION_ID_KEY))
        (stream if stream is not None else self.events).put(frame)

    def follow(self, token: object) -> DropOldest[Frame]:
        """Keep the progress on ``token`` for its request's own stream, at most ``event_buffer`` unread."""
        related = self.related[jsonrpc.id_key(token)] = DropOldest(self.limits.event_buffer, self._dropping)
        return related

    def next_id(self) -> int:
        return next(self._ids)

    def cancel(self, key: object, reason: str) -> None:
        """The client gave up on a request: the server is told, and its answer will be dropped."""
        if self.waiting.pop(jsonrpc.id_key(key), None) is not None:
            notice = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": key, "reason": reason},
            }
            self.driver.from_client(Frame(notice))

    async def close(self, reason: str) -> None:
        """End the session: every POST still waiting gets an error, and the servers are reaped."""
        self.driver.interrupt(reason, 0)
        for key, waiter in list(self.waiting.items()):
            if not waiter.done():
                error = jsonrpc.error_message(key[1], ErrorCode.UPSTREAM_ERROR, f"Session ended: {reason}")
                waiter.set_result(Frame(error))
        self.waiting.clear()
        await self.driver.close()


def busy(request_id: object, held: set[str]) -> Response:
    """The 503 a POST gets while its session is held: why, and when to try again."""
    unanswered = f"{MAX_UNANSWERED} requests wait for answers"
    why = sorted(unanswered if reason == UNANSWERED else f"{reason} is not reading" for reason in held)
    response = error_response(request_id, 503, f"Server busy: {'; '.join(why)}", code=ErrorCode.INTERNAL_ERROR)
    response.headers["Retry-After"] = "1"
    return response


class StreamOwner(Protocol):
    """What an event stream counts itself on: a session is busy while it has one open."""

    streams: int


Listen = tuple[asyncio.Future[Frame], object, object, HttpSession]
"""A listen stream: the waiter for its final answer, its id in the session, the client's id, its session."""


def _text(frame: Frame) -> str | None:
    line = jsonrpc.line_of(frame)
    return None if line is None else line.decode()


def event_stream(queue: DropOldest[Frame], listen: Listen | None, side: StreamOwner) -> Response:
    """An SSE response: the queue's messages, until the client leaves (or a listen stream ends)."""
    from sse_starlette.sse import EventSourceResponse

    async def events() -> AsyncIterator[dict[str, str]]:
        side.streams += 1
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                waits: set[asyncio.Future[Any]] = {getter}
                if listen is not None:
                    waits.add(listen[0])
                done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    data = _text(_restore(getter.result(), listen))
                    if data is not None:
                        yield {"event": "message", "data": data}
                else:
                    getter.cancel()
                if listen is not None and listen[0].done():
                    if not listen[0].cancelled():
                        data = _text(listen[0].result().changed(id=listen[2]))
                        if data is not None:
                            yield {"event": "message", "data": data}
                    return
        finally:
            side.streams -= 1
            if listen is not None:
                listen[3].listens.pop(listen[1], None)
                listen[3].cancel(listen[1], "the client closed its listen stream")

    return EventSourceResponse(events())


def _restore(frame: Frame, listen: Listen | None) -> Frame:
    """Put the client's own id back on a listen stream's frames."""
    if listen is None:
        return frame
    _, key, original, _ = listen
    meta = jsonrpc.params_meta(frame.message)
    if meta.get(SUBSCRIPTION_ID_KEY) == key:
        params = cast(dict[str, object], frame.message["params"])
        return frame.changed(params={**params, "_meta": {**meta, SUBSCRIPTION_ID_KEY: original}})
    return frame


S = TypeVar("S")


def session_of(sessions: Mapping[str, S], request: Request, message: jsonrpc.Message) -> S | Response:
    """The session a request names (``Mcp-Session-Id``), or the 404 that says it has none."""
    found = sessions.get(request.headers.get(SESSION_HEADER, ""))
    return found if found is not None else error_response(message.get("id"), 404, "Session not found: initialize first")


def new_session(sessions: dict[str, S], side: S, headers: dict[str, str]) -> S:
    """Keep ``side`` under a new ``Mcp-Session-Id``, which the response's ``headers`` then name."""
    session_id = uuid4().hex
    sessions[session_id] = side
    headers[SESSION_HEADER] = session_id
    return side
