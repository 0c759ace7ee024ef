"""Signing in to a remote server that asks for OAuth, against a real one: the SDK's own authorization and
resource server (``tests/servers/oauth_server.py``) as a process on a loopback port, its tokens short-lived.

Before the sign-in the gateway says, on stderr and in a call's error, to sign in with ``lazymcp login``;
``lazymcp login --no-browser`` prints the URL, which the test follows as a browser would (the server
consents at once and redirects to the loopback); then the tool is called with the token, called again
once it expired (refreshed), and after the server revoked every token a call says to sign in again.
No token, refresh token or client secret shows in any output."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from ..conftest import free_port, until
from ..raw import INIT, INITIALIZED, Peer, listening, peer, request, tool_call

BOUND = 180
EXPIRY = 8
"""Seconds each access token lasts at the server."""


@asynccontextmanager
async def oauth_server(expiry: int = EXPIRY, env: dict[str, str] | None = None) -> AsyncIterator[str]:
    """The server as a process (``env`` added to its environment); yields its base URL."""
    port = free_port()
    script = Path(__file__).parent.parent / "servers" / "oauth_server.py"
    async with listening([sys.executable, str(script), str(port), str(expiry)], port, env=env, stderr=None):
        yield f"http://127.0.0.1:{port}"


class Home:
    """A user's configuration directory and cache, and the environment that points lazymcp at them."""

    def __init__(self, tmp_path: Path, url: str, oauth: dict[str, Any] | None = None) -> None:
        self.config = tmp_path / "mcp.json"
        entry: dict[str, Any] = {"url": url} if oauth is None else {"url": url, "oauth": oauth}
        self.config.write_text(json.dumps({"mcpServers": {"signed": entry}}))
        self.tokens = tmp_path / "xdg" / "lazymcp" / "tokens.json"
        self.env = {
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "LAZYMCP_TOKEN_STORE": "file",
            "LAZYMCP_CACHE_DIR": str(tmp_path / "cache"),
        }
        self.said: list[str] = []
        """Everything lazymcp printed, to look for secrets in."""

    def kept(self) -> dict[str, Any]:
        (value,) = json.loads(self.tokens.read_text()).values()
        return value

    def secrets(self) -> list[str]:
        kept = self.kept()
        found = [kept["tokens"]["access_token"], kept["tokens"].get("refresh_token")]
        return [value for value in [*found, kept.get("client", {}).get("client_secret")] if value]

    def lazymcp(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "lazymcp", *args]


async def called(client: Peer, request_id: int) -> str:
    await client.send(tool_call(request_id, "signed__whoami"))
    return json.dumps(await client.answer(request_id))


async def login(home: Home) -> None:
    """``lazymcp login signed --no-browser``, its URL followed as a browser would."""
    command = home.lazymcp("login", "signed", "--config", str(home.config), "--no-browser", "--wait", "120")
    async with await anyio.open_process(command, env={**os.environ, **home.env}) as process:
        assert process.stdout is not None and process.stderr is not None
        lines = BufferedByteReceiveStream(process.stdout)
        url = ""
        while not url.startswith("http"):
            url = (await lines.receive_until(b"\n", 1 << 16)).decode()
        async with httpx2.AsyncClient(trust_env=False, follow_redirects=True, timeout=60) as browser:
            page = await browser.get(url)
        assert page.status_code == 200 and "Signed in" in page.text, page.text
        rest = await lines.receive_until(b"\n", 1 << 16)
        stderr = b"".join([chunk async for chunk in process.stderr]).decode()
        assert await process.wait() == 0, stderr
    home.said += [url, rest.decode(), stderr]
    assert "signed in to signed" in rest.decode()


@asynccontextmanager
async def gateway(home: Home) -> AsyncIterator[Peer]:
    async with peer(home.lazymcp("gateway", "--config", str(home.config), "--mode", "eager"), env=home.env) as client:
        await client.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/list"))
        await client.answer(1)
        yield client
        process: Process = client.process
        assert process.stdin is not None
        await process.stdin.aclose()
        home.said.append(await client.stderr())


@pytest.mark.anyio
async def test_a_server_asking_for_oauth_is_signed_in_to_called_refreshed_and_revoked(tmp_path: Path) -> None:
    with anyio.fail_after(BOUND):
        async with oauth_server() as base:
            home = Home(tmp_path, f"{base}/mcp")
            async with gateway(home) as client:  # no tool known yet: describe_tools names the server
                await client.send(tool_call(2, "describe_tools", names=["signed__whoami"]))
                before = json.dumps(await client.answer(2))
                await client.send(tool_call(3, "search_tools", query="whoami"))
                searched = json.dumps(await client.answer(3))
                call = await called(client, 4)
            assert "sign-in needed: sign in with `lazymcp login signed`" in call, call
            assert "sign-in needed: sign in with `lazymcp login signed`" in before, before
            assert "sign-in needed: sign in with `lazymcp login signed`" in searched, searched
            assert home.said[-1].count("lazymcp login signed") == 1, home.said[-1]

            await login(home)
            mode = stat.S_IMODE(home.tokens.stat().st_mode)
            assert mode == 0o600, oct(mode)
            first = home.kept()["tokens"]["access_token"]
            await login(home)  # signed in, with a token still good: the login signs in anew all the same
            assert home.kept()["tokens"]["access_token"] != first
            first = home.kept()["tokens"]["access_token"]

            async with gateway(home) as client:
                answer = await called(client, 2)
                assert "alice, token" in answer and '"isError": true' not in answer, answer
                expires = home.kept()["expires_at"]
                await until(lambda: time.time() > expires + 0.5, within=60, what="the access token's expiry")
                refreshed = await called(client, 3)
                assert "alice, token" in refreshed and refreshed != answer, refreshed
                assert home.kept()["tokens"]["access_token"] != first
                secrets = home.secrets()
                async with httpx2.AsyncClient(trust_env=False) as admin:
                    assert (await admin.post(f"{base}/revoke-all")).status_code == 200
                revoked = await called(client, 4)
            assert "sign in again with `lazymcp login signed`" in revoked, revoked

            logout = home.lazymcp("logout", "signed", "--config", str(home.config))
            out = await anyio.run_process(logout, env={**os.environ, **home.env})
            assert b"signed out of signed" in out.stdout
            assert json.loads(home.tokens.read_text()) == {}
    said = "\n".join(home.said)
    for secret in secrets:
        assert secret not in said
    assert "Traceback" not in said, said


