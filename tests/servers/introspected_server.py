"""A streamable-HTTP MCP server that is only a resource server, on the SDK's own auth support: the tokens it
is sent were issued by another authorization server, which it asks about each one (RFC 7662 introspection).

``introspected_server.py PORT ISSUER CLIENT_ID CLIENT_SECRET`` serves ``/mcp`` with one tool, ``whoami``,
behind bearer tokens that ``ISSUER`` (whose metadata names its introspection endpoint) says are active, carry
the scope ``mcp:tools`` and were issued for this server (``aud``: ``http://127.0.0.1:PORT/mcp``); it
introspects as its own confidential client ``CLIENT_ID``. Its protected resource metadata (RFC 9728) names
``ISSUER`` and that scope. ``whoami`` says whose the token is and how many tokens the server has seen."""

import sys
from typing import Any, cast

import httpx2
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

PORT = int(sys.argv[1])
ISSUER, CLIENT_ID, CLIENT_SECRET = sys.argv[2:5]
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
SCOPE = "mcp:tools"
seen: set[str] = set()


class Introspection:
    """The SDK's ``TokenVerifier``: a token is what the issuer's introspection endpoint says of it."""

    endpoint: str | None = None

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient(trust_env=False, timeout=30) as client:
            if self.endpoint is None:
                found = await client.get(f"{ISSUER}/.well-known/openid-configuration")
                self.endpoint = str(found.raise_for_status().json()["introspection_endpoint"])
            answer = await client.post(
                self.endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                auth=(CLIENT_ID, CLIENT_SECRET),
            )
        said: dict[str, Any] = answer.json() if answer.status_code == 200 else {}
        if not said.get("active"):
            return None
        audience: Any = said.get("aud")
        audiences: list[Any] = cast(list[Any], audience) if isinstance(audience, list) else [audience]
        seen.add(token)
        return AccessToken(
            token=token,
            client_id=said.get("client_id", ""),
            scopes=str(said.get("scope", "")).split(),
            expires_at=said.get("exp"),
            resource=RESOURCE if RESOURCE in audiences else None,
            subject=said.get("sub"),
        )


auth = AuthSettings(
    issuer_url=ISSUER,  # type: ignore[arg-type]
    resource_server_url=RESOURCE,  # type: ignore[arg-type]
    required_scopes=[SCOPE],
    validate_token_resource=True,
)
server = MCPServer("introspected", token_verifier=Introspection(), auth=auth)


@server.tool()
def whoami() -> str:
    """Who the token belongs to."""
    token = get_access_token()
    return f"{token.subject if token else None}, token {len(seen)}"


server.run("streamable-http", host="127.0.0.1", port=PORT)
