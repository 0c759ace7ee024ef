"""``lazymcp login`` against the real OAuth test server (``tests/servers/oauth_server.py``): the scopes an
entry names are the ones asked for, and the loopback redirect listener waits for the one redirect that
carries the sign-in's code and state, answering anything else with 400."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from lazymcp.access.tokens import TokenStore
from lazymcp.gateway.config import parse_config
from lazymcp.protocol.errors import UpstreamError
from lazymcp.run.login import Loopback
from lazymcp.run.signin import key_of

from .test_signin import BOUND, Home, login, oauth_server


@pytest.mark.anyio
async def test_the_scopes_of_an_entry_are_asked_for(tmp_path: Path) -> None:
    """The server names no scope of its own, so without the entry's scopes none would be asked for."""
    with anyio.fail_after(BOUND):
        async with oauth_server() as base:
            home = Home(tmp_path, f"{base}/mcp", {"scopes": ["read", "write"]})
            await login(home)
            async with httpx2.AsyncClient(trust_env=False, timeout=60) as admin:
                asked = (await admin.get(f"{base}/asked")).json()["asked"]
    assert asked == [["read", "write"]], asked
    assert home.kept()["tokens"].get("scope") == "read write", home.kept()["tokens"].get("scope")


async def started_login(home: Home, *more: str) -> tuple[Process, BufferedByteReceiveStream, str]:
    """``lazymcp login signed --no-browser`` started; its process, its stdout and the URL it printed."""
    command = home.lazymcp("login", "signed", "--config", str(home.config), "--no-browser", *more)
    process = await anyio.open_process(command, env={**os.environ, **home.env})
    assert process.stdout is not None
    lines = BufferedByteReceiveStream(process.stdout)
    url = ""
    while not url.startswith("http"):
        url = (await lines.receive_until(b"\n", 1 << 16)).decode()
    return process, lines, url


async def ended(process: Process) -> tuple[int, str]:
    assert process.stderr is not None
    stderr = b"".join([chunk async for chunk in process.stderr]).decode()
    return await process.wait(), stderr


