"""Who may use an HTTP front: the check every request passes first (``Access.check``), anyone (the
loopback default, ``open_access``) or the holders of one shared bearer token (``token_access``). The
OAuth mode is ``lazymcp.oauth``'s; which one a front uses, as the flags say, is ``lazymcp.auth``'s.

A front calls ``Access.check(request)`` before it reads a request, sends back the response it returns
(a 401, 403 or 503), and mounts ``Access.routes()`` beside ``/mcp``. Nothing here knows MCP sessions.
Refusals follow RFC 6750: 401 with ``WWW-Authenticate: Bearer`` and, when a token was given,
``error="invalid_token"``.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from lazymcp.errors import ConfigError


class Access:
    """Who may use an HTTP front. This base lets everyone in: ``open_access()``."""

    async def check(self, request: Request) -> Response | None:
        """None lets the request in; else the refusal to send (401, 403 or 503)."""
        return None

    def routes(self) -> list[BaseRoute]:
        """Routes to mount beside ``/mcp`` (the OAuth mode's protected resource metadata)."""
        return []

    def describe(self) -> str:
        """A few words for the start-up line."""
        return "no authentication"

    async def aclose(self) -> None:
        """Close connections to the issuer (call it as the front stops)."""


class TokenAccess(Access):
    """One shared bearer token, compared in constant time."""

    def __init__(self, token: str) -> None:
        if not token.strip():
            raise ConfigError("the bearer token is empty")
        self._token = token.strip().encode()

    async def check(self, request: Request) -> Response | None:
        given = bearer_token(request.headers.get("authorization"))
        if given is not None and hmac.compare_digest(given.encode(), self._token):
            return None
        params = {"realm": "lazymcp"}
        if given is not None:
            params |= {"error": "invalid_token", "error_description": "not the token of this server"}
        return refusal(401, params)

    def describe(self) -> str:
        return "a bearer token"


def open_access() -> Access:
    """No check: anyone who can connect gets in (the loopback default)."""
    return Access()


def token_access(token: str) -> Access:
    """Requests must carry ``Authorization: Bearer <token>``.

    Raises:
        ConfigError: the token is empty.
    """
    return TokenAccess(token)


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
