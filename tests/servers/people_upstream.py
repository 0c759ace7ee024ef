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
from typing import Any, cast

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AuthorizationParams
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull
from oauth_provider import MemoryProvider
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

PORT = int(sys.argv[1])
EXPIRY = int(sys.argv[2])
REVOKES = sys.argv[3:4] != ["no-revoke"]
"""``people_upstream.py PORT EXPIRY no-revoke``: no revocation endpoint (a revoked sign-in's tokens stay good)."""
BASE = f"http://127.0.0.1:{PORT}"


class Provider(MemoryProvider):
    """Sends each authorization to the sign-in page, and gives the code to the user signed in there."""

    def __init__(self) -> None:
        super().__init__(EXPIRY)
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}

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
        return self.code_for(client_id, params, user)


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