@pytest.mark.anyio
async def test_the_loopback_answers_400_to_a_redirect_without_the_code_and_state_and_waits_on(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(BOUND):
        async with oauth_server() as base:
            home = Home(tmp_path, f"{base}/mcp")
            process, lines, url = await started_login(home, "--wait", "120")
            async with process:
                query = parse_qs(urlsplit(url).query)
                callback, state = query["redirect_uri"][0], query["state"][0]
                async with httpx2.AsyncClient(trust_env=False, timeout=60) as browser:
                    statuses = [
                        (await browser.get(callback)).status_code,
                        (await browser.get(callback, params={"state": state})).status_code,
                        (await browser.get(callback, params={"code": "forged", "state": "wrong"})).status_code,
                        (await browser.get(callback, params={"code": "forged"})).status_code,
                        (await browser.get(callback, params={"error": "access_denied"})).status_code,
                        (await browser.get(callback.replace("/callback", "/other"), params={"code": "x"})).status_code,
                    ]
                    page = await browser.get(url, follow_redirects=True)
                assert statuses == [400, 400, 400, 400, 400, 404], statuses
                assert page.status_code == 200 and "Signed in" in page.text, page.text
                rest = (await lines.receive_until(b"\n", 1 << 16)).decode()
                code, stderr = await ended(process)
    assert code == 0 and "signed in to signed" in rest, (rest, stderr)
    assert "alice" not in stderr and "Traceback" not in stderr, stderr


@pytest.mark.anyio
async def test_an_error_brought_back_with_the_state_ends_the_login_in_one_line(tmp_path: Path) -> None:
    with anyio.fail_after(BOUND):
        async with oauth_server() as base:
            home = Home(tmp_path, f"{base}/mcp")
            process, _, url = await started_login(home, "--wait", "120")
            async with process:
                query = parse_qs(urlsplit(url).query)
                callback, state = query["redirect_uri"][0], query["state"][0]
                async with httpx2.AsyncClient(trust_env=False, timeout=60) as browser:
                    answer = await browser.get(callback, params={"error": "access_denied\nforged", "state": state})
                code, stderr = await ended(process)
    assert answer.status_code == 200 and "did not succeed" in answer.text, answer.text
    assert code != 0 and stderr.count("\n") == 1, stderr
    assert "refused the sign-in: access_denied?forged" in stderr, stderr


@pytest.mark.anyio
async def test_a_loopback_given_no_redirect_it_takes_gives_up_at_its_bound() -> None:
    with anyio.fail_after(BOUND):
        async with Loopback() as loopback:
            loopback.expect("https://as.example/authorize?state=ours&client_id=x")
            async with httpx2.AsyncClient(trust_env=False, timeout=60) as browser:
                refused = await browser.get(loopback.redirect_uri, params={"code": "c", "state": "theirs"})
            with pytest.raises(UpstreamError, match="no sign-in came back within 1 s"):
                await loopback.code(1)
    assert refused.status_code == 400


@pytest.mark.anyio
@pytest.mark.parametrize("told", ["chunked", "length"])
@pytest.mark.parametrize("command", ["login", "logout"])
async def test_an_authorization_server_answering_without_end_fails_in_one_line_at_its_bound(
    tmp_path: Path, told: str, command: str
) -> None:
    """The server's 401 names its protected resource metadata, which comes without end (chunked) or says it
    is 1 GB long: the login, and the logout's revocation, read 64 KiB of it at most, and say so in one line
    naming the host (the logout forgets the sign-in all the same)."""
    sent = 0

    async def serve(stream: anyio.abc.SocketStream) -> None:
        nonlocal sent
        async with stream:
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive()
            path = head.split(b" ", 2)[1]
            if path.startswith(b"/mcp"):
                metadata = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource"
                await stream.send(
                    b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n"
                    + f'www-authenticate: Bearer resource_metadata="{metadata}"\r\n\r\n'.encode()
                )
                return
            length = b"transfer-encoding: chunked" if told == "chunked" else b"content-length: 1000000000"
            await stream.send(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + length + b"\r\n\r\n")
            chunk = b'{"resource": "' + b"x" * 65536
            with anyio.move_on_after(BOUND), contextlib.suppress(anyio.BrokenResourceError):
                while sent < 1 << 30:
                    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk) if told == "chunked" else chunk
                    await stream.send(framed)
                    sent += len(chunk)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    with anyio.fail_after(BOUND):
        async with listener, anyio.create_task_group() as group:
            group.start_soon(listener.serve, serve)
            home = Home(tmp_path, f"http://127.0.0.1:{port}/mcp")
            if command == "login":
                argv = home.lazymcp("login", "signed", "--config", str(home.config), "--no-browser", "--wait", "30")
            else:
                (entry,) = parse_config(json.loads(home.config.read_text())).enabled
                kept = {"tokens": {"access_token": "access-1", "token_type": "Bearer", "refresh_token": "refresh-1"}}
                TokenStore(home.tokens.parent).put(key_of(entry), kept)
                argv = home.lazymcp("logout", "signed", "--config", str(home.config))
            done = await anyio.run_process(argv, env={**os.environ, **home.env}, check=False)
            group.cancel_scope.cancel()
    stderr = done.stderr.decode()
    assert stderr.count("\n") == 1, stderr
    assert f"the authorization server at 127.0.0.1 answered over {64 * 1024} bytes" in stderr, stderr
    if command == "login":
        assert done.returncode != 0
    else:
        assert done.returncode == 0 and "not revoked at the server" in stderr, stderr
        assert json.loads(home.tokens.read_text()) == {}  # forgotten all the same
    assert sent < 64 << 20  # read no further than the bound (and what the sockets' buffers hold)