CLIENT_SECRET = "pre-registered-secret-0123456789"


async def answers_with(base: str, token: str) -> int:
    """The HTTP status of an ``initialize`` sent to the server with ``token``."""
    headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(trust_env=False, timeout=60) as raw:
        return (await raw.post(f"{base}/mcp", json=request(0, "initialize", INIT), headers=headers)).status_code


async def logout(home: Home) -> tuple[str, str]:
    command = home.lazymcp("logout", "signed", "--config", str(home.config))
    done = await anyio.run_process(command, env={**os.environ, **home.env}, check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    home.said += [out, err]
    assert done.returncode == 0, err
    return out, err


@pytest.mark.anyio
async def test_a_client_registered_beforehand_signs_in_without_its_secret_kept_and_logout_revokes(
    tmp_path: Path,
) -> None:
    """The entry's ``oauth.clientId`` and ``clientSecret`` (from ``${VAR}``) sign in with the server's own
    client; the secret is in no output and not in the store. ``lazymcp logout`` revokes the tokens at the
    server's revocation endpoint; when the server is gone it says so in one line and forgets them anyway."""
    oauth = {"clientId": "lazymcp-at-acme", "clientSecret": "${ACME_SECRET}", "scopes": ["read"]}
    with anyio.fail_after(BOUND):
        async with oauth_server(env={"OAUTH_CLIENT": f"lazymcp-at-acme {CLIENT_SECRET}"}) as base:
            home = Home(tmp_path, f"{base}/mcp", oauth)
            home.env["ACME_SECRET"] = CLIENT_SECRET
            await login(home)
            stored = home.tokens.read_text()
            kept = home.kept()
            assert CLIENT_SECRET not in stored and "client" not in kept, stored
            tokens = home.secrets()
            assert await answers_with(base, kept["tokens"]["access_token"]) == 200

            out, err = await logout(home)
            assert "signed out of signed" in out and err == "", err
            assert json.loads(home.tokens.read_text()) == {}
            assert await answers_with(base, kept["tokens"]["access_token"]) == 401  # revoked at the server
            async with httpx2.AsyncClient(trust_env=False, timeout=60) as raw:
                form = {"grant_type": "refresh_token", "refresh_token": kept["tokens"]["refresh_token"]}
                form |= {"client_id": "lazymcp-at-acme", "client_secret": CLIENT_SECRET}
                refreshed = await raw.post(f"{base}/token", data=form)
            assert refreshed.status_code == 400, refreshed.text

            await login(home)
            tokens += home.secrets()
        out, err = await logout(home)  # the server is gone
    assert "signed out of signed" in out
    assert err.count("\n") == 1 and "not revoked at the server" in err and "forgotten here only" in err, err
    assert json.loads(home.tokens.read_text()) == {}
    said = "\n".join(home.said)
    for secret in [CLIENT_SECRET, *tokens]:
        assert secret not in said
    assert "Traceback" not in said, said


def said_by(answer: str) -> str:
    """The text of a ``tools/call`` answer, as ``called`` gave it."""
    return json.loads(answer)["result"]["content"][0]["text"]


@pytest.mark.anyio
async def test_two_gateways_of_one_user_go_on_signed_in_through_a_refresh_that_rotates(tmp_path: Path) -> None:
    """Two clients' gateways of one user share one sign-in, and the server spends a refresh token on its
    first use (rotation). Once the access token expired, the first gateway's call refreshes it; the second's
    refresh, with the token already spent, is refused: it goes on with the tokens the first kept, signed in,
    rather than asking the user to sign in again."""
    with anyio.fail_after(BOUND):
        async with oauth_server() as base:
            home = Home(tmp_path, f"{base}/mcp")
            await login(home)
            async with gateway(home) as first, gateway(home) as second:
                assert "alice, token" in await called(first, 2)
                assert "alice, token" in await called(second, 2)
                expires = home.kept()["expires_at"]
                await until(lambda: time.time() > expires + 0.5, within=60, what="the access token's expiry")
                refreshed = said_by(await called(first, 3))
                after = await called(second, 3)
            assert '"isError": true' not in after, after
            assert said_by(after) == refreshed  # the token the first gateway got: none issued for the second
    said = "\n".join(home.said)
    assert "sign in again" not in said and "Traceback" not in said, said
