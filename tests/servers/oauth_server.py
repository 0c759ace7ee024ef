"""A streamable-HTTP MCP server that is its own OAuth authorization server, on the SDK's own auth support
(``mcp.server.auth``): ``oauth_server.py PORT EXPIRY`` serves ``/mcp`` with one tool, ``whoami``, behind
bearer tokens that last ``EXPIRY`` seconds, with dynamic client registration, PKCE, refresh tokens and
the ``resource`` parameter, and token revocation (RFC 7009). With ``OAUTH_CLIENT`` set (``ID SECRET``) in
its environment it also knows that client, registered beforehand, as a confidential client whose redirect
URI is ``http://127.0.0.1/callback`` at any port (RFC 8252). Its authorization endpoint consents at once (a
person who always says yes); ``POST /revoke-all`` revokes every token it issued, as a person signing the
client out at the server; ``GET /asked`` lists the scopes each authorization request asked for (null: none)."""

import os
import secrets
import sys
import time
from typing import Any, cast

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
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


class Provider:
    """Clients, codes and tokens in memory; every token is a random string."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.issued = 0
        self.asked: list[list[str] | None] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.asked.append(params.scopes)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="alice",
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _tokens(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        self.issued += 1
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + EXPIRY, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=EXPIRY, refresh_token=refresh, scope=" ".join(scopes) or None)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._tokens(client.client_id or "", authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._tokens(client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


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
