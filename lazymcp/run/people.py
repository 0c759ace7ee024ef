"""Each person signs in to each remote server, on a team's HTTP gateway (``--public-url URL`` with
``--secrets-key-file FILE``).

A principal whose session reaches a remote server that asks for a sign-in (its 401) and that this principal
has not signed in to gets, in its own session's answer, the line ``sign-in needed: sign in at
URL/connect/SERVER?ticket=...``. The failure itself (what the log, the status and every other answer say)
names the link without a ticket: ``People.outgoing`` adds a fresh ticket, of the session's own principal,
to each such link in an answer on its way to that session's client, so that a ticket reaches only its
principal. The browser that opens the link has no bearer token: the ticket is the credential
(``lazymcp.access.sealed``: sealed, valid ``TICKET_LIFE`` seconds, for one principal and one server, used
once).

``GET /connect/SERVER?ticket=T`` starts the SDK's sign-in (``lazymcp.run.signin.sign_in``: discovery from
the 401, the entry's client, its metadata URL or a dynamic registration, PKCE and ``resource``) with the
redirect URI ``URL/oauth/callback``, and sends the browser to the authorization endpoint (303);
``/oauth/callback`` takes the code and the ``state`` of a sign-in under way here (once; for
``TICKET_LIFE`` seconds), and the tokens are kept as that principal's, sealed (``Sealed``). From then on
that principal's connections to the server carry its own access token (``SignedIn``), refreshed by the
SDK before it expires; a refused refresh returns the server to ``sign-in needed`` for that principal
alone. ``DELETE /connect/SERVER``, with the principal's own credentials (its bearer token), revokes its
tokens where the authorization server can, and forgets them.
"""

from __future__ import annotations

import asyncio
import hmac
import re
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qs, quote, unquote, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from lazymcp.access.sealed import TICKET_LIFE, SealedFile, Sealer, read_key, read_ticket, sealed_file, ticket
from lazymcp.access.tokens import config_directory
from lazymcp.protocol.errors import ConfigError, UpstreamError
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.run.connections import Connection, Connector
from lazymcp.run.people_flow import FINISH_WAIT, PRIVATE, Elsewhere, Flow, Sealed, SignedIn, page
from lazymcp.run.signin import Kept, can_sign_in, key_of

if TYPE_CHECKING:
    from lazymcp.access.bearer import Access
    from lazymcp.access.policy import Principal
    from lazymcp.core.entries import ServerEntry
    from lazymcp.gateway.config import GatewayConfig
    from lazymcp.run.http_checks import Guard
    from lazymcp.run.http_front import HttpFront

CALLBACK = "/oauth/callback"
BROWSER = "lazymcp-sign-in"
"""The cookie that binds a sign-in under way to the browser that opened its link: a callback that comes
without it (a browser the authorization URL was passed to) is refused, so that no one can have another
person's account at the authorization server kept as their own sign-in."""
FLOWS_MAX = 1024
"""Sign-ins under way at once; past it ``/connect`` answers 503."""
FLOWS_EACH = 4
"""Sign-ins under way at once of one principal (each link opened and not finished holds one for
``TICKET_LIFE`` seconds); past it ``/connect`` answers that principal 503, and no one else."""


class Used(Protocol):
    """The tickets used already, as long as they would be valid."""

    async def first(self, nonce: str) -> bool:
        """True the first time ``nonce`` is used (and it is noted), False after."""
        ...


USED_MAX = 100_000
"""Tickets noted as used on one instance at most (each for ``TICKET_LIFE`` seconds and a minute): past it a
ticket is refused rather than the oldest forgotten, which would let it be used again."""


