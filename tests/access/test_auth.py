"""An HTTP front lets in only its team: a real issuer over HTTP, a real front guarded by ``Access``, real clients."""

from __future__ import annotations

import socket
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from lazymcp.access.auth import access_from, default_resource
from lazymcp.access.bearer import Access, open_access, token_access
from lazymcp.access.claims import read_introspection
from lazymcp.access.oauth import metadata_urls, oauth_access
from lazymcp.protocol.errors import ConfigError

from ..conftest import free_port, serving
from ..servers.issuer import CLIENT_ID, CLIENT_SECRET, ELSEWHERE, SCOPE, Issuer, running_issuer

pytestmark = pytest.mark.anyio

SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}


@asynccontextmanager
async def guarded(access: Access, port: int) -> AsyncGenerator[str]:
    """A front on 127.0.0.1:``port``: ``/mcp`` answers whoever ``access`` lets in, with who they are."""

    async def mcp(request: Request) -> Response:
        refused = await access.check(request)
        if refused is not None:
            return refused
        user = request.scope.get("user")
        subject = user.access_token.subject if isinstance(user, AuthenticatedUser) else None
        return JSONResponse({"in": True, "subject": subject})

    app = Starlette(routes=[Route("/mcp", mcp, methods=["GET", "POST"]), *access.routes()])
    try:
        async with serving(app, port) as url:
            yield url
    finally:
        await access.aclose()


