"""Signing in against an authorization server that is neither lazymcp's nor the MCP SDK's: oidc-provider
(npm, ``tests/servers/oidc_issuer.mjs``), with dynamic registration, PKCE and a resource indicator for the
MCP server, which is only a resource server and asks oidc-provider about each token it is sent
(``tests/servers/introspected_server.py``). The test is the browser: it follows the URL ``lazymcp login
--no-browser`` prints and submits oidc-provider's own sign-in and consent forms. Then the gateway lists and
calls the server's tool, refreshes the short-lived access token at oidc-provider, and ``lazymcp logout``
revokes the tokens there."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from ..conftest import NPM_CACHE, free_port, install_lock, npm_install, until, until_listening
from ..raw import tool_call
from .test_signin import BOUND, Home, called, gateway

OIDC_PROVIDER = "oidc-provider@9.13.3"
TTL = 8
"""Seconds each access token lasts at oidc-provider."""
SERVERS = Path(__file__).parent.parent / "servers"
RESOURCE_CLIENT = "mcp-resource-server"
RESOURCE_SECRET = "resource-server-secret-0123456789abcdef"


@pytest.fixture(scope="session")
def oidc_provider() -> Path:
    """The ``node_modules`` directory oidc-provider is installed in (from the npm registry, once)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to install oidc-provider (Debian packages nodejs and npm)")
    modules = NPM_CACHE / "node_modules"
    manifest = modules / "oidc-provider" / "package.json"
    pinned = OIDC_PROVIDER.rpartition("@")[2]
    with install_lock(NPM_CACHE):
        if not (manifest.exists() and json.loads(manifest.read_text())["version"] == pinned):
            try:
                npm_install(OIDC_PROVIDER)
            except AssertionError as failed:
                reason = str(failed).strip().splitlines()[0] if str(failed).strip() else "npm failed"
                pytest.skip(f"oidc-provider could not be installed from the npm registry: {reason}")
    return modules


@asynccontextmanager
async def oidc_servers(modules: Path) -> AsyncIterator[tuple[str, str]]:
    """oidc-provider and the resource server as processes; yields the issuer's URL and the MCP server's."""
    issuer_port, server_port = free_port(), free_port()
    issuer, resource = f"http://127.0.0.1:{issuer_port}", f"http://127.0.0.1:{server_port}/mcp"
    node = [shutil.which("node") or "node", str(SERVERS / "oidc_issuer.mjs"), str(modules), str(issuer_port)]
    node += [resource, str(TTL), RESOURCE_CLIENT, RESOURCE_SECRET]
    python = [sys.executable, str(SERVERS / "introspected_server.py"), str(server_port), issuer]
    python += [RESOURCE_CLIENT, RESOURCE_SECRET]
    async with (
        await anyio.open_process(node, stdout=None, stderr=None) as authority,
        await anyio.open_process(python, stdout=None, stderr=None) as server,
    ):
        try:
            await until_listening(issuer_port, authority)
            await until_listening(server_port, server)
            yield issuer, resource
        finally:
            for process in (server, authority):
                process.terminate()
                await process.wait()


class Forms(HTMLParser):
    """The forms of a page, as a browser sees them: each one's action and its named inputs' values."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.forms.append((found.get("action") or "", {}))
        elif tag == "input" and self.forms and found.get("name"):
            self.forms[-1][1][found["name"] or ""] = found.get("value") or ""


async def signed_in_by_hand(browser: httpx2.AsyncClient, url: str) -> list[str]:
    """Follow the sign-in ``url`` as a person in a browser: sign in as alice on oidc-provider's page, then
    consent; the pages seen, up to the loopback's."""
    pages = [(await browser.get(url)).text]
    for filled in ({"login": "alice", "password": "any"}, {}):
        parsed = Forms()
        parsed.feed(pages[-1])
        assert len(parsed.forms) == 1, pages[-1]
        action, inputs = parsed.forms[0]
        page = await browser.post(urljoin(url, action), data=inputs | filled)
        pages.append(page.text)
    return pages