class UsedHere:
    """The tickets used on this instance."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    async def first(self, nonce: str) -> bool:
        now = time.monotonic()
        while self._until:  # noted in the order they expire: the expired ones first
            oldest = next(iter(self._until))
            if self._until[oldest] > now:
                break
            del self._until[oldest]
        if nonce in self._until or len(self._until) >= USED_MAX:
            return False
        self._until[nonce] = now + TICKET_LIFE + 60
        return True


class People:
    """Every principal's sign-ins to the remote servers of this gateway."""

    def __init__(
        self,
        public_url: str,
        sealer: Sealer,
        store: Sealed,
        entries: Callable[[], Sequence[ServerEntry]],
        used: Used | None = None,
    ) -> None:
        self.public_url = public_url.rstrip("/")
        self.sealer = sealer
        self.store = store
        self.entries = entries
        """The servers of the configuration in force."""
        self.used = used or UsedHere()
        self.callbacks: Elsewhere | None = None
        """The other instances a callback may be for (``--redis``); None: this one alone."""
        self.flows: dict[str, Flow] = {}
        """Sign-ins under way, by their ``state``."""
        self.starting: Counter[str] = Counter()
        """The sign-ins of each principal that have not reached the authorization server yet."""
        self.running: set[asyncio.Task[None]] = set()
        self.changed: Callable[[str, str, bool], None] = lambda principal, server, signed_in: None
        """Told of each sign-in done (True) or forgotten (False), here or on another instance: the principal's
        key and the server (``fresh_sessions``)."""
        self.tell: Callable[[str, str, bool], Awaitable[object]] | None = None
        """Tells the other instances (``--redis``) of a sign-in done or forgotten here
        (``lazymcp.run.people_redis.share``); None: this one alone."""
        link = re.escape(f"{self.public_url}/connect/").encode()
        self._links = re.compile(rb"sign in(?: again)? at " + link + rb"([A-Za-z0-9._~%-]+)")
        """The gateway's own sign-in lines (``how``): a link elsewhere in an answer (a page a tool fetched)
        gets no ticket."""

    def check(self) -> None:
        """Open the sealed file of the sign-ins now, when they are kept in one.

        Raises:
            ConfigError: it cannot be read, or was sealed with another key.
        """
        if isinstance(self.store, SealedFile):
            self.store.check()

    async def done(self, principal: str, server: str, signed_in: bool) -> None:
        """A sign-in of ``principal`` to ``server`` done (True) or forgotten (False) here, and written: this
        instance's sessions are told (``changed``), and the other instances'."""
        self.changed(principal, server, signed_in)
        if self.tell is not None:
            await self.tell(principal, server, signed_in)

    @property
    def redirect_uri(self) -> str:
        return self.public_url + CALLBACK

    async def note(self, state: str) -> None:
        """A sign-in under way here, by its ``state``: its callback may come to another instance."""
        if self.callbacks is not None:
            await self.callbacks.note(state)

    def how(self, server: str, again: bool = False) -> str:
        """How a principal signs in (``again``) to ``server``: the link, without a ticket (``outgoing`` adds
        it)."""
        return f"sign in{' again' if again else ''} at {self.public_url}/connect/{quote(server, safe='')}"

    def connector(self, principal: Principal, then: Connector) -> Connector:
        """How ``principal``'s sessions reach their servers: one that may ask for a sign-in, with the
        principal's own (``SignedIn``); the rest by ``then``."""

        def connector(entry: ServerEntry, *, isolated: bool) -> Connection:
            if not can_sign_in(entry):
                return then(entry, isolated=isolated)
            return SignedIn(self, entry, principal.key)

        return connector

    def outgoing(self, principal: Principal, sink: Callable[[Frame], None]) -> Callable[[Frame], None]:
        """``sink``, with each sign-in line (``how``) of what goes to a session of ``principal`` given a
        ticket of its own: one for each server that may ask for a sign-in, however often an answer names it."""
        links, marker = self._links, f"{self.public_url}/connect/".encode()

        def out(frame: Frame) -> None:
            if marker not in frame.line:  # most answers: one scan, a few times faster than the pattern's
                sink(frame)
                return
            made: dict[str, bytes] = {}

            def ticketed(found: re.Match[bytes]) -> bytes:
                server = unquote(found.group(1).decode())
                if server not in made:
                    if self._entry(server) is None:
                        return found.group(0)
                    self._recheck(principal.key, server)
                    made[server] = quote(ticket(self.sealer, principal.key, server), safe="").encode()
                return found.group(0) + b"?ticket=" + made[server]

            sink(Frame.read(links.sub(ticketed, frame.line)))

        return out

    def _recheck(self, principal: str, server: str) -> None:
        """Look again, now, for a sign-in of ``principal`` to ``server``: one done on another instance
        (``--redis``) ends the principal's sessions here that failed for the lack of it (``changed``)."""
        entry = self._entry(server)
        if entry is None or self.callbacks is None:
            return  # on one instance, a sign-in done says so itself

        async def recheck() -> None:
            key = key_of(entry, principal)
            await self.store.load(key)
            if (self.store.get(key) or {}).get("tokens"):
                self.changed(principal, server, True)

        task = asyncio.get_running_loop().create_task(recheck())
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    def routes(self, guard: Guard, access: Access | None) -> list[BaseRoute]:
        """``/connect/SERVER`` (GET: a ticket's link; DELETE: a principal, with its credentials, forgets its
        sign-in) and ``/oauth/callback``, behind the front's Host and Origin checks."""
        from lazymcp.run.http_checks import refused

        async def connect(request: Request) -> Response:
            if request.method == "DELETE":
                return await refused(guard, access, request) or await self.disconnect(request)
            return guard.check(request) or await self.connect(request)

        async def callback(request: Request) -> Response:
            return guard.check(request) or await self.callback(request)

        return [
            Route("/connect/{server}", connect, methods=["GET", "DELETE"]),
            Route(CALLBACK, callback, methods=["GET"]),
        ]

    def _entry(self, name: str) -> ServerEntry | None:
        return next((e for e in self.entries() if e.name == name and can_sign_in(e)), None)

    async def connect(self, request: Request) -> Response:
        """A ticket's link: the browser is sent to sign in."""
        server = request.path_params["server"]
        read = read_ticket(self.sealer, request.query_params.get("ticket", ""), server)
        refused = "This link is not valid: it was used already, it expired, or it is for another server."
        if read is None:
            return page(403, f"{refused} Call the tool again for a new one.")
        principal = read[0]
        entry = self._entry(server)
        if entry is None:
            return page(404, f"No server {server!r} to sign in to here.")
        if len(self.flows) + sum(self.starting.values()) >= FLOWS_MAX:
            return page(503, "Too many sign-ins under way: try again in a few minutes.")
        if sum(f.principal == principal for f in self.flows.values()) + self.starting[principal] >= FLOWS_EACH:
            return page(503, "Too many sign-ins of yours under way: finish one, or try again in a few minutes.")
        given = request.cookies.get(BROWSER, "")
        browser = given if 32 <= len(given) <= 64 and given.isascii() else secrets.token_urlsafe(32)
        self.starting[principal] += 1  # counted before the ticket is spent: the caps hold across its wait
        try:
            if not await self.used.first(read[1]):  # spent last: a link refused above may be opened again
                return page(403, f"{refused} Call the tool again for a new one.")
            url = await Flow(self, entry, principal, browser).begin()
        except UpstreamError as exc:
            return page(502, f"The sign-in to {server} could not start: {exc.message}")
        finally:
            self.starting[principal] -= 1
            if not self.starting[principal]:
                del self.starting[principal]
        answer = RedirectResponse(url, status_code=303, headers=PRIVATE)
        path, secure = urlsplit(self.redirect_uri).path, self.public_url.startswith("https:")
        answer.set_cookie(BROWSER, browser, int(TICKET_LIFE), path=path, secure=secure, httponly=True, samesite="lax")
        return answer

    async def callback(self, request: Request) -> Response:
        """The authorization server's redirect: the code (or its error) of a sign-in under way here."""
        query = {key: values[0] for key, values in parse_qs(request.url.query).items()}
        flow = self.flows.get(query.get("state", ""))
        if flow is None and self.callbacks is not None:  # under way on another instance: it answers
            forwarded = await self.callbacks.forward(request)
            if forwarded is not None:
                return forwarded
        if flow is None or flow.answer.done():
            return page(400, "This sign-in is not under way here (finished, or never started): use a new link.")
        if not hmac.compare_digest(flow.browser.encode(), request.cookies.get(BROWSER, "").encode()):
            return page(403, "This sign-in was started in another browser: open your own link in this one.")
        if not ("code" in query or "error" in query):  # left under way (and counted), not left running apart
            return page(400, "The authorization server sent neither a code nor an error.")
        self.flows.pop(flow.state, None)
        if asyncio.get_running_loop().time() - flow.started > TICKET_LIFE:
            flow.task.cancel()
            return page(400, "This sign-in took too long: call the tool again for a new link.")
        flow.answer.set_result(query)
        try:
            await asyncio.wait_for(asyncio.shield(flow.task), FINISH_WAIT)
        except UpstreamError as exc:
            return page(502, f"The sign-in to {flow.entry.name} did not succeed: {exc.message}")
        except TimeoutError:
            return page(504, f"The sign-in to {flow.entry.name} did not end within {FINISH_WAIT:g} s.")
        return page(200, f"Signed in to {flow.entry.name}. You may close this page and call the tool again.")

    async def disconnect(self, request: Request) -> Response:
        """The request's principal forgets its sign-in to the server, revoked first where the authorization
        server can revoke it."""
        from lazymcp.run.http_checks import principal_of
        from lazymcp.run.revoke import revoke

        server = request.path_params["server"]
        entry = self._entry(server)
        if entry is None:
            return PlainTextResponse(f"No server {server!r} to sign in to here", 404, headers=PRIVATE)
        principal = principal_of(request).key
        kept = Kept(entry, self.store, principal)
        await self.store.load(kept.key)
        tokens = (self.store.get(kept.key) or {}).get("tokens")
        if tokens:
            try:
                await revoke(entry, tokens, await kept.get_client_info())
            except UpstreamError:
                pass  # forgotten here all the same
        forgotten = self.store.drop(kept.key)
        await self.store.settled()  # gone from where the other instances fetch it before they are told
        await self.done(principal, server, False)
        return PlainTextResponse(
            f"signed out of {server}" if forgotten else f"not signed in to {server}", 200, headers=PRIVATE
        )


