"""A remote server's sign-in as its connections use it: the SDK's OAuth client (``mcp.client.auth``) over the
sign-ins kept by ``lazymcp.access.tokens``.

``Kept`` is the SDK's ``TokenStorage`` for one server: tokens (with when they expire) and the client's
registration, and the protected resource's and authorization server's metadata the sign-in found (where
a refresh goes), kept under the server's URL and resource; a client registered beforehand (the entry's
``oauth.clientId``) comes from the entry, never from the store. ``connection_auth`` is what a gateway's
or proxy's connection to the server signs its requests with: the SDK's provider, which sends the kept
access token and refreshes it when it expires, but never starts a sign-in of its own (that takes a
person: ``lazymcp login``, ``lazymcp.run.login``). When the server refuses the tokens and no refresh
helps, the request ends with ``SignInNeeded``, which ``lazymcp.run.reach`` turns into the line that
says to sign in again.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlsplit

import httpx2

from lazymcp.access.answers import AnswerTooLong, BoundedAnswers
from lazymcp.access.tokens import SignIns, TokenStore, sign_in_key, state_of
from lazymcp.core.entries import ServerEntry
from lazymcp.protocol.errors import UpstreamError
from lazymcp.run.reach import SignInNeeded

if TYPE_CHECKING:
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

CLIENT_NAME = "lazymcp"
EARLY = 60.0
"""Seconds before its given expiry an access token is refreshed at most (a quarter of its life at most): a
server's clock, or its rounding, may end it a little before lazymcp would."""
METADATA = (("resource_metadata", "protected_resource_metadata"), ("authorization_server", "oauth_metadata"))
"""The discovered metadata a sign-in keeps: its key in the store, and the SDK context's attribute."""
UNSET_REDIRECT = "http://127.0.0.1/callback"
"""The redirect URI a connection's provider names (it never sends a person anywhere)."""


def _not_ended_here(record: logging.LogRecord) -> bool:
    """Keep the SDK's log of a failed flow, but not of the ends lazymcp puts to one (a sign-in needed, a
    login's redirect that failed or never came, an answer past its bound): their line is said."""
    return not (record.exc_info and isinstance(record.exc_info[1], SignInNeeded | UpstreamError | AnswerTooLong))


logging.getLogger("mcp.client.auth.oauth2").addFilter(_not_ended_here)


def login_hint(name: str) -> str:
    return f"sign in with `lazymcp login {name}`"


def key_of(entry: ServerEntry, principal: str = "") -> str:
    """Where ``entry``'s sign-in is kept: by its URL and the resource (RFC 8707) that URL names."""
    from mcp.shared.auth_utils import resource_url_from_server_url

    assert entry.url is not None
    return sign_in_key(entry.url, resource_url_from_server_url(entry.url), principal)


def can_sign_in(entry: ServerEntry) -> bool:
    """A remote server whose entry sends no ``Authorization`` header of its own, nor exchanges tokens."""
    if entry.sign_in is not None and entry.sign_in.exchange is not None:
        return False  # a token exchanged for each principal: nothing to sign in to
    return entry.url is not None and not any(key.lower() == "authorization" for key in entry.headers)


def sign_in_state(entry: ServerEntry, store: TokenStore, principal: str = "") -> str:
    """``signed in``, ``expired`` or ``sign-in needed`` (``lazymcp.access.tokens.state_of``)."""
    return state_of(store.get(key_of(entry, principal)))


def sign_in_status(entry: ServerEntry, reason: str = "", store: TokenStore | None = None) -> str | None:
    """What the status says of ``entry``'s sign-in: ``signed in`` or ``expired`` when one is kept,
    ``sign-in needed`` when none is and its server asked for one (its failure's ``reason`` says so);
    None for a server that does not sign in."""
    if not can_sign_in(entry):
        return None
    state = sign_in_state(entry, store or TokenStore.default())
    if state == "sign-in needed" and "lazymcp login" not in reason:
        return None
    return state