async def oidc_login(home: Home) -> list[str]:
    """``lazymcp login signed --no-browser``, its URL followed by hand; the pages seen."""
    command = home.lazymcp("login", "signed", "--config", str(home.config), "--no-browser", "--wait", "120")
    async with await anyio.open_process(command, env={**os.environ, **home.env}) as process:
        assert process.stdout is not None and process.stderr is not None
        lines = BufferedByteReceiveStream(process.stdout)
        url = ""
        while not url.startswith("http"):
            url = (await lines.receive_until(b"\n", 1 << 16)).decode().strip()
        async with httpx2.AsyncClient(trust_env=False, follow_redirects=True, timeout=60) as browser:
            pages = await signed_in_by_hand(browser, url)
        rest = (await lines.receive_until(b"\n", 1 << 16)).decode()
        stderr = b"".join([chunk async for chunk in process.stderr]).decode()
        assert await process.wait() == 0, stderr
    home.said += [url, rest, stderr]
    assert "signed in to signed" in rest, (rest, stderr)
    return [url, *pages]


async def answers_with(resource: str, token: str) -> int:
    """The HTTP status of an ``initialize`` sent to the resource server with ``token``."""
    headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    async with httpx2.AsyncClient(trust_env=False, timeout=60) as raw:
        return (await raw.post(resource, json=body, headers=headers)).status_code


@pytest.mark.anyio
async def test_a_sign_in_at_oidc_provider_is_called_with_refreshed_and_revoked(
    tmp_path: Path, oidc_provider: Path
) -> None:
    with anyio.fail_after(BOUND):
        async with oidc_servers(oidc_provider) as (issuer, resource):
            async with httpx2.AsyncClient(trust_env=False, timeout=60) as raw:
                refused = await raw.post(resource, json={"jsonrpc": "2.0", "id": 0, "method": "ping"})
            assert refused.status_code == 401, refused.text
            assert "resource_metadata=" in refused.headers.get("www-authenticate", ""), refused.headers

            home = Home(tmp_path, resource)
            url, login_page, consent_page, done_page = await oidc_login(home)
            asked = parse_qs(urlsplit(url).query)
            assert url.startswith(f"{issuer}/auth?"), url
            assert asked["resource"] == [resource] and asked["code_challenge_method"] == ["S256"], asked
            assert "mcp:tools" in asked["scope"][0].split(), asked
            assert 'name="password"' in login_page and "mcp:tools" in consent_page, consent_page
            assert "Signed in" in done_page, done_page
            kept = home.kept()
            assert kept["client"]["client_id"] and kept["tokens"].get("refresh_token"), kept.keys()
            first = kept["tokens"]["access_token"]
            assert await answers_with(resource, first) == 200

            async with gateway(home) as client:
                await client.send(tool_call(2, "describe_tools", names=["signed__whoami"]))
                described = json.dumps(await client.answer(2))
                answer = await called(client, 3)
                assert "alice, token" in answer and '"isError": true' not in answer, answer
                used, expires = home.kept()["tokens"]["access_token"], home.kept()["expires_at"]
                await until(lambda: time.time() > expires + 0.5, within=60, what="the access token's expiry")
                refreshed = await called(client, 4)
                assert "alice, token" in refreshed and '"isError": true' not in refreshed, refreshed
            assert "whoami" in described and "sign-in needed" not in described, described
            second = home.kept()["tokens"]["access_token"]
            assert second not in (first, used)
            secrets = [first, used, *home.secrets()]

            logout = home.lazymcp("logout", "signed", "--config", str(home.config))
            done = await anyio.run_process(logout, env={**os.environ, **home.env}, check=False)
            home.said += [done.stdout.decode(), done.stderr.decode()]
            assert done.returncode == 0 and b"signed out of signed" in done.stdout, done.stderr
            assert done.stderr == b"", done.stderr
            assert await answers_with(resource, second) == 401  # revoked at oidc-provider
    said = "\n".join(home.said)
    for secret in secrets:
        assert secret not in said
    assert "Traceback" not in said, said