def fresh_sessions(front: HttpFront) -> Callable[[str, str, bool], None]:
    """What a sign-in done or forgotten does on ``front``: each session of the principal that holds the
    server (done: one that failed for the lack of it; forgotten: one that runs it with the tokens) ends, so
    that the principal's next request (a 2025 client's new session, or a 2026 request) starts the server
    with the principal's sign-in as it is now; its other sessions go on."""
    from lazymcp.access.policy import Principal
    from lazymcp.gateway.front import Gateway
    from lazymcp.gateway.lifecycle import State

    def ended(principal: str, server: str, signed_in: bool) -> None:
        for side in front.sides():
            core = side.driver.core
            if not isinstance(side.principal, Principal) or side.principal.key != principal:
                continue
            if not isinstance(core, Gateway):
                continue
            states = [s.life.state for s in core.servers if s.name == server]
            if any(state is State.DOWN if signed_in else state is not State.IDLE for state in states):
                done = "signed in to" if signed_in else "signed out of"
                side.driver.interrupt(f"{done} {server}: start a new session", 0)

    return ended


def people_of(
    asked: tuple[str | None, str | None], config: GatewayConfig, access: Access | None, http: bool
) -> People | None:
    """The sign-ins of each principal that ``--public-url`` and ``--secrets-key-file`` (``asked``) ask for;
    None without ``--public-url`` (this user's own sign-ins, from ``lazymcp login``).

    Raises:
        ConfigError: one flag without what it needs (``--http``, principals, the key file for a server that
            may ask for a sign-in), a URL that is not one, or a key file that cannot be used.
    """
    public_url, key_file = asked
    if public_url is None:
        if key_file is not None:
            raise ConfigError("--secrets-key-file is only for --public-url (each principal's own sign-ins)")
        return None
    parts = urlsplit(public_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"--public-url {public_url!r}: expected the gateway's http(s) URL, e.g. https://mcp.example")
    if not http:
        raise ConfigError("--public-url is only for --http: each principal signs in through the gateway's URL")
    if access is None or not access.names_principals:
        raise ConfigError("--public-url signs each principal in: serve with --token-file or --oauth-issuer")
    signing = [entry.name for entry in config.enabled if can_sign_in(entry)]
    if key_file is None:
        if not signing:
            return None
        raise ConfigError(
            f"--public-url: server {signing[0]!r} may ask each principal to sign in, whose tokens are kept sealed:"
            " give --secrets-key-file FILE (at least 32 characters, mode 0600)"
        )
    sealer = read_key(key_file)
    return People(public_url, sealer, sealed_file(sealer, config_directory()), lambda: config.enabled)
