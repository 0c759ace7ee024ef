"""How the HTTP front answers a POSTed request: as JSON, or as an event stream of its progress, then its answer.

A request that asks for progress (``_meta.progressToken``) from a client that takes event streams
(``Accept: text/event-stream``) has its progress kept for its own POST (``HttpSession.follow``). The answer
comes first: plain JSON. Progress first: the POST is answered with an event stream (as the 2025-11-25
streamable HTTP transport allows), the request's progress notifications as they come, then its answer,
and the stream ends. Progress sent on the session's GET stream could be overtaken there by the answer
on the POST, and a client would count too few; on one stream they keep their order.

Bounds: the answer is waited for at most the timeout (``Limits.wait``, plus ``ANSWER_GRACE`` so the core's
own timeout answers first), streamed or not; the progress not yet read keeps at most ``event_buffer``
messages, dropping the oldest; each write to a stream may take at most ``SEND_SECONDS``, past which the
client is taken to have stopped reading and the request is cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response

from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.protocol.limits import DropOldest
from lazymcp.run import observe
from lazymcp.run.http_checks import disconnected, retry_after
from lazymcp.run.http_sessions import HttpSession

ANSWER_GRACE = 5.0
"""Seconds past the timeout a POST waits, so the core's own timeout answers it first."""
SEND_SECONDS = 30.0
"""The longest one write to a request's event stream may take before the client counts as gone."""


@dataclass(frozen=True, slots=True)
class Waiting:
    """A request sent to the core, as its POST waits for the answer."""

    side: HttpSession
    key: object
    """Its id in the session (the core's)."""
    original: object
    """The client's own id."""
    method: str
    waiter: asyncio.Future[Frame]
    seconds: float
    """How long the answer is waited for, at most."""
    token: object = None
    """The progress token the core sees (None: no progress asked for)."""
    client_token: object = None
    """The client's own progress token."""
    related: DropOldest[Frame] | None = None
    """Its progress, kept for its own POST (``HttpSession.follow``); None: it goes to the GET stream."""

    def answer(self, frame: Frame) -> Frame:
        return frame.changed(id=self.original) if self.side.remap_ids else frame

    def progress(self, frame: Frame) -> Frame:
        if not self.side.remap_ids:
            return frame
        params = cast(dict[str, object], frame.message["params"])
        return frame.changed(params={**params, "progressToken": self.client_token})

    def timed_out(self, reason: str) -> Frame:
        self.side.cancel(self.key, reason)
        self.waiter.cancel()
        text = f"Request timed out: {reason}"
        return Frame(jsonrpc.error_message(self.original, ErrorCode.REQUEST_TIMEOUT, text))

    def done(self) -> None:
        """Forget what the session keeps for this request."""
        self.side.calls.pop(jsonrpc.id_key(self.key), None)
        key = jsonrpc.id_key(self.token)
        if self.related is not None and self.side.related.get(key) is self.related:  # not a reused token's
            del self.side.related[key]


def takes_events(request: Request) -> bool:
    """Whether the client takes an event stream for its POST: its progress is then kept for it
    (``HttpSession.follow``, before the request goes to the core)."""
    return "text/event-stream" in request.headers.get("accept", "").lower()


async def answered(request: Request, waiting: Waiting, headers: dict[str, str]) -> Response:
    """The POST's response: JSON unless the request's progress came before its answer (module docstring)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + waiting.seconds
    related = waiting.related
    first = asyncio.ensure_future(related.get()) if related is not None else None
    gone = asyncio.ensure_future(disconnected(request))
    waits: set[asyncio.Future[Any]] = {waiting.waiter, gone, *([first] if first is not None else [])}
    try:
        await asyncio.wait(waits, timeout=waiting.seconds, return_when=asyncio.FIRST_COMPLETED)
        left = gone.done()  # the client closed its request
    finally:
        gone.cancel()
        if first is not None and not first.done():  # nothing taken: none lost
            first.cancel()
    if first is not None and related is not None and first.done() and not first.cancelled() and not left:
        return _streamed(waiting, related, first.result(), deadline, headers)
    waiting.done()
    if not waiting.waiter.done():
        reason = "the client closed its request" if left else "no answer within the timeout"
        answer = waiting.timed_out(reason)
        if left:
            return Response(status_code=499)
    else:
        answer = waiting.answer(waiting.waiter.result())
    return _json(waiting, answer, headers)


def _json(waiting: Waiting, answer: Frame, headers: dict[str, str]) -> Response:
    body = _line(waiting, answer)
    observe.requested(waiting.method, "error" if "error" in answer.message else "ok")
    retry = retry_after(answer)
    if retry is not None:  # a rate limit: the error, with the status and header HTTP clients know
        return Response(body, 429, {**headers, "Retry-After": retry}, media_type="application/json")
    return Response(body, media_type="application/json", headers=headers)


def _line(waiting: Waiting, frame: Frame) -> bytes:
    line = jsonrpc.line_of(frame)
    if line is None:
        return jsonrpc.encode(jsonrpc.error_message(waiting.original, ErrorCode.INTERNAL_ERROR, "Internal error"))
    return line


def _streamed(
    waiting: Waiting, related: DropOldest[Frame], first: Frame, deadline: float, headers: dict[str, str]
) -> Response:
    """The request's progress, then its answer, on the POST's own event stream."""
    from sse_starlette.sse import EventSourceResponse

    loop = asyncio.get_running_loop()

    def event(frame: Frame) -> dict[str, str]:
        return {"event": "message", "data": _line(waiting, frame).decode()}

    async def events() -> AsyncIterator[dict[str, str]]:
        waiting.side.streams += 1
        try:
            yield event(waiting.progress(first))
            while True:
                while len(related):  # what came before the answer goes before it
                    yield event(waiting.progress(await related.get()))
                if waiting.waiter.done():
                    answer = waiting.answer(waiting.waiter.result())
                    break
                left = deadline - loop.time()
                if left <= 0:
                    answer = waiting.timed_out("no answer within the timeout")
                    break
                getter = asyncio.ensure_future(related.get())
                try:
                    await asyncio.wait({getter, waiting.waiter}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not getter.done():  # nothing taken: none lost
                        getter.cancel()
                if getter.done() and not getter.cancelled():
                    yield event(waiting.progress(getter.result()))
            observe.requested(waiting.method, "error" if "error" in answer.message else "ok")
            yield event(answer)
        finally:
            waiting.side.streams -= 1
            waiting.done()
            if not waiting.waiter.done():  # the client left, or stopped reading: the server is told
                waiting.side.cancel(waiting.key, "the client closed its request")
                waiting.waiter.cancel()

    return EventSourceResponse(events(), headers=headers, send_timeout=SEND_SECONDS)
