"""Who may use an HTTP front: the check every request passes first (``Access.check``), anyone (the
loopback default, ``open_access``) or the holders of one shared bearer token (``token_access``). The
OAuth mode is ``lazymcp.access.oauth``'s; which one a front uses, as the flags say, is ``lazymcp.access.auth``'s.

A front calls ``Access.check(request)`` before it reads a request, sends back the response it returns
(a 401, 403 or 503), and mounts ``Access.routes()`` beside ``/mcp``. Nothing here knows MCP sessions.
Refusals follow RFC 6750: 401 with ``WWW-Authenticate: Bearer`` and, when a token was given,
``error="invalid_token"``.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from lazymcp.access.policy import DEFAULT_NAME
from lazymcp.protocol.errors import ConfigError

PRINCIPAL_KEY = "lazymcp.principal"
"""Where ``TokenAccess`` leaves the name of the token a request carried, in the request's ASGI scope."""


class Access:
    """Who may use an HTTP front. This base lets everyone in: ``open_access()``."""

    names_principals = False
    """Does it tell its users apart (a token's name, an OAuth subject), each a principal of its own?"""

    async def check(self, request: Request) -> Response | None:
        """None lets the request in; else the refusal to send (401, 403 or 503)."""
        return None

    def routes(self) -> list[BaseRoute]:
        """Routes to mount beside ``/mcp`` (the OAuth mode's protected resource metadata)."""
        return []

    def describe(self) -> str:
        """A few words for the start-up line."""
        return "no authentication"

    def principal_names(self) -> frozenset[str] | None:
        """The names of the principals it lets in, when it knows them all beforehand (bearer tokens)."""
        return None

    async def aclose(self) -> None:
        """Close connections to the issuer (call it as the front stops)."""


class TokenAccess(Access):
    """Bearer tokens, each with its principal's name; a request's token is compared with every one in
    constant time, so neither which token matched nor how much of one did shows in the time taken."""

    names_principals = True

    def __init__(self, tokens: Sequence[tuple[str, str]]) -> None:
        self._tokens = _checked(tokens)

    async def check(self, request: Request) -> Response | None:
        given = bearer_token(request.headers.get("authorization"))
        if given is not None:
            found: str | None = None
            for name, token in self._tokens:
                if hmac.compare_digest(given.encode(), token) and found is None:
                    found = name
            if found is not None:
                request.scope[PRINCIPAL_KEY] = found
                return None
        params = {"realm": "lazymcp"}
        if given is not None:
            params |= {"error": "invalid_token", "error_description": "not the token of this server"}
        return refusal(401, params)

    def principal_names(self) -> frozenset[str] | None:
        return frozenset(name for name, _ in self._tokens)

    def replace(self, tokens: Sequence[tuple[str, str]]) -> set[str]:
        """Take ``tokens`` from now on (the token file changed); the names that lost a token: their
        sessions must end, since a session is bound to its principal's name, not to the token.

        Raises:
            ConfigError: a token is empty (the tokens in force are kept).
        """
        kept, self._tokens = self._tokens, _checked(tokens)
        return {name for name, token in kept if (name, token) not in self._tokens}

    def describe(self) -> str:
        names = {name for name, _ in self._tokens}
        return "a bearer token" if names == {DEFAULT_NAME} else f"bearer tokens of {len(names)} principals"


def _checked(tokens: Sequence[tuple[str, str]]) -> list[tuple[str, bytes]]:
    if not tokens or any(not token.strip() for _, token in tokens):
        raise ConfigError("the bearer token is empty")
    return [(name, token.strip().encode()) for name, token in tokens]


def open_access() -> Access:
    """No check: anyone who can connect gets in (the loopback default)."""
    return Access()


def token_access(token: str | Sequence[tuple[str, str]]) -> Access:
    """Requests must carry ``Authorization: Bearer <token>``: ``token``, or one of the (name, token) pairs,
    whose name is then the request's principal (a lone ``token``'s is ``default``).

    Raises:
        ConfigError: a token is empty.
    """
    return TokenAccess([(DEFAULT_NAME, token)] if isinstance(token, str) else token)


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None without one."""
    scheme, _, token = (header or "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def refusal(status: int, params: Mapping[str, str]) -> Response:
    """A refusal with its ``WWW-Authenticate: Bearer`` challenge (``params``: the challenge's parameters)."""
    challenge = "Bearer " + ", ".join(f'{name}="{value}"' for name, value in params.items())
    body = {key: params[key] for key in ("error", "error_description") if key in params}
    return JSONResponse(body or {"error": "unauthorized"}, status_code=status, headers={"WWW-Authenticate": challenge})
