"""The HTTP client side of the proxy and the gateway (``--http``): ``/mcp`` in front of their links.

``/mcp`` takes one JSON-RPC message per POST and answers a request with JSON.
- A 2025-11-25 client gets a session at ``initialize`` (``Mcp-Session-Id``), its own router and its
  own gateway core and servers (a spawned server serves one client); what the server sends outside a response
  (notifications, its requests to the client) goes on the session's GET event stream; DELETE ends it.
- 2026-07-28 requests carry everything they need, so they share one router and one upstream. Their
  ids and progress tokens are made unique on the way up and restored on the way down, since two
  clients may both use id 1; a 2026 client cancels a request by closing its POST, and a
  ``notifications/cancelled`` it posts is not forwarded, since it could name another client's request.
  A ``subscriptions/listen`` request is answered with an event stream of its subscription.

Sessions are sealed: every id, cancellation, progress token and notification is mapped within one
session, and nothing one session sends can name another's request.

Limits (``lazymcp.limits``): at most ``max_sessions`` sessions (each a process) at once: at the cap a
new session takes the place of the least recently used one with nothing in flight, and when every one
is busy ``initialize`` gets 503; a body of at most ``max_body`` bytes (413); a POST waits at most the timeout
for its answer; each event stream keeps at most ``event_buffer`` unread messages, dropping the oldest.
A session whose upstream failed is closed and its process reaped at once; one idle for
``IDLE_SECONDS`` is ended. Host and Origin are checked (DNS-rebinding and cross-site protection, as
the SDK's own server does): on a loopback address both must be loopback, elsewhere each must be on its
``--allow-host``/``--allow-origin`` list when one is given; a POST must be ``application/json``, since a
web page can send a ``text/plain`` POST without a CORS preflight.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast
from urllib.parse import urlsplit
from uuid import uuid4

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from lazymcp import jsonrpc
from lazymcp.addresses import LOOPBACK, is_loopback, open_front_warning
from lazymcp.bridge import SUBSCRIPTION_ID_KEY
from lazymcp.errors import ErrorCode
from lazymcp.limits import DropOldest, Limits, fix_mmap_threshold
from lazymcp.link import Link, proxy_core
from lazymcp.notices import say
from lazymcp.options import Options

if TYPE_CHECKING:
    from lazymcp.auth import Access
    from lazymcp.gateway.core import Gateway
    from lazymcp.gateway.manifest import ManifestStore

SESSION_HEADER = "mcp-session-id"
PROTOCOL_HEADER = "mcp-protocol-version"
MODERN_VERSIONS = frozenset({"2026-07-28"})
IDLE_SECONDS = 30 * 60
"""A 2025 client session with no request for this long is ended (clients often never send DELETE)."""
ANSWER_GRACE = 5.0
"""Seconds past the timeout a POST waits, so the router's own timeout answers it first."""


class HttpSession:
    """One session of HTTP clients behind one link: answers matched to the POSTs waiting for them."""

    def __init__(self, link: Callable[[Callable[[bytes], None]], Link], *, remap_ids: bool, limits: Limits) -> None:
        self.link = link(self._to_client)
        self.remap_ids = remap_ids
        self.limits = limits
        self.waiting: dict[tuple[str, object], asyncio.Future[jsonrpc.Message]] = {}
        self.events: DropOldest[bytes] = DropOldest(limits.event_buffer, self._dropping)
        self.listens: dict[object, DropOldest[bytes]] = {}
        self.last_seen = asyncio.get_running_loop().time()
        self.principal: object = None
        """Who opened it (an OAuth token's client, issuer and subject); only they may use it."""
        self.streams = 0
        """Event streams open on this session (GET, listen): a session with one is busy."""
        self._ids = itertools.count(1)

    def _dropping(self) -> None:
        size = self.limits.event_buffer
        self.link.say(f"a session's event stream is not being read: past {size} messages the oldest are dropped")

    def _to_client(self, line: bytes) -> None:
        message = jsonrpc.parse(line)
        if "method" not in message:
            waiter = self.waiting.pop(jsonrpc.id_key(message.get("id")), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message)
            return  # an answer nobody waits for (cancelled, timed out) has no stream to go to
        stream = self.listens.get(jsonrpc.params_meta(message).get(SUBSCRIPTION_ID_KEY))
        (stream if stream is not None else self.events).put(line)

    def next_id(self) -> int:
        return next(self._ids)

    def cancel(self, key: object, reason: str) -> None:
        """The client gave up on a request: the upstream is told, and its answer will be dropped."""
        if self.waiting.pop(jsonrpc.id_key(key), None) is not None:
            notice = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": key, "reason": reason},
            }
            self.link.from_client(jsonrpc.encode(notice), notice)

    async def close(self, reason: str) -> None:
        """End the session: every POST still waiting gets an error, and the upstream is reaped."""
        self.link.interrupt(reason, 0)
        for key, waiter in list(self.waiting.items()):
            if not waiter.done():
                waiter.set_result(jsonrpc.error_message(key[1], ErrorCode.UPSTREAM_ERROR, f"Session ended: {reason}"))
        self.waiting.clear()
        await self.link.close()


