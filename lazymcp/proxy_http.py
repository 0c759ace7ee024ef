"""The proxy over streamable HTTP: an HTTP upstream (``--url``), and HTTP clients (``--http``).

Upstream side: the SDK's own streamable-HTTP client transport carries the lines; lazymcp adds the
headers a request needs (``MCP-Protocol-Version``, and on 2026-07-28 ``Mcp-Method`` and ``Mcp-Name``).

Client side: ``/mcp`` takes one JSON-RPC message per POST and answers a request with JSON.
- A 2025-11-25 client gets a session at ``initialize`` (``Mcp-Session-Id``), its own router and its
  own upstream (a spawned server serves one client); what the server sends outside a response
  (notifications, its requests to the client) goes on the session's GET event stream; DELETE ends it.
- 2026-07-28 requests carry everything they need, so they share one router and one upstream. Their
  ids are made unique on the way up and restored on the way down, since two clients may both use
  id 1; a ``subscriptions/listen`` request is answered with an event stream of its subscription.
When bound to a loopback address, requests must name a loopback host and come from no foreign
``Origin``, and a POST must be ``application/json``: a web page can send a ``text/plain`` POST without a
CORS preflight, and a session here spawns a process (DNS-rebinding and cross-site protection, as the
SDK's own server does). Sessions idle for ``IDLE_SECONDS`` are ended.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, cast
from urllib.parse import urlsplit
from uuid import uuid4

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import jsonrpc_message_adapter
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from lazymcp import jsonrpc
from lazymcp.bridge import PROTOCOL_VERSION_KEY, SUBSCRIPTION_ID_KEY
from lazymcp.options import Options
from lazymcp.proxy import LineSink, ProcessUpstream, Session, StdioProxy, Upstream, make_router, say

SESSION_HEADER = "mcp-session-id"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
IDLE_SECONDS = 30 * 60
"""A 2025 client session with no request for this long is ended (clients often never send DELETE)."""


class HttpUpstream:
    """A streamable-HTTP server, through the SDK's client transport."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.headers = dict(headers or {})
        """Sent with every request (a gateway entry's ``headers``: credentials, usually)."""
        self._stack = AsyncExitStack()
        self._outbox: MemoryObjectSendStream[bytes] | None = None
        self._legacy_version: str | None = None

    async def start(self, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        client = None
        if self.headers:  # the timeouts the SDK's own client has: a response stream may stay open
            import httpx2

            timeout = httpx2.Timeout(30.0, read=300.0)
            client = await self._stack.enter_async_context(httpx2.AsyncClient(headers=self.headers, timeout=timeout))
        read, write = await self._stack.enter_async_context(streamable_http_client(self.url, http_client=client))
        outbox, pending = anyio.create_memory_object_stream[bytes](math.inf)
        self._outbox = outbox
        group = await self._stack.enter_async_context(anyio.create_task_group())
        group.start_soon(self._read, read, on_line, on_gone)
        group.start_soon(self._write, pending, write)
        self._stack.callback(group.cancel_scope.cancel)  # runs first: stop the pumps, then the transport

    def send(self, line: bytes) -> None:
        if self._outbox is not None:
            self._outbox.send_nowait(line)

    async def _read(self, read: Any, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        async for item in read:
            if isinstance(item, Exception):
                on_gone(f"the upstream at {self.url} failed: {item}")
                return
            message = cast(SessionMessage, item).message
            line = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            version = jsonrpc.field(getattr(message, "result", None), "protocolVersion")
            if isinstance(version, str):
                self._legacy_version = version  # the 2025 handshake's answer: later requests carry it
            on_line(line)
        on_gone(f"the upstream at {self.url} closed the connection")

    async def _write(self, pending: MemoryObjectReceiveStream[bytes], write: Any) -> None:
        async for line in pending:
            message = jsonrpc_message_adapter.validate_json(line)
            metadata = ClientMessageMetadata(headers=self._headers(jsonrpc.parse(line)))
            await write.send(SessionMessage(message, metadata=metadata))

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        method = message.get("method")
        version = jsonrpc.params_meta(message).get(PROTOCOL_VERSION_KEY)
        if isinstance(version, str):
            headers = {MCP_PROTOCOL_VERSION_HEADER: version}
            if isinstance(method, str):
                headers[MCP_METHOD_HEADER] = method
                name = jsonrpc.field(message.get("params"), NAME_BEARING_METHODS.get(method, ""))
                if isinstance(name, str):
                    headers[MCP_NAME_HEADER] = encode_header_value(name)
            return headers
        if self._legacy_version is not None and method != "initialize":
            return {MCP_PROTOCOL_VERSION_HEADER: self._legacy_version}
        return {}

    async def stop(self) -> None:
        if self._outbox is not None:
            self._outbox.close()
        await self._stack.aclose()


def upstream_factory(upstream: Sequence[str] | str) -> Callable[[], Upstream]:
    if isinstance(upstream, str):
        return lambda: HttpUpstream(upstream)
    return lambda: ProcessUpstream(upstream)


def deliver(waiting: dict[tuple[str, object], asyncio.Future[bytes]], message: jsonrpc.Message, line: bytes) -> bool:
    """Hand an answer to the HTTP request waiting for it; False when it is not an answer anyone awaits."""
    if "method" in message:
        return False
    waiter = waiting.pop(jsonrpc.id_key(message.get("id")), None)
    if waiter is None or waiter.done():
        return False
    waiter.set_result(line)
    return True


def refusal(request: Request, *, loopback: bool) -> Response | None:
    """Why a request is refused, or None: on a ``loopback`` listener, another host or a foreign origin
    (DNS rebinding, cross-site requests); anywhere, a POST that is not ``application/json``."""
    if loopback:
        if (request.url.hostname or "") not in LOOPBACK:
            return Response("Forbidden host", status_code=421)
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).hostname not in LOOPBACK:
            return Response("Invalid Origin header", status_code=403)
    content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if request.method == "POST" and content_type != "application/json":
        return Response("Invalid Content-Type header: expected application/json", status_code=400)
    return None


class HttpClientSide:
    """One session of HTTP clients behind one router: answers matched to the requests waiting for them."""

    def __init__(self, make_router: Callable[[], Any], upstream: Upstream, *, remap_ids: bool) -> None:
        self.session = Session(make_router(), upstream, self._to_client)
        self.remap_ids = remap_ids
        self.waiting: dict[tuple[str, object], asyncio.Future[bytes]] = {}
        self.events: asyncio.Queue[bytes] = asyncio.Queue()
        self.listens: dict[object, asyncio.Queue[bytes]] = {}
        self.last_seen = asyncio.get_running_loop().time()
        self._ids = itertools.count(1)

    def _to_client(self, line: bytes) -> None:
        message = jsonrpc.parse(line)
        if deliver(self.waiting, message, line):
            return
        stream = self.listens.get(jsonrpc.params_meta(message).get(SUBSCRIPTION_ID_KEY))
        (stream if stream is not None else self.events).put_nowait(line)

    def next_id(self) -> int:
        return next(self._ids)


class HttpFront:
    """The ``/mcp`` endpoint in front of the proxy's sessions."""

    def __init__(
        self, upstream: Sequence[str] | str, options: Options | None, timeout: float | None, host: str
    ) -> None:
        self.make_upstream = upstream_factory(upstream)
        self.make_router = lambda: make_router(options, timeout)
        self.check_host = host in LOOPBACK
        self.sessions: dict[str, HttpClientSide] = {}
        self.modern: HttpClientSide | None = None
        self._modern_lock = asyncio.Lock()

    def app(self) -> Starlette:
        @asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncGenerator[None]:
            yield
            await self.close()

        return Starlette(routes=[Route("/mcp", self.endpoint, methods=["GET", "POST", "DELETE"])], lifespan=lifespan)

    async def close(self) -> None:
        sides = [*self.sessions.values(), *([self.modern] if self.modern else [])]
        self.sessions.clear()
        self.modern = None
        for side in sides:
            await side.session.close()

    async def _reap_idle(self) -> None:
        now = asyncio.get_running_loop().time()
        for session_id, side in list(self.sessions.items()):
            if now - side.last_seen > IDLE_SECONDS and session_id in self.sessions:
                del self.sessions[session_id]
                await side.session.close()

    async def _open(self, *, remap_ids: bool) -> HttpClientSide | Response:
        side = HttpClientSide(self.make_router, self.make_upstream(), remap_ids=remap_ids)
        try:
            await side.session.start()
        except Exception as exc:
            say(str(getattr(exc, "message", exc)))
            return _error(None, 502, f"Upstream unavailable: {getattr(exc, 'message', exc)}")
        return side

    async def endpoint(self, request: Request) -> Response:
        refused = refusal(request, loopback=self.check_host)
        if refused is not None:
            return refused
        await self._reap_idle()
        if request.method == "POST":
            return await self._post(request)
        side = self.sessions.get(request.headers.get(SESSION_HEADER, ""))
        if side is None:
            return Response("Unknown or missing session", status_code=404 if request.method == "DELETE" else 405)
        if request.method == "DELETE":
            del self.sessions[request.headers[SESSION_HEADER]]
            await side.session.close()
            return Response(status_code=200)
        return _event_stream(side.events, None)

    async def _post(self, request: Request) -> Response:
        try:
            message = jsonrpc.parse(await request.body())
        except jsonrpc.NotJSONRPC:
            return _error(None, 400, "Parse error: not a JSON-RPC message", code=jsonrpc.PARSE_ERROR)
        modern = request.headers.get(MCP_PROTOCOL_VERSION_HEADER) in MODERN_PROTOCOL_VERSIONS
        method = message.get("method")
        headers: dict[str, str] = {}
        if modern:
            async with self._modern_lock:
                if self.modern is None or self.modern.session.done.done():
                    opened = await self._open(remap_ids=True)
                    if isinstance(opened, Response):
                        return opened
                    self.modern = opened
            side = self.modern
        elif method == "initialize":
            opened = await self._open(remap_ids=False)
            if isinstance(opened, Response):
                return opened
            side = opened
            session_id = uuid4().hex
            self.sessions[session_id] = side
            headers[SESSION_HEADER] = session_id
            side.session.done.add_done_callback(lambda _: self.sessions.pop(session_id, None))
        else:
            found = self.sessions.get(request.headers.get(SESSION_HEADER, ""))
            if found is None:
                return _error(message.get("id"), 404, "Session not found: initialize first")
            side = found
        side.last_seen = asyncio.get_running_loop().time()
        if method is None or "id" not in message:  # a notification, or the client's answer to the server
            side.session.from_client(jsonrpc.encode(message))
            return Response(status_code=202)
        original = message["id"]
        key = side.next_id() if side.remap_ids else original
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        side.waiting[jsonrpc.id_key(key)] = waiter
        if method == "subscriptions/listen":
            side.listens[key] = asyncio.Queue()
        side.session.from_client(jsonrpc.encode({**message, "id": key}))
        if method == "subscriptions/listen":
            return _event_stream(side.listens[key], (waiter, key, original, side))
        answer = jsonrpc.parse(await waiter)
        return Response(jsonrpc.encode({**answer, "id": original}), media_type="application/json", headers=headers)


def _error(request_id: object, status: int, text: str, *, code: int = -32600) -> Response:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}
    return JSONResponse(body, status_code=status)