class Kept:
    """The SDK's ``TokenStorage`` of one server's sign-in."""

    def __init__(self, entry: ServerEntry, store: SignIns, principal: str = "") -> None:
        self.entry = entry
        self.store = store
        self.key = key_of(entry, principal)
        self.context: Any = None
        """The SDK provider's context, whose expiry ``set_tokens`` brings forward."""
        self.anew = False
        """A sign-in anew (``sign_in``): the tokens kept are not the SDK's to use, until it keeps new ones."""

    def _kept(self) -> dict[str, Any]:
        return self.store.get(self.key) or {}

    def expires_at(self) -> float | None:
        value = self._kept().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        tokens = None if self.anew else self._kept().get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.anew = False
        kept = self._kept()
        kept["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        life = tokens.expires_in
        kept["expires_at"] = time.time() + life - min(EARLY, life / 4) if life is not None else None
        kept.update(self._discovered())
        self.store.put(self.key, kept)
        if self.context is not None:  # the SDK set its own expiry just before: refresh a little earlier
            self.context.token_expiry_time = kept["expires_at"]

    async def rotated(self, sent: httpx2.Request, answer: httpx2.Response) -> httpx2.Response:
        """``answer`` to one of the OAuth client's own requests, unless it refuses a refresh because another
        process sharing this sign-in (another client's lazymcp, another gateway instance) refreshed first and
        so spent the refresh token, as servers that rotate them do: then the tokens that process kept, as if
        this refresh had got them. Kept tokens whose access token has expired too are not taken. (The
        refusal itself is left to the HTTP client, which reads it once the flow has gone on.)"""
        if answer.status_code not in (400, 401) or sent.method != "POST":
            return answer
        form = parse_qs(sent.content.decode(errors="replace"))
        if form.get("grant_type") != ["refresh_token"]:
            return answer
        load: Callable[[str], Awaitable[None]] | None = getattr(self.store, "load", None)
        if load is not None:  # kept elsewhere (Redis): fetched as it is now
            await load(self.key)
        kept = self._kept()
        tokens, expires = kept.get("tokens"), kept.get("expires_at")
        if not isinstance(tokens, dict) or cast(dict[str, Any], tokens).get("refresh_token") in (
            None,
            *form.get("refresh_token", []),
        ):
            return answer  # nothing newer is kept: the refusal stands
        life = float(expires) - time.time() if isinstance(expires, int | float) else None
        if life is not None and life <= 1:
            return answer
        lasting = {} if life is None else {"expires_in": int(life)}
        return httpx2.Response(200, json={**cast(dict[str, Any], tokens), **lasting}, request=sent)

    def _discovered(self) -> dict[str, Any]:
        """The metadata the sign-in found (RFC 9728 and RFC 8414), to keep beside its tokens."""
        found: dict[str, Any] = {}
        for key, name in METADATA:
            value = getattr(self.context, name, None)
            if value is not None:
                found[key] = value.model_dump(mode="json", exclude_none=True)
        return found

    def restore_discovered(self) -> None:
        """Give the provider's context the metadata kept at the sign-in: without it, the SDK would refresh
        at the server's own origin (``/token``), not at the authorization server's token endpoint."""
        from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

        kept = self._kept()
        for (key, name), kind in zip(METADATA, (ProtectedResourceMetadata, OAuthMetadata), strict=True):
            value = kept.get(key)
            if isinstance(value, dict) and self.context is not None:
                with contextlib.suppress(ValueError):  # kept by another version: discovered anew on a 401
                    setattr(self.context, name, kind.model_validate(value))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        given = self.entry.sign_in
        if given is not None and given.client_id is not None:
            return OAuthClientInformationFull(
                client_id=given.client_id,
                client_secret=given.client_secret,
                token_endpoint_auth_method="client_secret_post" if given.client_secret else "none",
            )
        client = self._kept().get("client")
        return OAuthClientInformationFull.model_validate(client) if client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        given = self.entry.sign_in
        if given is not None and given.client_id is not None:
            return  # the entry's own client: its secret stays in the configuration
        kept = self._kept()
        kept["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self.store.put(self.key, kept)

    def forget_client(self) -> None:
        """Drop a registration kept from an earlier sign-in (its redirect URI named another port)."""
        kept = self._kept()
        if kept.pop("client", None) is not None:
            self.store.put(self.key, kept)


@functools.cache
def _entry_scoped() -> type[OAuthClientMetadata]:
    """Client metadata whose ``scope`` is the entry's ``oauth.scopes``, kept: the SDK replaces the metadata's
    scope with what the server's 401 or its metadata names (nothing, when they name none), so the entry's own
    would never be asked for."""
    from mcp.shared.auth import OAuthClientMetadata

    class EntryScopedMetadata(OAuthClientMetadata):
        def __setattr__(self, name: str, value: Any) -> None:
            if name != "scope":
                super().__setattr__(name, value)

    return EntryScopedMetadata


def provider(
    entry: ServerEntry,
    kept: Kept,
    redirect_uri: str,
    on_redirect: Any,
    on_callback: Any,
) -> OAuthClientProvider:
    """The SDK's OAuth client for ``entry``: its client metadata, with ``redirect_uri`` (a loopback one)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    given = entry.sign_in
    assert entry.url is not None
    scoped = given is not None and bool(given.scopes)
    metadata = (_entry_scoped() if scoped else OAuthClientMetadata).model_validate(
        {
            "client_name": CLIENT_NAME,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none" if given is None or not given.client_secret else "client_secret_post",
            "scope": " ".join(given.scopes) if given is not None and scoped else None,
        }
    )
    metadata_url = given.client_metadata_url if given is not None and given.client_id is None else None
    made = OAuthClientProvider(entry.url, metadata, kept, on_redirect, on_callback, client_metadata_url=metadata_url)
    kept.context = made.context
    return made


def connection_auth(
    entry: ServerEntry,
    store: SignIns | None = None,
    principal: str = "",
    how: str | None = None,
    again: str | None = None,
) -> Any | None:
    """What a connection to ``entry`` signs its requests with; None when it has no sign-in kept (or sends
    its own ``Authorization``): its server's 401 then says to sign in. ``how`` and ``again``: how to sign
    in, and in again once refused (default: ``lazymcp login``)."""
    if not can_sign_in(entry):
        return None
    kept = Kept(entry, store or TokenStore.default(), principal)
    if not kept.store.get(kept.key):
        return None
    again = again or f"sign in again with `lazymcp login {entry.name}`"

    async def refused(url: str) -> None:
        raise SignInNeeded(f"it refused the sign-in kept for it: {again}")

    async def never() -> AuthorizationCodeResult:
        raise SignInNeeded(how or login_hint(entry.name))

    auth = provider(entry, kept, UNSET_REDIRECT, refused, never)
    auth.context.token_expiry_time = kept.expires_at()  # the SDK knows it only from a token it was sent
    kept.restore_discovered()
    return BoundedAnswers(auth, kept.rotated)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "lazymcp", "version": "login"},
    },
}
"""What a sign-in sends the server: its 401 starts the SDK's flow, and it is sent again once signed in."""


async def sign_in(entry: ServerEntry, kept: Kept, redirect_uri: str, on_redirect: Any, on_callback: Any) -> None:
    """Sign in to ``entry``'s server anew, whatever ``kept`` holds, through the SDK's flow (``provider``), and
    keep the tokens in ``kept``: ``on_redirect`` is handed the authorization URL, ``on_callback`` brings back
    the code that came to ``redirect_uri``.

    Raises:
        UpstreamError: the server cannot be reached, or the sign-in failed (said without any value).
    """
    from lazymcp.run.reach import TIMEOUT, failure_cause, shown

    assert entry.url is not None
    kept.anew = True  # whatever is kept: the SDK loads the kept tokens at its first request, and would use them
    auth = provider(entry, kept, redirect_uri, on_redirect, on_callback)
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
    async with httpx2.AsyncClient(auth=BoundedAnswers(auth), timeout=TIMEOUT, headers=headers) as client:
        try:
            response = await client.post(entry.url, json=INITIALIZE)
        except httpx2.TransportError as exc:
            host = urlsplit(entry.url).hostname or ""
            raise UpstreamError(f"cannot reach {shown(entry.url)}: {failure_cause(exc, host)}") from None
        except AnswerTooLong as exc:
            raise UpstreamError(f"the sign-in to {shown(entry.url)} failed: {exc}") from None
        except UpstreamError:
            raise
        except Exception as exc:
            raise UpstreamError(f"the sign-in to {shown(entry.url)} failed: {_said(exc)}") from None
    if response.status_code >= 400:
        raise UpstreamError(f"{shown(entry.url)} answered HTTP {response.status_code} after the sign-in")


def _said(exc: BaseException) -> str:
    """What an OAuth failure says, without any value: the SDK's messages about tokens may hold a body."""
    text = str(exc).split(":")[0].strip()
    return text if text and len(text) < 120 else type(exc).__name__
