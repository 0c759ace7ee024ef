"""A streamable-HTTP MCP server that is its own OAuth authorization server, on the SDK's own auth support
(``mcp.server.auth``): ``oauth_server.py PORT EXPIRY`` serves ``/mcp`` with one tool, ``whoami``, behind
bearer tokens that last ``EXPIRY`` seconds, with dynamic client registration, PKCE, refresh tokens and
the ``resource`` parameter, and token revocation (RFC 7009). With ``OAUTH_CLIENT`` set (``ID SECRET``) in
its environment it also knows that client, registered beforehand, as a confidential client whose redirect
URI is ``http://127.0.0.1/callback`` at any port (RFC 8252). Its authorization endpoint consents at once (a
person who always says yes); ``POST /revoke-all`` revokes every token it issued, as a person signing the
client out at the server; ``GET /asked`` lists the scopes each authorization request asked for (null: none)."""

import os
import sys
from typing import Any, cast

from mcp.server.auth.provider import AuthorizationParams
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from oauth_provider import MemoryProvider
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse

PORT = int(sys.argv[1])
EXPIRY = int(sys.argv[2])
BASE = f"http://127.0.0.1:{PORT}"


class Loopback(OAuthClientInformationFull):
    """A client registered beforehand: its loopback redirect URI at any port."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None or redirect_uri.host != "127.0.0.1" or redirect_uri.path != "/callback":
            raise InvalidRedirectUriError("only http://127.0.0.1:PORT/callback is registered")
        return redirect_uri


class Provider(MemoryProvider):
    """Consents at once, for alice, and notes the scopes each authorization asked for."""

    def __init__(self) -> None:
        super().__init__(EXPIRY)
        self.asked: list[list[str] | None] = []

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.asked.append(params.scopes)
        return self.code_for(client.client_id or "", params, "alice")


provider = Provider()
if os.environ.get("OAUTH_CLIENT"):
    client_id, client_secret = os.environ["OAUTH_CLIENT"].split()
    provider.clients[client_id] = Loopback(
        client_id=client_id,
        client_secret=client_secret,
        token_endpoint_auth_method="client_secret_post",
        redirect_uris=[AnyUrl("http://127.0.0.1/callback")],
        grant_types=["authorization_code", "refresh_token"],
        scope="read write",
    )
auth = AuthSettings(
    issuer_url=BASE,  # type: ignore[arg-type]
    resource_server_url=f"{BASE}/mcp",  # type: ignore[arg-type]
    validate_token_resource=False,
    client_registration_options=ClientRegistrationOptions(enabled=True),
    revocation_options=RevocationOptions(enabled=True),
)
server = MCPServer("signed", auth_server_provider=cast(Any, provider), auth=auth)


@server.tool()
def whoami() -> str:
    """Who the token belongs to."""
    return f"alice, token {provider.issued}"


@server.custom_route("/revoke-all", methods=["POST"])
async def revoke_all(request: Request) -> JSONResponse:
    provider.access.clear()
    provider.refresh.clear()
    return JSONResponse({"revoked": True})


@server.custom_route("/asked", methods=["GET"])
async def asked(request: Request) -> JSONResponse:
    return JSONResponse({"asked": provider.asked})


server.run("streamable-http", host="127.0.0.1", port=PORT)
