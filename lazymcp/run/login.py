"""``lazymcp login`` and ``lazymcp logout``: a person signs in to a remote server, or out of it.

The sign-in is the SDK's (``mcp.client.auth``): an MCP ``initialize`` sent without a token draws the
server's 401, whose ``WWW-Authenticate`` leads to its protected resource metadata, then its
authorization server's; the client is the entry's own, its metadata document or a registration made now;
the browser is sent to the authorization endpoint (authorization code with PKCE, and the ``resource``
parameter) with a loopback redirect (RFC 8252): ``Loopback`` listens on 127.0.0.1 at a port of its own
for the one redirect that brings the code (or the authorization server's ``error``) back with the
sign-in's ``state``, for ``wait`` seconds at most; any other request is answered 400 (404 off
``/callback``) and the wait goes on. The tokens are then kept (``lazymcp.access.tokens``) and the
``initialize`` is sent again with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from lazymcp.access.tokens import TokenStore
from lazymcp.core.entries import ServerEntry
from lazymcp.protocol.errors import ConfigError, UpstreamError
from lazymcp.run.signin import Kept, can_sign_in, sign_in

if TYPE_CHECKING:
    from mcp.client.auth import AuthorizationCodeResult

LOGIN_WAIT = 300.0
"""Seconds ``lazymcp login`` waits for the browser to come back with the code."""
REQUEST_LIMIT = 16384
"""Bytes of the redirect's request line and headers the loopback reads at most."""
ERROR_LIMIT = 100
"""Characters of a redirect's ``error`` that a failure shows at most."""
CALLBACK = "/callback"
DONE_PAGE = b"<!doctype html><title>lazymcp</title><p>Signed in. You may close this page."
FAILED_PAGE = b"<!doctype html><title>lazymcp</title><p>The sign-in did not succeed: see the terminal."


class Loopback:
    """The loopback redirect's listener: 127.0.0.1, a port of its own, one answer awaited."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()
        self.server: asyncio.Server | None = None
        self.port = 0
        self.state: str | None = None
        """The state of the sign-in under way (``expect``); None before the browser is sent."""

    async def __aenter__(self) -> Loopback:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=REQUEST_LIMIT)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 5)

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK}"

    def expect(self, authorization_url: str) -> None:
        """Take the ``state`` the browser is sent with: only a redirect that brings it back is the answer."""
        self.state = parse_qs(urlsplit(authorization_url).query).get("state", [None])[0]

    def _take(self, target: str) -> bytes:
        """The status of the answer to a request for ``target``; the redirect that carries this sign-in's
        state with a code or an error ends the wait, anything else is answered and the wait goes on."""
        parts = urlsplit(target)
        if parts.path != CALLBACK:
            return b"404 Not Found"
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        given = query.get("state", "")
        ours = self.state is not None and secrets.compare_digest(given.encode(), self.state.encode())
        if not ours or not ("code" in query or "error" in query) or self.answer.done():
            return b"400 Bad Request"
        self.answer.set_result(query)
        return b"200 OK"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            target = head.split(b" ", 2)[1].decode("ascii", "replace") if head.count(b" ") >= 2 else ""
            status = self._take(target)
            signed = status == b"200 OK" and "code" in self.answer.result()
            body = DONE_PAGE if signed else FAILED_PAGE
            writer.write(
                b"HTTP/1.1 " + status + b"\r\ncontent-type: text/html; charset=utf-8\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
            )
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, IndexError):
            pass
        finally:
            writer.close()

    async def code(self, wait: float) -> AuthorizationCodeResult:
        """The code the browser brings back (with its state and issuer), within ``wait`` seconds.

        Raises:
            UpstreamError: none came in time, or the authorization server answered with an error.
        """
        return await code_within(self.answer, wait)


async def login(
    entry: ServerEntry,
    store: TokenStore,
    *,
    show: Callable[[str], None],
    browser: bool = True,
    wait: float = LOGIN_WAIT,
) -> None:
    """Sign in to ``entry``'s server and keep the tokens; ``show`` is told the URL to open.

    Raises:
        ConfigError: not a remote server, or one whose entry sends its own ``Authorization``.
        UpstreamError: the server cannot be reached, the sign-in failed or did not come back in time.
    """
    if not can_sign_in(entry):
        raise ConfigError(f"server {entry.name!r} is not a remote server that signs in (no URL, or its own token)")
    assert entry.url is not None
    kept = Kept(entry, store)
    async with Loopback() as loopback:

        async def redirect(url: str) -> None:
            loopback.expect(url)
            show(url)
            if browser:
                await asyncio.to_thread(webbrowser.open, url)

        async def callback() -> AuthorizationCodeResult:
            return await loopback.code(wait)

        kept.forget_client()  # a registration of an earlier sign-in names another loopback port
        await sign_in(entry, kept, loopback.redirect_uri, redirect, callback)


async def code_within(answer: asyncio.Future[dict[str, str]], wait: float) -> AuthorizationCodeResult:
    """The code a redirect brought (with its state and issuer) once ``answer`` has its query, within
    ``wait`` seconds (``answer`` is left as it is when the wait ends).

    Raises:
        UpstreamError: none came in time, or the authorization server answered with an error.
    """
    from mcp.client.auth import AuthorizationCodeResult

    try:
        query = await asyncio.wait_for(asyncio.shield(answer), wait)
    except TimeoutError:
        raise UpstreamError(f"no sign-in came back within {wait:g} s") from None
    if "code" not in query:
        raise UpstreamError(f"the authorization server refused the sign-in: {error_code(query['error'])}")
    return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


def error_code(value: str) -> str:
    """An ``error`` the redirect brought, as one short line (RFC 6749 error codes are printable ASCII)."""
    shown_code = "".join(c if c.isascii() and c.isprintable() else "?" for c in value[:ERROR_LIMIT])
    return shown_code + ("..." if len(value) > ERROR_LIMIT else "")


async def logout(entry: ServerEntry, store: TokenStore, say: Callable[[str], None]) -> bool:
    """Revoke the sign-in to ``entry``'s server where its authorization server can (``lazymcp.run.revoke``),
    then forget it, even when the revocation failed (``say`` is told so in one line); False when there was
    none."""
    from lazymcp.run.revoke import revoke

    if entry.url is None:
        raise ConfigError(f"server {entry.name!r} is not a remote server")
    kept = Kept(entry, store)
    tokens = (store.get(kept.key) or {}).get("tokens")
    if tokens:
        try:
            await revoke(entry, tokens, await kept.get_client_info())
        except UpstreamError as exc:
            say(f"lazymcp: the tokens were not revoked at the server ({exc.message}); forgotten here only")
    return store.drop(kept.key)
