"""A sign-in under way on a team's gateway (``Flow``: from a ticket's link to the callback, the SDK's flow in a
task of its own), and a remote server reached with one principal's sign-in (``SignedIn``): the parts of
``lazymcp.run.people`` that speak to the server and its authorization server."""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from lazymcp.access.sealed import TICKET_LIFE
from lazymcp.protocol.errors import UpstreamError
from lazymcp.run.login import code_within
from lazymcp.run.remote import HttpConnection
from lazymcp.run.signin import Kept, connection_auth, key_of, sign_in

if TYPE_CHECKING:
    from mcp.client.auth import AuthorizationCodeResult

    from lazymcp.core.entries import ServerEntry

REDIRECT_WAIT = 30.0
"""Seconds ``/connect`` waits for the sign-in to reach the authorization endpoint."""
FINISH_WAIT = 60.0
"""Seconds ``/oauth/callback`` waits for the tokens once the code came."""
PRIVATE = {"cache-control": "no-store", "referrer-policy": "no-referrer"}
"""The headers of every answer to a browser: a page or a redirect that a ticket or a code led to."""


class Sealed(Protocol):
    """Where each principal's sign-ins are kept, sealed: a file (``lazymcp.access.sealed.SealedFile``) or,
    with ``--redis``, Redis (``lazymcp.run.people_redis``)."""

    async def load(self, key: str) -> None:
        """Fetch what is kept under ``key``, so that ``get`` has it as it is now."""
        ...

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: dict[str, Any]) -> None: ...

    def drop(self, key: str) -> bool: ...

    async def settled(self) -> None:
        """Return once what was put or dropped is written."""
        ...


class Signings(Protocol):
    """What a sign-in under way needs of the gateway's sign-ins (``lazymcp.run.people.People``)."""

    store: Sealed
    flows: dict[str, Flow]
    running: set[asyncio.Task[None]]

    @property
    def redirect_uri(self) -> str: ...

    def how(self, server: str, again: bool = False) -> str: ...

    async def note(self, state: str) -> None: ...

    async def done(self, principal: str, server: str, signed_in: bool) -> None: ...


class Elsewhere(Protocol):
    """The instances a sign-in's callback may come to (``lazymcp.run.people_redis.Callbacks``)."""

    async def note(self, state: str) -> None:
        """A sign-in under way on this instance."""
        ...

    async def forward(self, request: Request) -> Response | None:
        """The answer of the instance a callback's sign-in is under way on; None: this one, or none."""
        ...


class Flow:
    """One principal's sign-in to one server, under way: the SDK's flow in a task of its own, from the
    ticket's link to the callback."""

    def __init__(self, people: Signings, entry: ServerEntry, principal: str, browser: str) -> None:
        loop = asyncio.get_running_loop()
        self.people = people
        self.entry = entry
        self.principal = principal
        self.browser = browser
        """The value of the cookie of the browser that opened the link (``lazymcp.run.people.BROWSER``)."""
        self.started = loop.time()
        self.url: asyncio.Future[str] = loop.create_future()
        self.answer: asyncio.Future[dict[str, str]] = loop.create_future()
        self.state = ""
        self.task: asyncio.Task[None] = loop.create_task(self._run())
        people.running.add(self.task)
        self.task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self.people.running.discard(task)
        self.people.flows.pop(self.state, None)
        if not task.cancelled():
            task.exception()  # said by the page that waits for it, if any

    async def begin(self) -> str:
        """The authorization URL to send the browser to.

        Raises:
            UpstreamError: the sign-in failed before it, or did not reach it within ``REDIRECT_WAIT``.
        """
        await asyncio.wait({self.url, self.task}, timeout=REDIRECT_WAIT, return_when=asyncio.FIRST_COMPLETED)
        if self.url.done():
            return self.url.result()
        if self.task.done() and not self.task.cancelled():
            failed = self.task.exception()
            raise failed if isinstance(failed, UpstreamError) else UpstreamError("the sign-in failed")
        self.task.cancel()
        raise UpstreamError(f"the authorization server was not reached within {REDIRECT_WAIT:g} s")

    async def _run(self) -> None:
        people = self.people
        kept = Kept(self.entry, people.store, self.principal)
        await people.store.load(kept.key)
        client: object = (people.store.get(kept.key) or {}).get("client")
        if isinstance(client, dict) and cast(dict[str, object], client).get("redirect_uris") != [people.redirect_uri]:
            kept.forget_client()  # registered for another --public-url

        async def redirect(url: str) -> None:
            self.state = parse_qs(urlsplit(url).query).get("state", [""])[0]
            people.flows[self.state] = self
            await people.note(self.state)
            self.url.set_result(url)

        async def callback() -> AuthorizationCodeResult:
            return await code_within(self.answer, TICKET_LIFE)

        await sign_in(self.entry, kept, people.redirect_uri, redirect, callback)
        await people.store.settled()
        await people.done(self.principal, self.entry.name, True)


class SignedIn:
    """A remote server reached with one principal's sign-in, fetched as it is now before it connects."""

    def __init__(self, people: Signings, entry: ServerEntry, principal: str) -> None:
        self.people = people
        self.entry = entry
        self.principal = principal
        self.on_pressure: Callable[[bool], None] = lambda paused: None
        self.inner: HttpConnection | None = None

    async def start(self, on_line: Callable[[bytes], None], on_gone: Callable[[str], None]) -> None:
        entry, store = self.entry, self.people.store
        assert entry.url is not None
        await store.load(key_of(entry, self.principal))
        how = self.people.how(entry.name)
        auth = connection_auth(entry, store, self.principal, how, self.people.how(entry.name, again=True))
        self.inner = HttpConnection(entry.url, entry.headers, sse=entry.transport == "sse", auth=auth, sign_in=how)
        self.inner.on_pressure = self.on_pressure
        await self.inner.start(on_line, on_gone)

    def send(self, line: bytes) -> None:
        if self.inner is not None:
            self.inner.send(line)

    @property
    def buffered(self) -> int:
        return self.inner.buffered if self.inner is not None else 0

    def pause(self, paused: bool) -> None:
        if self.inner is not None:
            self.inner.pause(paused)

    async def stop(self) -> None:
        if self.inner is not None:
            await self.inner.stop()


def page(status: int, text: str) -> Response:
    """A short page saying ``text`` (never a value: the pages name servers and steps only)."""
    body = f"<!doctype html><title>lazymcp</title><p>{html.escape(text)}"
    return HTMLResponse(body, status_code=status, headers=PRIVATE)