class HttpFront:
    """The ``/mcp`` endpoint in front of the sessions: each a ``Link`` over a core ``make_core`` builds."""

    def __init__(
        self,
        make_core: Callable[[], Gateway],
        limits: Limits,
        host: str,
        *,
        allow_hosts: Sequence[str] = (),
        allow_origins: Sequence[str] = (),
        access: Access | None = None,
        store: ManifestStore | None = None,
        eager: bool = False,
        name: str = "proxy",
    ) -> None:
        self.make_core = make_core
        self.access = access
        """Who may come in (``lazymcp.auth``, which loads the SDK: not imported for an open front); None: anyone."""
        self.store = store
        self.eager = eager
        self.name = name
        self.limits = limits
        self.guard = Guard(host, allow_hosts, allow_origins)
        self.sessions: dict[str, HttpSession] = {}
        self.moderns: dict[object, HttpSession] = {}
        """2026-07-28 requests' sessions: one per principal (one in all without OAuth)."""
        self._modern_lock = asyncio.Lock()
        self._closing: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def stopping(self) -> None:
        """A signal arrived: answer every POST still waiting and reap the upstreams, so that the server's
        graceful shutdown finds no request in flight. Safe to call from a signal handler."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(lambda: self._closing.add(asyncio.ensure_future(self.close())))

    def app(self, routes: Sequence[BaseRoute] = ()) -> Starlette:
        @asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncGenerator[None]:
            self.loop = asyncio.get_running_loop()
            yield
            await self.close()
            if self.access is not None:
                await self.access.aclose()

        endpoint = Route("/mcp", self.endpoint, methods=["GET", "POST", "DELETE"])
        checked = self.access.routes() if self.access is not None else []
        return Starlette(routes=[endpoint, *checked, *routes], lifespan=lifespan)

    async def close(self) -> None:
        sides = [*self.sessions.values(), *self.moderns.values()]
        self.sessions.clear()
        self.moderns.clear()
        await asyncio.gather(*(side.close(f"the {self.name} is shutting down") for side in sides))
        others = self._closing - {asyncio.current_task()}
        if others:
            await asyncio.gather(*others, return_exceptions=True)

    def _reap_later(self, side: HttpSession, reason: str) -> None:
        task = asyncio.ensure_future(side.close(reason))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _tables(self) -> tuple[dict[Any, HttpSession], dict[Any, HttpSession]]:
        """The 2025 sessions (by ``Mcp-Session-Id``) and the 2026 ones (by principal)."""
        return cast(dict[Any, HttpSession], self.sessions), self.moderns

    async def _reap_idle(self) -> None:
        now = asyncio.get_running_loop().time()
        for table in self._tables():
            for key, side in list(table.items()):
                if now - side.last_seen > IDLE_SECONDS and not side.waiting and not side.streams:
                    del table[key]
                    self._reap_later(side, "the session was idle too long")

    def _make_room(self) -> bool:
        """At the cap, end the least recently used session with nothing in flight (a 2025 client, if it
        comes back, gets 404 and starts a new one, as MCP clients do; a 2026 one gets a new one at its
        next request); False when every session is busy."""
        if len(self.sessions) + len(self.moderns) < self.limits.max_sessions:
            return True
        idle = [
            (side.last_seen, table, key)
            for table in self._tables()
            for key, side in table.items()
            if not side.waiting and not side.streams
        ]
        if not idle:
            return False
        _, table, oldest = min(idle, key=lambda found: found[0])
        self._reap_later(table.pop(oldest), f"the {self.name} needed its place for a new session")
        return True

    async def _open(self, *, remap_ids: bool) -> HttpSession | Response:
        if not self._make_room():
            limit = self.limits.max_sessions
            return error_response(
                None, 503, f"Too many sessions: the {self.name} serves at most {limit} busy ones (--max-sessions)"
            )
        side = HttpSession(
            lambda sink: Link(self.make_core(), sink, store=self.store), remap_ids=remap_ids, limits=self.limits
        )
        try:
            await side.link.start(self.eager)
        except Exception as exc:  # a bug must cost one session, never the front
            side.link.fail(f"internal error starting a session: {exc!r}")
        if side.link.done.done():
            message = side.link.failure or "the session ended"
            await side.link.close()
            return error_response(None, 502, f"Upstream unavailable: {message}", code=ErrorCode.UPSTREAM_ERROR)
        side.link.done.add_done_callback(lambda _: self._ended(side))
        return side

    def _ended(self, side: HttpSession) -> None:
        """A session whose upstream failed: forget it and reap its process now."""
        for session_id, known in list(self.sessions.items()):
            if known is side:
                del self.sessions[session_id]
        for principal, known in list(self.moderns.items()):
            if known is side:
                del self.moderns[principal]
        self._reap_later(side, side.link.failure or "the session ended")

    async def endpoint(self, request: Request) -> Response:
        refused = await self.access.check(request) if self.access is not None else None
        refused = refused or self.guard.check(request)
        if refused is not None:
            return refused
        await self._reap_idle()
        if request.method == "POST":
            return refuse_non_json(request) or await self._post(request)
        side = self.sessions.get(request.headers.get(SESSION_HEADER, ""))
        if side is None or side.principal != principal_of(request):
            return Response("Unknown or missing session", status_code=404 if request.method == "DELETE" else 405)
        if request.method == "DELETE":
            del self.sessions[request.headers[SESSION_HEADER]]
            await side.close("the client ended the session")
            return Response(status_code=200)
        return event_stream(side.events, None, side)

    async def _body(self, request: Request) -> bytes | Response:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.limits.max_body:
            return Response("Request body too large", status_code=413)
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.limits.max_body:
                return Response("Request body too large", status_code=413)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _post(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        try:
            message = jsonrpc.parse(body)
        except jsonrpc.NotJSONRPC:
            return error_response(None, 400, "Parse error: not a JSON-RPC message", code=ErrorCode.PARSE_ERROR)
        invalid = _invalid(message)
        if invalid is not None:
            return error_response(None, 400, f"Invalid request: {invalid}")
        method = message.get("method")
        modern = request.headers.get(PROTOCOL_HEADER) in MODERN_VERSIONS
        headers: dict[str, str] = {}
        principal = principal_of(request)
        if modern:
            async with self._modern_lock:
                side = self.moderns.get(principal)
                if side is None or side.link.done.done():
                    opened = await self._open(remap_ids=True)
                    if isinstance(opened, Response):
                        return opened
                    side = self.moderns[principal] = opened
                    side.principal = principal
        elif method == "initialize":
            opened = await self._open(remap_ids=False)
            if isinstance(opened, Response):
                return opened
            side = new_session(self.sessions, opened, headers)
            side.principal = principal
        else:
            found = session_of(self.sessions, request, message)
            if isinstance(found, Response):
                return found
            if found.principal != principal:  # another principal's session: as if there were none
                return error_response(message.get("id"), 404, "Session not found: initialize first")
            side = found
        side.last_seen = asyncio.get_running_loop().time()
        if method is None or "id" not in message:  # a notification, or the client's answer to the server
            return self._notify(side, message, body)
        return await self._request(request, side, message, body, headers)

    def _notify(self, side: HttpSession, message: jsonrpc.Message, body: bytes) -> Response:
        if message.get("method") == "notifications/cancelled":
            if side.remap_ids:
                return Response(status_code=202)  # it could name any client's request: close the POST instead
            cancelled = jsonrpc.field(message.get("params"), "requestId")
            waiter = side.waiting.pop(jsonrpc.id_key(cancelled), None)  # the id is free again
            if waiter is not None and not waiter.done():  # the POST still waiting gets its end
                waiter.set_result(jsonrpc.error_message(cancelled, ErrorCode.REQUEST_CANCELLED, "Request cancelled"))
        side.link.from_client(one_line(body, message), message)
        return Response(status_code=202)

    async def _request(
        self, request: Request, side: HttpSession, message: jsonrpc.Message, body: bytes, headers: dict[str, str]
    ) -> Response:
        method = message["method"]
        original = message["id"]
        loop = asyncio.get_running_loop()
        if side.remap_ids:
            key: object = side.next_id()
            message = {**message, "id": key}
            meta = jsonrpc.params_meta(message)
            if "progressToken" in meta:  # unique upstream too: another client may use the same token
                params = cast(dict[str, object], message["params"])
                message["params"] = {**params, "_meta": {**meta, "progressToken": f"{key}"}}
            line = jsonrpc.encode(message)
        else:
            key, line = original, one_line(body, message)
            if jsonrpc.id_key(key) in side.waiting:
                return error_response(
                    original, 409, "Invalid request: this id is already in use by a request in flight"
                )
        waiter: asyncio.Future[jsonrpc.Message] = loop.create_future()
        side.waiting[jsonrpc.id_key(key)] = waiter
        if method == "subscriptions/listen":
            side.listens[key] = DropOldest(self.limits.event_buffer, side._dropping)  # pyright: ignore[reportPrivateUsage]
        side.link.from_client(line, message)
        if method == "subscriptions/listen":
            return event_stream(side.listens[key], (waiter, key, original, side), side)
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            done, _ = await asyncio.wait(
                {waiter, gone}, timeout=self.limits.wait + ANSWER_GRACE, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            gone.cancel()
        if waiter not in done:
            reason = "the client closed its request" if gone in done else "no answer within the timeout"
            side.cancel(key, reason)
            waiter.cancel()
            if gone in done:
                return Response(status_code=499)
            answer = jsonrpc.error_message(original, ErrorCode.REQUEST_TIMEOUT, f"Request timed out: {reason}")
        else:
            answer = {**waiter.result(), "id": original} if side.remap_ids else waiter.result()
        return Response(jsonrpc.encode(answer), media_type="application/json", headers=headers)


def principal_of(request: Request) -> object:
    """Who a request comes from, when its front authenticates principals (OAuth): the token's client,
    issuer and subject; None otherwise (everyone is one principal)."""
    user = request.scope.get("user")
    token = getattr(user, "access_token", None)
    if token is None:
        return None
    from mcp.server.auth.provider import principal_components

    return principal_components(token)


def one_line(body: bytes, message: jsonrpc.Message) -> bytes:
    """The body as one line for a stdio server: as it came, unless it spans lines (pretty-printed JSON)."""
    return jsonrpc.encode(message) if b"\n" in body or b"\r" in body else body


def _invalid(message: jsonrpc.Message) -> str | None:
    """Why a posted message is not one the proxy can answer (None: it can)."""
    if "method" in message and not isinstance(message["method"], str):
        return "'method' must be a string"
    if "id" in message and not jsonrpc.valid_id(message["id"]):
        return "'id' must be a string or an integer"
    return None


async def _disconnected(request: Request) -> None:
    """Returns when the client closes the connection of a request whose body was read."""
    while True:
        event = await request.receive()
        if event["type"] == "http.disconnect":
            return


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


def refuse_non_json(request: Request) -> Response | None:
    """A POST whose body is not declared ``application/json`` is refused (400)."""
    content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if request.method == "POST" and content_type != "application/json":
        return Response("Invalid Content-Type header: expected application/json", status_code=400)
    return None


class StreamOwner(Protocol):
    """What an event stream counts itself on: a session is busy while it has one open."""

    streams: int


class Guard:
    """Host and Origin checks (DNS rebinding, cross-site requests) for the address the proxy listens on."""

    def __init__(self, bound: str, allow_hosts: Sequence[str], allow_origins: Sequence[str]) -> None:
        self.loopback = is_loopback(bound)
        self.hosts: set[str] = {host.lower() for host in allow_hosts}
        if self.loopback:
            self.hosts |= LOOPBACK
        self.origins = {origin.lower().rstrip("/") for origin in allow_origins}

    def check(self, request: Request) -> Response | None:
        host = (request.headers.get("host") or "").lower()
        hostname = (request.url.hostname or "").lower()
        if self.hosts and hostname not in self.hosts and host not in self.hosts:
            return Response("Forbidden host", status_code=421)
        origin = request.headers.get("origin")
        if origin is None:
            return None
        origin = origin.lower().rstrip("/")
        if origin in self.origins or "*" in self.origins:
            return None
        if self.loopback and is_loopback(urlsplit(origin).hostname):
            return None
        if self.origins or self.loopback:
            return Response("Invalid Origin header", status_code=403)
        return None


def error_response(
    request_id: object, status: int, text: str, *, code: ErrorCode = ErrorCode.INVALID_REQUEST
) -> Response:
    body = jsonrpc.encode(jsonrpc.error_message(request_id, code, text))
    return Response(body, status_code=status, media_type="application/json")


Listen = tuple[asyncio.Future[jsonrpc.Message], object, object, HttpSession]
"""A listen stream: the waiter for its final answer, its id upstream, the client's id, its session."""


