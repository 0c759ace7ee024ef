"""Revoking a sign-in's tokens at the authorization server (RFC 7009) before ``lazymcp logout`` forgets them.

The server's protected resource metadata (RFC 9728) names its authorization server, whose metadata
(RFC 8414) may name a ``revocation_endpoint``; the refresh token, then the access token, are sent there
with the client's credentials (the entry's client, its metadata document's URL or the registration kept).
A server without such an endpoint has nothing to revoke at. The whole exchange is bounded by
``REVOKE_WAIT``, each answer by ``ISSUER_ANSWER``; whatever goes wrong is said in one line without any value
in it, and the sign-in is forgotten locally all the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from lazymcp.access.answers import ENCODINGS, AnswerTooLong, bound_answer
from lazymcp.core.entries import ServerEntry
from lazymcp.protocol.errors import UpstreamError
from lazymcp.run.reach import failure_cause, shown

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import OAuthClientInformationFull

REVOKE_WAIT = 5.0
"""Seconds the revocation of a sign-in's tokens takes at most, discovery included."""


async def _first_json(client: httpx2.AsyncClient, urls: list[str]) -> dict[str, Any] | None:
    """The first JSON object one of ``urls`` answers with (200)."""
    for url in urls:
        answer = await client.get(url)
        if answer.status_code == 200:
            try:
                value = answer.json()
            except ValueError:
                continue
            if isinstance(value, dict):
                return value  # pyright: ignore[reportUnknownVariableType]
    return None


async def revocation_endpoint(client: httpx2.AsyncClient, url: str) -> str | None:
    """The revocation endpoint of the authorization server of the MCP server at ``url``; None when none."""
    from mcp.client.auth.utils import (
        build_oauth_authorization_server_metadata_discovery_urls,
        build_protected_resource_metadata_discovery_urls,
    )

    resource = await _first_json(client, build_protected_resource_metadata_discovery_urls(None, url))
    servers = resource.get("authorization_servers") if resource else None
    issuer = str(cast(list[object], servers)[0]) if isinstance(servers, list) and servers else None
    metadata = await _first_json(client, build_oauth_authorization_server_metadata_discovery_urls(issuer, url))
    endpoint = metadata.get("revocation_endpoint") if metadata else None
    return endpoint if isinstance(endpoint, str) and endpoint.startswith(("https://", "http://")) else None


async def revoke(entry: ServerEntry, tokens: dict[str, Any], client_info: OAuthClientInformationFull | None) -> bool:
    """Revoke ``tokens`` at ``entry``'s authorization server; False when it names no revocation endpoint.

    Raises:
        UpstreamError: the server could not be reached, took too long or refused a revocation.
    """
    import anyio
    import httpx2

    assert entry.url is not None
    host = urlsplit(entry.url).hostname or ""
    try:
        with anyio.fail_after(REVOKE_WAIT):
            hooks, asked = {"response": [bound_answer]}, {"accept-encoding": ENCODINGS}
            async with httpx2.AsyncClient(
                timeout=REVOKE_WAIT, follow_redirects=False, event_hooks=hooks, headers=asked
            ) as client:
                endpoint = await revocation_endpoint(client, entry.url)
                if endpoint is None:
                    return False
                for hint in ("refresh_token", "access_token"):
                    if tokens.get(hint):
                        await _revoke_one(client, endpoint, str(tokens[hint]), hint, client_info)
    except TimeoutError:
        raise UpstreamError(f"{shown(entry.url)} did not answer within {REVOKE_WAIT:g} s") from None
    except httpx2.TransportError as exc:
        raise UpstreamError(f"cannot reach {shown(entry.url)}: {failure_cause(exc, host)}") from None
    except AnswerTooLong as exc:
        raise UpstreamError(str(exc)) from None
    return True


async def _revoke_one(
    client: httpx2.AsyncClient, endpoint: str, token: str, hint: str, info: OAuthClientInformationFull | None
) -> None:
    form = {"token": token, "token_type_hint": hint}
    auth: tuple[str, str] | None = None
    if info is not None and info.client_id:
        form["client_id"] = info.client_id
        if info.client_secret and info.token_endpoint_auth_method == "client_secret_basic":
            auth = (info.client_id, info.client_secret)
        elif info.client_secret:
            form["client_secret"] = info.client_secret
    if auth is None:
        answer = await client.post(endpoint, data=form)
    else:
        answer = await client.post(endpoint, data=form, auth=auth)
    if answer.status_code != 200:  # RFC 7009: 200 also for a token it no longer knows
        raise UpstreamError(f"the revocation endpoint at {shown(endpoint)} answered HTTP {answer.status_code}")
