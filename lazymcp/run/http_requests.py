"""The requests and notifications of one ``/mcp`` POST, once its session is known (``lazymcp.run.http_front``):
a request's id (and progress token) made unique on the way up when its session is shared by several
clients, its answer awaited with a bound, and a 2026 ``subscriptions/listen`` answered with its stream."""

from __future__ import annotations

import asyncio
from typing import cast

from starlette.requests import Request
from starlette.responses import Response

from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.protocol.limits import DropOldest, Limits
from lazymcp.run.http_answers import ANSWER_GRACE, Waiting, answered, takes_events
from lazymcp.run.http_checks import error_response
from lazymcp.run.http_sessions import HttpSession, event_stream


def notify(side: HttpSession, frame: Frame) -> Response:
    """A client notification, or its answer to a server's request: passed on, answered 202 (a 2025
    ``notifications/cancelled`` also ends the POST of the request it names)."""
    message = frame.message
    if message.get("method") == "notifications/cancelled":
        if side.remap_ids:
            return Response(status_code=202)  # it could name any client's request: close the POST instead
        cancelled = jsonrpc.field(message.get("params"), "requestId")
        waiter = side.waiting.pop(jsonrpc.id_key(cancelled), None)  # the id is free again
        if waiter is not None and not waiter.done():  # the POST still waiting gets its end
            error = jsonrpc.error_message(cancelled, ErrorCode.REQUEST_CANCELLED, "Request cancelled")
            waiter.set_result(Frame(error))
    side.driver.from_client(frame)
    return Response(status_code=202)


async def answer(
    request: Request, side: HttpSession, frame: Frame, headers: dict[str, str], limits: Limits
) -> Response:
    """A client request: passed to its session, and answered with what the session answers
    (``lazymcp.run.http_answers``: JSON, or an event stream of its progress and then its answer; bounded by the
    timeout; 499 when the client closed its request first, 429 with ``Retry-After`` for a rate limit)."""
    message = frame.message
    method = message["method"]
    original = message["id"]
    client_token = jsonrpc.params_meta(message).get("progressToken")
    token = client_token
    if side.remap_ids:
        key: object = side.next_id()
        message = {**message, "id": key}
        meta = jsonrpc.params_meta(message)
        if "progressToken" in meta:  # unique upstream too: another client may use the same token
            params = cast(dict[str, object], message["params"])
            token = f"{key}"
            message["params"] = {**params, "_meta": {**meta, "progressToken": token}}
        frame = Frame(message)
    else:
        key = original
        if jsonrpc.id_key(key) in side.waiting:
            return error_response(original, 409, "Invalid request: this id is already in use by a request in flight")
    waiter: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
    side.waiting[jsonrpc.id_key(key)] = waiter
    if method == "tools/call":  # for its audit line: the client's own id and address
        side.calls[jsonrpc.id_key(key)] = (original, request.client.host if request.client else None)
    if method == "subscriptions/listen":
        side.listens[key] = DropOldest(limits.event_buffer, side._dropping)  # pyright: ignore[reportPrivateUsage]
    related = side.follow(token) if token is not None and takes_events(request) else None  # before any comes
    waiting = Waiting(side, key, original, method, waiter, limits.wait + ANSWER_GRACE, token, client_token, related)
    side.driver.from_client(frame)
    if method == "subscriptions/listen":
        return event_stream(side.listens[key], (waiter, key, original, side), side)
    return await answered(request, waiting, headers)
