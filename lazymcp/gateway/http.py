"""``lazymcp gateway --http HOST:PORT``: the gateway for a team, over streamable HTTP at ``/mcp``.

Each client session (``initialize`` -> ``Mcp-Session-Id``) gets its own gateway core and its own server
processes (a stdio server serves one client); manifests are shared. A request is answered with JSON;
what the servers send outside an answer (notifications, their requests to the client) goes on the
session's GET event stream. The gateway holds its users' credentials and runs their tools, so every
request must carry ``Authorization: Bearer <token>`` when a token is set, and a token must be set to
listen on anything but loopback. On loopback, hosts and origins must be loopback too (DNS rebinding).
2026-07-28 requests are refused: the gateway speaks 2025-11-25.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lazymcp import jsonrpc
from lazymcp.gateway.config import ConfigError
from lazymcp.gateway.manifest import ManifestStore, cache_dir
from lazymcp.gateway.run import GatewayIO, Launch, build_gateway
from lazymcp.limits import EVENT_BUFFER, DropOldest, say
from lazymcp.proxy_http import (
    IDLE_SECONDS,
    LOOPBACK,
    SESSION_HEADER,
    Guard,
    error_response,
    event_stream,
    new_session,
    refuse_non_json,
    session_of,
)

if TYPE_CHECKING:
    from lazymcp.gateway.core import Gateway


class GatewaySession:
    """One HTTP client's gateway: answers matched to the requests waiting for them, the rest to its stream."""

    def __init__(self, gateway: Gateway, store: ManifestStore, eager: bool) -> None:
        self.gateway = gateway
        self.io = GatewayIO(gateway, self._to_client, store)
        self.waiting: dict[tuple[str, object], asyncio.Future[bytes]] = {}
        self.events: DropOldest[bytes] = DropOldest(
            EVENT_BUFFER, lambda: say("a gateway session's event stream is not read: dropping its oldest messages")
        )
        self.streams = 0
        """Event streams open on this session."""
        self.last_seen = self.io.now()
        self.io.carry_out(gateway.launch(eager=eager))
        self.io.expire()

    def _to_client(self, line: bytes) -> None:
        message = jsonrpc.parse(line)
        waiter = None if "method" in message else self.waiting.pop(jsonrpc.id_key(message.get("id")), None)
        if waiter is not None and not waiter.done():
            waiter.set_result(line)  # the answer to a POST waiting for it
        else:
            self.events.put(line)

    def from_client(self, line: bytes) -> None:
        self.last_seen = self.io.now()
        self.io.from_client(line)


def authorized(header: str | None, token: str) -> bool:
    """Does an ``Authorization`` header carry the bearer token? (Compared in constant time.)"""
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


class GatewayFront:
    """The ``/mcp`` endpoint in front of the gateway's sessions."""

    def __init__(self, launch: Launch, host: str, token: str | None) -> None:
        if token is None and host not in LOOPBACK:
            raise ConfigError(f"refusing to serve {host} without a token: give --token-file or LAZYMCP_GATEWAY_TOKEN")
        self.launch = launch
        self.token = token
        self.guard = Guard(host, [], [])
        self.store = ManifestStore(cache_dir())
        self.sessions: dict[str, GatewaySession] = {}

    def app(self) -> Starlette:
        @asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncGenerator[None]:
            yield
            for session in list(self.sessions.values()):
                await session.io.close()
            self.sessions.clear()

        return Starlette(routes=[Route("/mcp", self.endpoint, methods=["GET", "POST", "DELETE"])], lifespan=lifespan)

    def _refused(self, request: Request) -> Response | None:
        if self.token is not None and not authorized(request.headers.get("authorization"), self.token):
            return Response("Unauthorized", status_code=401, headers={"WWW-Authenticate": 'Bearer realm="lazymcp"'})
        return self.guard.check(request) or refuse_non_json(request)

    async def endpoint(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        await self._reap_idle()
        if request.method == "POST":
            return await self._post(request)
        session_id = request.headers.get(SESSION_HEADER, "")
        session = self.sessions.get(session_id)
        if session is None:
            return Response("Unknown or missing session", status_code=404 if request.method == "DELETE" else 405)
        if request.method == "DELETE":
            del self.sessions[session_id]
            await session.io.close()
            return Response(status_code=200)
        return event_stream(session.events, None, session)

    async def _reap_idle(self) -> None:
        now = asyncio.get_running_loop().time()
        for session_id, session in list(self.sessions.items()):
            if now - session.last_seen > IDLE_SECONDS and self.sessions.pop(session_id, None) is not None:
                await session.io.close()

    async def _post(self, request: Request) -> Response:
        try:
            message = jsonrpc.parse(await request.body())
        except jsonrpc.NotJSONRPC:
            return error_response(None, 400, "Parse error: not a JSON-RPC message", code=jsonrpc.PARSE_ERROR)
        headers: dict[str, str] = {}
        if message.get("method") == "initialize":
            gateway = build_gateway(self.launch, self.store)
            session = new_session(self.sessions, GatewaySession(gateway, self.store, self.launch.eager), headers)
        else:
            found = session_of(self.sessions, request, message)
            if isinstance(found, Response):
                return found
            session = found
        if message.get("method") is None or "id" not in message:
            session.from_client(jsonrpc.encode(message))
            return Response(status_code=202)
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        session.waiting[jsonrpc.id_key(message["id"])] = waiter
        session.from_client(jsonrpc.encode(message))
        return Response(await waiter, media_type="application/json", headers=headers)


def serve_http(launch: Launch, http: tuple[str, int], token: str | None) -> int:
    """Serve HTTP clients until interrupted.

    Raises:
        ConfigError: a non-loopback address without a token.
    """
    import uvicorn

    host, port = http
    front = GatewayFront(launch, host, token)
    build_gateway(launch, None)  # a name collision stops it here, before it listens
    server = uvicorn.Server(uvicorn.Config(front.app(), host=host, port=port, log_level="warning"))
    server.run()
    return 0