Listen = tuple[asyncio.Future[bytes], object, object, HttpClientSide]
"""A listen stream: the waiter for its final answer, its id upstream, the client's id, its side."""


def _event_stream(queue: asyncio.Queue[bytes], listen: Listen | None) -> Response:
    """An SSE response: the queue's messages, until the client leaves (or a listen stream ends)."""
    from sse_starlette.sse import EventSourceResponse

    async def events() -> AsyncIterator[dict[str, str]]:
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
                    yield {"event": "message", "data": _restore(listen[0].result(), listen).decode()}
                    return
        finally:
            if listen is not None:
                listen[3].listens.pop(listen[1], None)

    return EventSourceResponse(events())


def _restore(line: bytes, listen: Listen | None) -> bytes:
    """Put the client's own id back on a listen stream's frames."""
    if listen is None:
        return line
    _, key, original, _ = listen
    message = jsonrpc.parse(line)
    if "method" not in message:
        return jsonrpc.encode({**message, "id": original})
    meta = jsonrpc.params_meta(message)
    if meta.get(SUBSCRIPTION_ID_KEY) == key:
        params = cast(dict[str, object], message["params"])
        return jsonrpc.encode({**message, "params": {**params, "_meta": {**meta, SUBSCRIPTION_ID_KEY: original}}})
    return line


def run_http_proxy(
    upstream: Sequence[str] | str,
    options: Options | None = None,
    *,
    timeout: float | None = 300.0,
    http: tuple[str, int] | None = None,
) -> int:
    """The proxy with an HTTP upstream, or serving HTTP clients (or both)."""
    if http is None:
        assert isinstance(upstream, str)

        async def stdio_clients() -> int:
            return await StdioProxy(HttpUpstream(upstream), make_router(options, timeout)).run()

        return asyncio.run(stdio_clients())
    import uvicorn

    host, port = http
    front = HttpFront(upstream, options, timeout, host)
    server = uvicorn.Server(uvicorn.Config(front.app(), host=host, port=port, log_level="warning"))
    server.run()
    return 0