class Guard:
    """An MCP server's ASGI app behind ``access``, as the lazymcp front will put it."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app, self.access = app, access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = await self.access.check(Request(scope, receive))
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


@contextmanager
def issuer_for(resource: str) -> Generator[Issuer]:
    with running_issuer(free_port(), resource) as issuer:
        yield issuer


@contextmanager
def silent_port() -> Generator[int]:
    """A port that accepts connections and never answers (the kernel completes the handshake)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer k="v", …`` header (values hold no quotes here)."""
    scheme, _, rest = response.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    pairs = [part.strip().split("=", 1) for part in rest.split('",')]
    return {name: value.strip('"') for name, value in pairs}


async def get(url: str, token: str | None = None, *, authorization: str | None = None) -> httpx2.Response:
    """POST ``url`` with ``Authorization: Bearer <token>`` (or ``authorization`` as it is), or without one."""
    authorization = authorization if token is None else f"Bearer {token}"
    headers = {} if authorization is None else {"Authorization": authorization}
    async with httpx2.AsyncClient(timeout=60) as client:
        return await client.post(url, json={}, headers=headers)


@pytest.mark.parametrize(
    ("token", "status", "error"),
    [
        ("good", 200, None),
        ("good-among-audiences", 200, None),
        ("made-up", 401, "invalid_token"),
        ("inactive", 401, "invalid_token"),
        ("expired", 401, "invalid_token"),
        ("other-audience", 401, "invalid_token"),
        ("no-audience", 401, "invalid_token"),
        ("no-scope", 403, "insufficient_scope"),
    ],
)
async def test_oauth_tokens_get_in_only_when_active_for_this_resource_and_scoped(
    token: str, status: int, error: str | None
) -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with issuer_for(resource) as issuer:
        access = access_from(None, issuer.url, None, [SCOPE], "127.0.0.1", port, env=SECRETS)
        async with guarded(access, port) as url:
            with anyio.fail_after(60):
                answer = await get(url, token)
    assert answer.status_code == status
    if error is None:
        assert answer.json() == {"in": True, "subject": "ada"}
    else:
        assert answer.json()["error"] == error
        params = challenge(answer)
        assert params["error"] == error
        assert params["resource_metadata"] == f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        assert params["scope"] == SCOPE


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_the_sdk_client_reaches_a_guarded_mcp_server_with_its_token() -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    server = MCPServer("guarded")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    with issuer_for(resource) as issuer:
        access = access_from(None, issuer.url, None, [SCOPE], "127.0.0.1", port, env=SECRETS)
        app = server.streamable_http_app()
        app.router.routes.extend(access.routes())
        try:
            async with serving(Guard(app, access), port) as url:
                with anyio.fail_after(60):
                    team = httpx2.AsyncClient(headers={"Authorization": "Bearer good"}, timeout=60)
                    async with team, Client(streamable_http_client(url, http_client=team), mode="legacy") as client:
                        listing = await client.list_tools()
                        echoed = await client.call_tool("echo", {"text": "team"})
                    refused = await get(url, "no-scope")
        finally:
            await access.aclose()
    assert [tool.name for tool in listing.tools] == ["echo"]
    assert echoed.structured_content == {"result": "team"}
    assert refused.status_code == 403
    assert issuer.introspections == 2  # the client's token once, then from the cache; the refused one once


async def test_a_request_without_a_token_is_told_where_the_resource_metadata_is() -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with issuer_for(resource) as issuer:
        access = oauth_access(issuer.url, resource, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        async with guarded(access, port) as url:
            with anyio.fail_after(60):
                answer = await get(url)
                basic = await get(url, authorization="Basic eDp5")
                params = challenge(answer)
                async with httpx2.AsyncClient(timeout=60) as client:
                    document = await client.get(params["resource_metadata"])
                    root = await client.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource")
    assert answer.status_code == 401 and basic.status_code == 401
    assert params == {"resource_metadata": f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"}
    assert document.status_code == 200
    assert document.json() == {
        "resource": resource,
        "authorization_servers": [issuer.url],
        "bearer_methods_supported": ["header"],
        "resource_name": "lazymcp",
    }
    assert root.json() == document.json()
    assert access.describe() == f"OAuth tokens of {issuer.url}"


async def test_the_resource_metadata_lists_the_required_scopes() -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/team/mcp"
    with issuer_for(resource) as issuer:
        access = oauth_access(issuer.url, resource, scopes=[SCOPE], introspection=f"{issuer.url}/introspect")
        async with guarded(access, port):
            with anyio.fail_after(60):
                async with httpx2.AsyncClient(timeout=60) as client:
                    document = await client.get(
                        f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/team/mcp"
                    )
    assert document.json()["resource"] == resource
    assert document.json()["scopes_supported"] == [SCOPE]


async def test_an_openid_only_issuer_is_found_by_its_openid_configuration() -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with issuer_for(resource) as issuer:
        access = oauth_access(f"{issuer.url}/oidc", resource, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        async with guarded(access, port) as url:
            with anyio.fail_after(60):
                good, bad = await get(url, "good"), await get(url, "other-audience")
    assert (good.status_code, bad.status_code) == (200, 401)
    assert access.verifier.endpoint == f"{issuer.url}/oidc/introspect"
    assert metadata_urls(f"{issuer.url}/oidc")[-1] == f"{issuer.url}/oidc/.well-known/openid-configuration"


async def test_a_token_let_in_is_not_introspected_again_but_a_refused_one_is() -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with issuer_for(resource) as issuer:
        access = access_from(None, issuer.url, resource, [], "127.0.0.1", port, env=SECRETS)
        async with guarded(access, port) as url:
            with anyio.fail_after(60):
                answers = [await get(url, token) for token in ("good", "good", "good", "made-up", "made-up")]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 401, 401]
    assert issuer.introspections == 3


async def test_an_overlong_token_is_refused_without_asking_the_issuer() -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with issuer_for(resource) as issuer:
        access = access_from(None, issuer.url, resource, [], "127.0.0.1", port, env=SECRETS)
        async with guarded(access, port) as url:
            with anyio.fail_after(60):
                answer = await get(url, "g" * 9000)
    assert answer.status_code == 401 and challenge(answer)["error"] == "invalid_token"
    assert issuer.introspections == 0


async def test_the_verdict_cache_keeps_only_its_size() -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with issuer_for(resource) as issuer:
        access = oauth_access(issuer.url, resource, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, cache_size=1)
        async with guarded(access, port) as url:
            with anyio.fail_after(60):
                answers = [await get(url, token) for token in ("good", "good-among-audiences", "good")]
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert issuer.introspections == 3  # the second token pushed the first out


async def test_an_issuer_that_never_answers_gets_a_503_within_the_timeout() -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with silent_port() as silent:
        access = oauth_access(
            "http://127.0.0.1", resource, introspection=f"http://127.0.0.1:{silent}/introspect", timeout=1
        )
        async with guarded(access, port) as url:
            with anyio.fail_after(30):  # far above the 1 s timeout: a hung check would exceed it
                answer = await get(url, "good")
    assert answer.status_code == 503
    assert answer.headers["retry-after"].isdigit()
    assert answer.json()["error"] == "temporarily_unavailable"


@pytest.mark.parametrize("where", ["drip", "huge"])
async def test_an_issuer_that_drips_or_floods_its_answer_gets_a_503(where: str) -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with issuer_for(resource) as issuer:
        access = oauth_access(issuer.url, resource, introspection=f"{issuer.url}/{where}/introspect", timeout=1)
        async with guarded(access, port) as url:
            with anyio.fail_after(30):  # the drip never ends: only the total timeout stops it
                answer = await get(url, "good")
    assert answer.status_code == 503
    assert answer.json()["error"] == "temporarily_unavailable"


async def test_introspection_refused_for_want_of_client_credentials_gets_a_503() -> None:
    port = free_port()
    resource = default_resource("127.0.0.1", port)
    with issuer_for(resource) as issuer:
        access = access_from(None, issuer.url, resource, [], "127.0.0.1", port, env={})
        async with guarded(access, port) as url:
            with anyio.fail_after(60):
                answer = await get(url, "good")
    assert answer.status_code == 503
    assert issuer.introspections == 0


async def test_the_static_token_lets_in_only_requests_that_carry_it() -> None:
    port = free_port()
    access = access_from("team-secret-7f3a", None, None, [], "0.0.0.0", port)
    async with guarded(access, port) as url:
        with anyio.fail_after(60):
            missing, wrong, right = (
                await get(url),
                await get(url, "team-secret-7f3b"),
                await get(url, "team-secret-7f3a"),
            )
    assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert challenge(missing) == {"realm": "lazymcp"}
    assert challenge(wrong)["error"] == "invalid_token"
    assert access.describe() == "a bearer token" and access.routes() == []


async def test_open_access_lets_everyone_in() -> None:
    port = free_port()
    access = access_from(None, None, None, [], "127.0.0.1", port)
    async with guarded(access, port) as url:
        with anyio.fail_after(60):
            answer = await get(url)
    assert answer.status_code == 200
    assert access.describe() == open_access().describe() == "no authentication"


def test_off_loopback_some_authentication_is_required() -> None:
    with pytest.raises(ConfigError):
        access_from(None, None, None, [], "0.0.0.0", 8080)
    with pytest.raises(ConfigError):
        access_from(None, None, None, [], "192.168.1.20", 8080)
    assert access_from(None, None, None, [], "::1", 8080).describe() == "no authentication"


def test_conflicting_or_orphan_flags_are_refused() -> None:
    with pytest.raises(ConfigError):
        access_from("secret", "https://issuer.example", None, [], "127.0.0.1", 8080)
    with pytest.raises(ConfigError):
        access_from("secret", None, None, [SCOPE], "127.0.0.1", 8080)
    with pytest.raises(ConfigError):
        token_access("  ")


@pytest.mark.parametrize(
    "issuer",
    [
        "http://issuer.example",  # plain http off loopback
        "ftp://127.0.0.1",
        "not a url",
        "https://issuer.example/?tenant=1",
    ],
)
def test_an_issuer_that_is_not_an_https_url_is_refused(issuer: str) -> None:
    with pytest.raises(ConfigError):
        oauth_access(issuer, "https://gateway.example/mcp")


def test_an_unreachable_issuer_stops_the_start() -> None:
    with pytest.raises(ConfigError):
        oauth_access(f"http://127.0.0.1:{free_port()}", "http://127.0.0.1:8080/mcp", timeout=5)


def test_an_issuer_whose_metadata_names_another_issuer_is_refused() -> None:
    with issuer_for(ELSEWHERE) as issuer, pytest.raises(ConfigError):  # it calls itself 127.0.0.1
        oauth_access(issuer.url.replace("127.0.0.1", "localhost"), ELSEWHERE, timeout=5)
    with issuer_for(ELSEWHERE) as issuer, pytest.raises(ConfigError):
        oauth_access(f"{issuer.url}/nothing-here", ELSEWHERE, timeout=5)


@pytest.mark.parametrize("where", ["drip", "huge"])
def test_issuer_metadata_that_drips_or_floods_stops_the_start(where: str) -> None:
    with issuer_for(ELSEWHERE) as issuer, pytest.raises(ConfigError):
        oauth_access(f"{issuer.url}/{where}", ELSEWHERE, timeout=1)  # pytest-timeout ends a hang


def test_malformed_scopes_and_a_secret_without_an_id_are_refused() -> None:
    with pytest.raises(ConfigError):
        oauth_access("https://issuer.example", "https://gateway.example/mcp", scopes=['a"b'], introspection="https://x")
    with pytest.raises(ConfigError):
        oauth_access(
            "https://issuer.example", "https://gateway.example/mcp", client_secret="s", introspection="https://x"
        )


def test_the_default_resource_is_the_listening_address_but_never_a_wildcard() -> None:
    assert default_resource("127.0.0.1", 8080) == "http://127.0.0.1:8080/mcp"
    assert default_resource("::1", 8080) == "http://[::1]:8080/mcp"
    with pytest.raises(ConfigError):
        default_resource("0.0.0.0", 8080)


@pytest.mark.parametrize(
    ("change", "let_in"),
    [
        ({}, True),
        ({"iss": "http://127.0.0.1:9/"}, True),  # the issuer's URL, a trailing slash aside
        ({"aud": "HTTP://127.0.0.1:80/mcp/"}, True),  # case of scheme and host, default port, trailing slash
        ({"iss": "https://other-issuer.example"}, False),
        ({"active": "true"}, False),
        ({"exp": True}, False),
        ({"exp": float("inf")}, False),
        ({"exp": "2999-01-01"}, False),
        ({"nbf": 4102444800}, False),
        ({"aud": [None, 7]}, False),
        ({"aud": "http://127.0.0.1/mcp/more"}, False),
    ],
)
def test_an_introspection_answer_grants_access_only_when_every_claim_holds(
    change: dict[str, object], let_in: bool
) -> None:
    answer = {"active": True, "aud": "http://127.0.0.1/mcp", "exp": 4102444800, "scope": "a b", "sub": "ada", **change}
    access = read_introspection(answer, "t", "http://127.0.0.1:9", "http://127.0.0.1/mcp", now=1_800_000_000)
    assert (access is not None) == let_in
    if access is not None:
        assert (access.scopes, access.subject, access.resource) == (["a", "b"], "ada", "http://127.0.0.1/mcp")


def test_an_introspection_answer_that_is_not_an_object_grants_nothing() -> None:
    assert read_introspection(["active"], "t", "http://127.0.0.1:9", "http://127.0.0.1/mcp", now=0) is None
