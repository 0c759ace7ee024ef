"""Token exchange at connection time: a remote server whose entry says ``"oauth": {"exchange": ...}`` is
reached, for each principal signed in by OAuth, with a token exchanged for that principal's own
(``lazymcp.access.exchange``), never with the principal's token itself.

``Exchanges`` keeps each exchanged token until shortly before it expires (``MARGIN``), keyed by the
principal, the server and the subject token (a hash of them: no token is a key), at most ``CACHE_SIZE`` of
them, oldest out first; one exchange per key at a time. ``exchanging`` wraps a session's connector: each
request to such a server carries ``Authorization: Bearer`` with the principal's exchanged token, asked
for again when it nears its end. The subject token is the one the session's latest request came with
(``lazymcp.run.http_grants.subject``), read at each request: when the client renews its token, the
next request to the server is made with a token exchanged for the new one. A refused exchange ends the
server's start, or its request, with one line naming the endpoint and the error code, never a token.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx2

from lazymcp.access.answers import ENCODINGS, AnswerTooLong, read_bounded
from lazymcp.access.exchange import NEEDS_PRINCIPAL, ExchangeRefused, ExchangeSettings, exchange_form, read_exchange
from lazymcp.protocol.limits import ISSUER_ANSWER
from lazymcp.run.connections import Connection, Connector, Refused
from lazymcp.run.reach import SignInNeeded, failure_cause, shown
from lazymcp.run.remote import HttpConnection

if TYPE_CHECKING:
    from lazymcp.access.policy import Principal
    from lazymcp.core.entries import ServerEntry

TIMEOUT = 10.0
"""Seconds one exchange gets, in total."""
CACHE_SIZE = 4096
"""Exchanged tokens kept at once."""
MARGIN = 30.0
"""Seconds before its end an exchanged token is exchanged anew (at most a tenth of its life)."""


class Exchanges:
    """Every principal's exchanged tokens on this gateway."""

    def __init__(self, timeout: float = TIMEOUT, cache_size: int = CACHE_SIZE) -> None:
        self.timeout = timeout
        self.cache_size = cache_size
        self.made = 0
        """Exchanges asked of token endpoints so far (for tests and the operator)."""
        self._cache: OrderedDict[bytes, tuple[float, str]] = OrderedDict()
        self._locks: dict[bytes, asyncio.Lock] = {}

    async def token(self, settings: ExchangeSettings, resource: str, principal: str, subject: str) -> str:
        """The token for ``resource`` exchanged for ``principal``'s ``subject`` token, kept or asked for now.

        Raises:
            ExchangeRefused: the endpoint refused, did not answer in time, or answered with no token.
        """
        key = hashlib.sha256(
            json.dumps(
                [settings.token_endpoint, settings.audience, settings.client_id, resource, principal, subject]
            ).encode()
        ).digest()
        lock = self._locks.setdefault(key, asyncio.Lock())
        try:
            async with lock:
                kept = self._cache.get(key)
                if kept is not None and time.monotonic() < kept[0]:
                    self._cache.move_to_end(key)
                    return kept[1]
                token, lasts = await self._exchange(settings, resource, subject)
                self._cache[key] = (time.monotonic() + lasts - min(MARGIN, lasts / 10), token)
                self._cache.move_to_end(key)
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
                return token
        finally:
            if not lock.locked():
                self._locks.pop(key, None)

    async def _exchange(self, settings: ExchangeSettings, resource: str, subject: str) -> tuple[str, float]:
        where = shown(settings.token_endpoint)
        self.made += 1
        auth = httpx2.BasicAuth(settings.client_id, settings.client_secret)
        try:
            async with asyncio.timeout(self.timeout), httpx2.AsyncClient(timeout=self.timeout, auth=auth) as client:
                form = exchange_form(settings, subject, resource)
                async with client.stream(
                    "POST", settings.token_endpoint, data=form, headers={"Accept-Encoding": ENCODINGS}
                ) as response:
                    return read_exchange(response.status_code, await read_bounded(response))
        except TimeoutError:
            raise ExchangeRefused(f"the token exchange at {where} did not answer in {self.timeout:g} s") from None
        except httpx2.HTTPError as exc:
            cause = failure_cause(exc, urlsplit(settings.token_endpoint).hostname or "")
            raise ExchangeRefused(f"the token exchange at {where} failed: {cause}") from None
        except AnswerTooLong:
            raise ExchangeRefused(f"the token exchange at {where} answered over {ISSUER_ANSWER} bytes") from None


class ExchangedBearer(httpx2.Auth):
    """Signs each request with the principal's exchanged token."""

    def __init__(
        self,
        exchanges: Exchanges,
        settings: ExchangeSettings,
        resource: str,
        principal: str,
        subject: Callable[[], str | None],
    ) -> None:
        self.exchanges = exchanges
        self.settings = settings
        self.resource = resource
        self.principal = principal
        self._subject = subject
        """The subject token as it is now: the one of the session's latest request."""

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        subject = self._subject()
        if subject is None:
            raise SignInNeeded(NEEDS_PRINCIPAL)
        try:
            token = await self.exchanges.token(self.settings, self.resource, self.principal, subject)
        except ExchangeRefused as exc:
            raise SignInNeeded(str(exc)) from None
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


def exchanging(
    exchanges: Exchanges, principal: Principal, then: Connector, token: Callable[[], str | None] | None = None
) -> Connector:
    """How ``principal``'s sessions reach their servers: one whose entry exchanges tokens is reached with
    the principal's exchanged token (or ``Refused`` for a principal with no OAuth token); the rest by
    ``then``. ``token``: the subject token as it is at each request (None: ``principal``'s own, fixed)."""
    subject = token if token is not None else lambda: principal.token

    def connector(entry: ServerEntry, *, isolated: bool) -> Connection:
        settings = entry.sign_in.exchange if entry.sign_in is not None else None
        if settings is None or entry.url is None:
            return then(entry, isolated=isolated)
        if subject() is None:
            return Refused(NEEDS_PRINCIPAL)
        auth = ExchangedBearer(exchanges, settings, entry.url, principal.key, subject)
        return HttpConnection(entry.url, entry.headers, sse=entry.transport == "sse", auth=auth)

    return connector