def event_stream(queue: DropOldest[bytes], listen: Listen | None, side: StreamOwner) -> Response:
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
                    yield {"event": "message", "data": _restore(getter.result(), listen).decode()}
                else:
                    getter.cancel()
                if listen is not None and listen[0].done():
                    if not listen[0].cancelled():
                        yield {
                            "event": "message",
                            "data": jsonrpc.encode({**listen[0].result(), "id": listen[2]}).decode(),
                        }
                    return
        finally:
            side.streams -= 1
            if listen is not None:
                listen[3].listens.pop(listen[1], None)
                listen[3].cancel(listen[1], "the client closed its listen stream")

    return EventSourceResponse(events())


def _restore(line: bytes, listen: Listen | None) -> bytes:
    """Put the client's own id back on a listen stream's frames."""
    if listen is None:
        return line
    _, key, original, _ = listen
    message = jsonrpc.parse(line)
    meta = jsonrpc.params_meta(message)
    if meta.get(SUBSCRIPTION_ID_KEY) == key:
        params = cast(dict[str, object], message["params"])
        return jsonrpc.encode({**message, "params": {**params, "_meta": {**meta, SUBSCRIPTION_ID_KEY: original}}})
    return line


def run_http_front(
    upstream: Sequence[str] | str,
    options: Options | None,
    limits: Limits,
    http: tuple[str, int],
    *,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    access: Access | None = None,
) -> int:
    """Serve the proxy's HTTP clients at ``http`` (host, port) until SIGTERM or SIGINT; the exit status."""
    host, _ = http
    warning = open_front_warning(host, allow_hosts, allow_origins) if access is None else None
    if warning is not None:
        say("proxy", warning)
    front = HttpFront(
        lambda: proxy_core(upstream, options, limits),
        limits,
        host,
        allow_hosts=allow_hosts,
        allow_origins=allow_origins,
        access=access,
    )
    return serve_front(front, http)


def serve_front(front: HttpFront, http: tuple[str, int], routes: Sequence[BaseRoute] = ()) -> int:
    """Serve ``front`` at ``http`` (host, port), with any other ``routes`` beside ``/mcp``, until SIGTERM
    or SIGINT; the exit status."""
    import uvicorn

    fix_mmap_threshold()
    host, port = http
    config = uvicorn.Config(front.app(routes), host=host, port=port, log_level="warning", timeout_graceful_shutdown=2)

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            front.stopping()
            super().handle_exit(sig, frame)

    Server(config).run()
    return 0
