"""A streamable-HTTP MCP server that is its own OAuth authorization server (the SDK's ``mcp.server.auth``) and
tells its users apart: ``people_upstream.py PORT EXPIRY`` serves ``/mcp`` with one tool, ``whoami``, which
answers with the subject of the token it was called with, behind bearer tokens that last ``EXPIRY`` seconds,
with dynamic client registration, PKCE, refresh tokens, the ``resource`` parameter and token revocation.

Its authorization endpoint sends the browser to a sign-in page (``GET /login``, a form with a ``user``
field); ``POST /login`` signs that user in and redirects to the client with a code whose subject is that
user. ``POST /revoke-all`` revokes every token, ``POST /revoke-subject?subject=USER`` those of one user;
``GET /issued`` counts the tokens issued."""

import html
import secrets
import sys
import time
from typing import Any, cast

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

PORT = int(sys.argv[1])
EXPIRY = int(sys.argv[2])
REVOKES = sys.argv[3:4] != ["no-revoke"]
"""``people_upstream.py PORT EXPIRY no-revoke``: no revocation endpoint (a revoked sign-in's tokens stay good)."""
BASE = f"http://127.0.0.1:{PORT}"


class Provider:
    """Clients, sign-ins under way, codes and tokens in memory; every token is a random string."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.issued = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        pending = secrets.token_urlsafe(16)
        self.pending[pending] = (client.client_id or "", params)
        return f"{BASE}/login?pending={pending}"

    def signed_in(self, pending: str, user: str) -> str | None:
        """The redirect to the client with a code for ``user``; None for an unknown sign-in."""
        found = self.pending.pop(pending, None)
        if found is None:
            return None
        client_id, params = found
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=user,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _tokens(self, client_id: str, scopes: list[str], resource: str | None, subject: str | None) -> OAuthToken:
        self.issued += 1
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = int(time.time()) + EXPIRY
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource, subject=subject
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        return OAuthToken(access_token=access, expires_in=EXPIRY, refresh_token=refresh, scope=" ".join(scopes) or None)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        code = authorization_code
        return self._tokens(client.client_id or "", code.scopes, code.resource, code.subject)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        given = refresh_token
        return self._tokens(client.client_id or "", scopes or given.scopes, given.resource, given.subject)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
auth = AuthSettings(
    issuer_url=BASE,  # type: ignore[arg-type]
    resource_server_url=f"{BASE}/mcp",  # type: ignore[arg-type]
    validate_token_resource=False,
    client_registration_options=ClientRegistrationOptions(enabled=True),
    revocation_options=RevocationOptions(enabled=REVOKES),
)
server = MCPServer("people", auth_server_provider=cast(Any, provider), auth=auth)


@server.tool()
def whoami() -> str:
    """Who the token belongs to."""
    token = get_access_token()
    return f"you are {token.subject if token is not None else None}"


@server.custom_route("/login", methods=["GET"])
async def login_page(request: Request) -> Response:
    pending = html.escape(request.query_params.get("pending", ""))
    form = f'<form method="post" action="/login"><input type="hidden" name="pending" value="{pending}">'
    form += '<input name="user"><button>Sign in</button></form>'
    return HTMLResponse(f"<!doctype html><title>Sign in</title>{form}")


@server.custom_route("/login", methods=["POST"])
async def login(request: Request) -> Response:
    form = await request.form()
    target = provider.signed_in(str(form.get("pending", "")), str(form.get("user", "")))
    if target is None:
        return HTMLResponse("unknown sign-in", status_code=400)
    return RedirectResponse(target, status_code=302)


@server.custom_route("/revoke-all", methods=["POST"])
async def revoke_all(request: Request) -> JSONResponse:
    provider.access.clear()
    provider.refresh.clear()
    return JSONResponse({"revoked": True})


@server.custom_route("/revoke-subject", methods=["POST"])
async def revoke_subject(request: Request) -> JSONResponse:
    """Revoke every token of one user (``?subject=``), as that user signing the client out at the server."""
    subject = request.query_params.get("subject")
    for tokens in (provider.access, provider.refresh):
        for value in [key for key, token in tokens.items() if token.subject == subject]:
            del tokens[value]
    return JSONResponse({"revoked": subject})


@server.custom_route("/issued", methods=["GET"])
async def issued(request: Request) -> JSONResponse:
    return JSONResponse({"issued": provider.issued, "live": len(provider.access)})


server.run("streamable-http", host="127.0.0.1", port=PORT)
