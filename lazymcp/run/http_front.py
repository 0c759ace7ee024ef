"""The HTTP client side of the proxy and the gateway (``--http``): ``/mcp`` in front of their sessions.

``/mcp`` takes one JSON-RPC message per POST and answers a request with JSON, or with an event stream
of its progress, then its answer (``lazymcp.run.http_answers``).
- A 2025-11-25 client gets a session at ``initialize`` (``Mcp-Session-Id``), its own core and its own
  servers (a spawned server serves one client); what the server sends outside a response
  (notifications, its requests to the client) goes on the session's GET event stream; DELETE ends it.
- 2026-07-28 requests carry everything they need, so they share one core and its servers. Their
  ids and progress tokens are made unique on the way up and restored on the way down, since two
  clients may both use id 1; a 2026 client cancels a request by closing its POST, and a
  ``notifications/cancelled`` it posts is not forwarded, since it could name another client's request.
  A ``subscriptions/listen`` request is answered with an event stream of its subscription.

Sessions are sealed: every id, cancellation, progress token and notification is mapped within one
session, and nothing one session sends can name another's request.

Limits (``lazymcp.protocol.limits``): at most ``max_sessions`` sessions (each a process) at once, and at
most ``max_principal_sessions`` of one principal: at either cap a new session takes the place of the
least recently used one of its own principal with nothing in flight (never another principal's), and
when there is none ``initialize`` gets 503; a body of at most ``max_body`` bytes (413); a POST waits at most the timeout
for its answer; each event stream keeps at most ``event_buffer`` unread messages, dropping the oldest.
A session whose upstream failed is closed and its process reaped at once; one idle for
``IDLE_SECONDS`` is ended. Host and Origin are checked by every front's one rule (``http_checks.Guard``:
DNS-rebinding and cross-site protection); a POST must be ``application/json``, since a web page can send
a ``text/plain`` POST without a CORS preflight.

Beside ``/mcp``: ``/healthz`` and ``/readyz`` for a load balancer (``lazymcp.run.health``); with a
``Cluster`` (``--redis``), a request of a session another instance owns is answered by that owner
(``lazymcp.run.cluster``). A front is served, until a signal, by ``lazymcp.run.http_serve``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from lazymcp.core.actions import Core
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ErrorCode, InvalidParams
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.protocol.limits import Limits
from lazymcp.run.driver import Driver
from lazymcp.run.health import health_routes
from lazymcp.run.http_checks import (
    SESSION_HEADER,
    Guard,
    error_response,
    malformed,
    principal_of,
    read_body,
    refuse_non_json,
    refused,
    speaks_modern,
    with_trace_context,
)
from lazymcp.run.http_grants import Grants, bound, grant_of, granted, subject
from lazymcp.run.http_requests import answer, notify
from lazymcp.run.http_sessions import HttpSession, busy, event_stream, new_session, session_hash, session_of
from lazymcp.surfaces.hosts import asked_mode

if TYPE_CHECKING:
    from lazymcp.access.bearer import Access
    from lazymcp.access.policy import Principal
    from lazymcp.run.cluster import Cluster
    from lazymcp.run.connections import Connection
    from lazymcp.run.manifests import ManifestStore


class Beside(Protocol):
    """Work beside the sessions, started and stopped with the front (``HttpFront.watcher``)."""

    def start(self) -> None: ...

    async def stop(self) -> None: ...


IDLE_SECONDS = 30 * 60
"""A 2025 client session with no request for this long is ended (clients often never send DELETE)."""


class HttpFront:
    """The ``/mcp`` endpoint in front of the sessions: each a ``Driver`` over a core ``make_core`` builds for
    the principal that opens it (``lazymcp.access.policy.Principal``) and the grant its opening request
    earned (``grants``: asked once for that request, None when the front grants no one anything apart)."""

    def __init__(
        self,
        make_core: Callable[[Principal, object], Core],
        limits: Limits,
        host: str,
        *,
        allow_hosts: Sequence[str] = (),
        allow_origins: Sequence[str] = (),
        access: Access | None = None,
        store: ManifestStore | None = None,
        eager: bool = False,
        name: str = "proxy",
        cluster: Cluster | None = None,
        connector: Callable[[Principal, Callable[[], str | None]], Callable[..., Connection]] | None = None,
    ) -> None:
        self.make_core = make_core
        self.connector = connector
        """How a principal's sessions reach their servers (``lazymcp.run.shared_servers``), given the OAuth
        token of each session's latest request (``http_grants.subject``); None: each session starts its own."""
        self.access = access
        """Who may come in (``lazymcp.access.auth``, which loads the SDK: not for an open front); None: anyone."""
        self.store = store
        self.eager = eager
        self.name = name
        self.limits = limits
        self.guard = Guard(host, allow_hosts, allow_origins)
        self.sessions: dict[str, HttpSession] = {}
        self.moderns: dict[object, HttpSession] = {}
        """2026-07-28 requests' sessions: one per principal and grant (one in all without credentials)."""
        self.grants: Grants | None = None
        """What each request's own credentials are granted (``lazymcp.run.http_grants``); None: all."""
        self._modern_lock = asyncio.Lock()
        self._starting: dict[HttpSession, str | None] = {}
        """Sessions being opened (their servers starting): not filed yet, but they count against the caps,
        and a reload reaches them (``sides``); each with why it was ended meanwhile (``end``), if it was:
        its opening request is then refused."""
        self._closing: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.accepting = False
        """Whether new sessions are taken: from start-up done to shutdown begun (``/readyz``)."""
        self.cluster = cluster
        """The instances this one shares its sessions with (``--redis``); None: it stands alone."""
        self.outgoing: Callable[[Principal, Callable[[Frame], None]], Callable[[Frame], None]] | None = None
        """What each session's messages to its client pass through, by its principal (each principal's own
        sign-in links: ``lazymcp.run.people``); None: they go as they are."""
        self.watcher: Beside | None = None
        """What runs beside the sessions while the front serves (the gateway's reloading): started once
        the front accepts sessions, stopped before they close."""

    def stopping(self) -> None:
        """A signal arrived: answer every POST still waiting and reap the upstreams, so that the server's
        graceful shutdown finds no request in flight. Safe to call from a signal handler."""
        self.accepting = False
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(lambda: self._closing.add(asyncio.ensure_future(self.close())))

    def app(self, routes: Sequence[BaseRoute] = ()) -> Starlette:
        @asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncGenerator[None]:
            self.loop = asyncio.get_running_loop()
            if self.cluster is not None:
                await self.cluster.start(self.sessions, self.drivers)
            self.accepting = True
            if self.watcher is not None:
                self.watcher.start()
            yield
            self.accepting = False
            if self.watcher is not None:
                await self.watcher.stop()
            await self.close()
            if self.cluster is not None:
                await self.cluster.aclose()
            if self.access is not None:
                await self.access.aclose()

        endpoint = Route("/mcp", self.endpoint, methods=["GET", "POST", "DELETE"])
        checked = self.access.routes() if self.access is not None else []
        return Starlette(routes=[endpoint, *health_routes(self.readiness), *checked, *routes], lifespan=lifespan)

    def drivers(self) -> list[Driver]:
        """Every session's driver, 2025 and 2026 alike."""
        return [side.driver for table in self._tables() for side in table.values()]

    def readiness(self) -> dict[str, object]:
        """What ``/readyz`` says: ``unavailable`` while starting or shutting down, ``degraded`` while what
        it shares with its peers is out of reach."""
        if not self.accepting:
            reason = "starting" if self.loop is None else "shutting down"
            return {"status": "unavailable", "reason": reason}
        trouble = self.cluster.trouble() if self.cluster is not None else None
        return {"status": "ok"} if trouble is None else {"status": "degraded", "reason": trouble}

    def sides(self) -> list[HttpSession]:
        """Every session, 2025 and 2026 alike, and those still starting."""
        return [*self.sessions.values(), *self.moderns.values(), *self._starting]

    async def close(self) -> None:
        sides = self.sides()
        self.sessions.clear()
        self.moderns.clear()
        await asyncio.gather(*(side.close(f"the {self.name} is shutting down") for side in sides))
        others = self._closing - {asyncio.current_task()}
        if others:
            await asyncio.gather(*others, return_exceptions=True)

    def end(self, which: Callable[[object], bool], reason: str) -> int:
        """End the sessions of the principals ``which`` picks (their next request gets 404, or 401 with a
        token no longer valid); how many."""
        ended = 0
        for table in self._tables():
            for key, side in list(table.items()):
                if which(side.principal):
                    del table[key]
                    self._reap_later(side, reason)
                    ended += 1
        for side, cut in self._starting.items():  # ended once they have started, before anything reaches them
            if which(side.principal) and cut is None:
                self._starting[side] = reason
                ended += 1
        return ended

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

    def _make_room(self, principal: Principal) -> str | None:
        """Room for a new session of ``principal``; None when there is, else why not. A principal at its
        share (``max_principal_sessions``), or any at the cap (``max_sessions``), ends the least recently
        used of its own sessions with nothing in flight (a 2025 client, if it comes back, gets 404 and
        starts a new one, as MCP clients do; a 2026 one gets a new one at its next request): one
        principal's new sessions never end another's."""
        limits = self.limits
        own = [
            (side.last_seen, table, key)
            for table in self._tables()
            for key, side in table.items()
            if side.principal == principal
        ]
        mine = len(own) + sum(1 for side in self._starting if side.principal == principal)
        share = limits.max_principal_sessions or limits.max_sessions
        held = len(self.sessions) + len(self.moderns) + len(self._starting)
        if mine < share and held < limits.max_sessions:
            return None
        idle = [found for found in own if not found[1][found[2]].waiting and not found[1][found[2]].streams]
        if not idle:
            if mine >= share:
                return f"this principal's {mine} sessions are all busy (--max-sessions-per-principal {share})"
            return f"the {self.name} serves at most {limits.max_sessions} sessions, all of others (--max-sessions)"
        _, table, oldest = min(idle, key=lambda found: found[0])
        self._reap_later(table.pop(oldest), f"the {self.name} needed its place for a new session of its principal")
        return None

    async def _open(
        self, request: Request, principal: Principal, grant: object, *, remap_ids: bool
    ) -> HttpSession | Response:
        full = self._make_room(principal)
        if full is not None:
            return error_response(None, 503, f"Too many sessions: {full}")
        connector = self._connector(principal, lambda: subject(side))  # the token of its latest request
        side = HttpSession(
            lambda sink: Driver(
                self.make_core(principal, grant),  # the grant this request was looked up for
                sink if self.outgoing is None else self.outgoing(principal, sink),
                store=self.store,
                **connector,
            ),
            remap_ids=remap_ids,
            limits=self.limits,
        )
        side.principal, side.grant = principal, grant
        self._starting[side] = None  # filed by the caller as soon as this returns: no wait in between
        try:
            await side.driver.start(self.eager)
        except Exception as exc:  # a bug must cost one session, never the front
            side.driver.fail(f"internal error starting a session: {exc!r}")
        finally:
            cut = self._starting.pop(side)
        if cut is not None:  # its request is answered as a new one would be now: 401, or try again
            await side.close(cut)
            return await refused(self.guard, self.access, request) or _cut_response(cut)
        if side.driver.done.done():
            message = side.driver.failure or "the session ended"
            await side.driver.close()
            return error_response(None, 502, f"Upstream unavailable: {message}", code=ErrorCode.UPSTREAM_ERROR)
        side.driver.done.add_done_callback(lambda _: self._ended(side))
        return side

    def _connector(self, principal: Principal, token: Callable[[], str | None]) -> dict[str, Callable[..., Connection]]:
        return {} if self.connector is None else {"connector": self.connector(principal, token)}

    def _ended(self, side: HttpSession) -> None:
        """A session whose upstream failed: forget it and reap its process now."""
        for session_id, known in list(self.sessions.items()):
            if known is side:
                del self.sessions[session_id]
        for principal, known in list(self.moderns.items()):
            if known is side:
                del self.moderns[principal]
        self._reap_later(side, side.driver.failure or "the session ended")

    async def endpoint(self, request: Request) -> Response:
        denied = await refused(self.guard, self.access, request)
        if denied is not None:
            return denied
        if self.cluster is not None:  # a 2025 session of another instance's: its owner answers
            forwarded = await self.cluster.forward(request, self.sessions, self.limits)
            if forwarded is not None:
                return forwarded
        await self._reap_idle()
        if request.method == "POST":
            return refuse_non_json(request) or await self._post(request)
        given = request.headers.get(SESSION_HEADER)
        side = self.sessions.get(given or "")
        if side is None or not bound(self.grants, side, principal_of(request)):
            # no session named: no stream to give (405, as MCP says); one named but not found, or another
            # principal's: 404, which tells a client to start a new session and no one whose it is
            return Response(
                "Unknown or missing session", status_code=404 if given or request.method == "DELETE" else 405
            )
        if request.method == "DELETE":
            del self.sessions[request.headers[SESSION_HEADER]]
            await side.close("the client ended the session")
            return Response(status_code=200)
        return event_stream(side.events, None, side)

    async def _post(self, request: Request) -> Response:
        body = await read_body(request, self.limits.max_body)
        if isinstance(body, Response):
            return body
        try:
            frame = Frame.read(body)
        except jsonrpc.NotJSONRPC:
            return error_response(None, 400, "Parse error: not a JSON-RPC message", code=ErrorCode.PARSE_ERROR)
        message = frame.message
        invalid = malformed(message)
        if invalid is not None:
            return error_response(None, 400, f"Invalid request: {invalid}")
        frame = with_trace_context(frame, request.headers.get("traceparent"))
        message = frame.message
        method = message.get("method")
        try:
            asked = asked_mode(request.query_params)
        except InvalidParams as exc:
            return error_response(message.get("id"), 400, exc.message, code=exc.code)
        modern = speaks_modern(request)
        headers: dict[str, str] = {}
        principal = principal_of(request)
        if modern:
            grant = grant_of(self.grants, principal)  # each request granted by its own token, once
            async with self._modern_lock:
                side = self.moderns.get((principal, grant))
                if side is None or side.driver.done.done():
                    opened = await self._open(request, principal, grant, remap_ids=True)
                    if isinstance(opened, Response):
                        return opened
                    side = self.moderns[(principal, grant)] = opened
            granted(self.grants, side, principal, grant)  # the latest claims and token
        elif method == "initialize":
            opened = await self._open(request, principal, grant_of(self.grants, principal), remap_ids=False)
            if isinstance(opened, Response):
                return opened
            side = new_session(self.sessions, opened, headers)
            side.session_hash = session_hash(headers[SESSION_HEADER])
            if self.cluster is not None:
                await self.cluster.opened(headers[SESSION_HEADER], principal)
        else:
            found = session_of(self.sessions, request, message)
            if isinstance(found, Response):
                return found
            if not bound(self.grants, found, principal):  # another principal's session: as if there were none
                return error_response(message.get("id"), 404, "Session not found: initialize first")
            side = found
        side.driver.core.session.record.mode = asked  # the mode this request's URL asks for, over its host's
        side.last_seen = asyncio.get_running_loop().time()
        if side.held and method not in (None, "notifications/cancelled"):
            return busy(message.get("id"), side.held)
        if method is None or "id" not in message:  # a notification, or the client's answer to the server
            return notify(side, frame)
        return await answer(request, side, frame, headers, self.limits)


def _cut_response(reason: str) -> Response:
    """The 503 a request gets whose session was ended while it started, its credentials still valid."""
    text = f"Session ended while it started: {reason}; send the request again"
    response = error_response(None, 503, text, code=ErrorCode.INTERNAL_ERROR)
    response.headers["Retry-After"] = "1"
    return response
