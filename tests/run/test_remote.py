"""Remote servers that cannot be used are named at once, in one line each (the server, its URL and the
cause), by ``lazymcp stats --config``, the gateway and ``lazymcp proxy --url``: a closed port, a name that
does not resolve, TLS against a plain HTTP server, 401, 404 and answers that are not MCP, from a small
real HTTP server."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
from collections.abc import AsyncGenerator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from lazymcp.core.entries import ServerEntry
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.remote import HttpConnection

from ..conftest import build_plain, free_port, serving, tool, until
from ..raw import INIT, INITIALIZED, gateway, peer, request, tool_call

BOUND = 120
"""Far below the 300 s a remote server that cannot be reached used to cost, on a loaded machine."""


class Refusing(BaseHTTPRequestHandler):
    """Not an MCP server: what each path answers is an HTTP answer an MCP client cannot use."""

    def answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        status, kind, body = {
            "/auth": (401, "text/plain", b"sign in first"),
            "/page": (200, "text/html", b"<html><body>a web page</body></html>"),
            "/json": (200, "application/json", b'{"hello": "world"}'),
        }.get(self.path, (404, "text/plain", b"not here"))
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        if status == 401:
            self.send_header("www-authenticate", 'Bearer realm="test"')
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET = answer

    def log_message(self, format: str, *args: object) -> None:
        pass


Cases = dict[str, tuple[str, str]]


@pytest.fixture(scope="module")
def cases() -> Iterator[Cases]:
    """Each server by name: its URL, and the words its cause is told in (``Refusing`` serves the last four)."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield servers(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def servers(port: int) -> Cases:
    base = f"http://127.0.0.1:{port}"
    return {
        "closed": (f"http://127.0.0.1:{free_port()}/mcp", "connection refused"),
        "nowhere": ("http://lazymcp-test.invalid/mcp", "'lazymcp-test.invalid' does not resolve"),
        "tls": (f"https://127.0.0.1:{port}/mcp", "TLS handshake failed"),
        "auth": (f"{base}/auth", "HTTP 401 Unauthorized"),
        "missing": (f"{base}/mcp", "HTTP 404 Not Found"),
        "page": (f"{base}/page", "text/html, not MCP"),
        "json": (f"{base}/json", "JSON that is not JSON-RPC"),
    }


def config_of(tmp_path: Path, cases: Cases) -> Path:
    path = tmp_path / "mcp.json"
    entries = {name: {"url": url} for name, (url, _) in cases.items()}
    path.write_text(json.dumps({"mcpServers": entries}))
    return path


def named(text: str, name: str, url: str, cause: str) -> bool:
    """Does one line of ``text`` name the server, its URL and the cause?"""
    return any(f"server {name!r}" in line and url in line and cause in line for line in text.splitlines())


def test_stats_names_each_unusable_remote_server_in_one_line(cases: Cases, tmp_path: Path) -> None:
    config = config_of(tmp_path, cases)
    command = [sys.executable, "-m", "lazymcp", "stats", "--config", str(config)]

    async def run() -> tuple[int, str]:
        with anyio.fail_after(BOUND):
            done = await anyio.run_process(command, check=False, env={"LAZYMCP_CACHE_DIR": str(tmp_path / "c")})
        return done.returncode, done.stderr.decode()

    status, stderr = anyio.run(run)
    assert status == 1, stderr
    for name, (url, cause) in cases.items():
        assert named(stderr, name, url, cause), (name, stderr)
    assert "Traceback" not in stderr


@pytest.mark.anyio
async def test_the_gateway_names_each_unusable_remote_server_on_stderr_in_describe_tools_and_calls(
    cases: Cases, tmp_path: Path
) -> None:
    """The 401 server's tool is known from its manifest (it listed it when it still let the gateway in), so a
    call reaches it and fails with its cause."""
    config = config_of(tmp_path, cases)
    ManifestStore(tmp_path / "cache").save(ServerEntry("auth", url=cases["auth"][0]).identity(), [tool("anything")])
    with anyio.fail_after(BOUND):
        async with gateway(config, tmp_path / "cache") as client:
            await client.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/list"))
            assert "result" in await client.answer(1)
            await client.send(tool_call(2, "auth__anything"))
            called = await client.answer(2)
            await client.send(tool_call(3, "describe_tools", names=["auth__anything"]))
            described = await client.answer(3)
            assert client.process.stdin is not None
            await client.process.stdin.aclose()
            stderr = await client.stderr()
    unlisted = json.loads(described["result"]["content"][0]["text"])["unlisted"]
    assert "HTTP 401 Unauthorized" in json.dumps(described["result"]), described
    for name, (url, cause) in cases.items():
        assert named(stderr, name, url, cause), (name, stderr)
        if name != "auth":
            assert url in unlisted[name] and cause in unlisted[name], unlisted
    assert "HTTP 401 Unauthorized" in json.dumps(called), called
    assert "Traceback" not in stderr


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["closed", "nowhere", "tls", "auth", "missing", "page", "json"])
async def test_the_proxy_answers_initialize_with_why_its_remote_server_cannot_be_used(cases: Cases, name: str) -> None:
    url, cause = cases[name]
    with anyio.fail_after(BOUND):
        async with peer([sys.executable, "-m", "lazymcp", "proxy", "--url", url]) as client:
            await client.send(request(1, "initialize", INIT))
            answer = await client.answer(1)
            stderr = await client.stderr()
            status = await client.process.wait()  # it ends by itself
    message = answer["error"]["message"]
    assert url in message and cause in message, message
    assert any(url in line and cause in line for line in stderr.splitlines()), stderr
    assert "Traceback" not in stderr, stderr
    assert status == 1


@pytest.mark.anyio
async def test_sigterm_ends_a_proxy_whose_remote_server_never_answers_with_initialize_answered() -> None:
    """The server takes the connection and never answers: SIGTERM answers the client and ends the proxy."""
    with socket.create_server(("127.0.0.1", free_port())) as silent:  # the kernel accepts; nobody answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        with anyio.fail_after(BOUND):
            async with peer([sys.executable, "-m", "lazymcp", "proxy", "--url", url]) as client:
                await client.send(request(1, "initialize", INIT))
                await until(lambda: silent_has_a_connection(silent), what="the proxy's connection")
                client.process.send_signal(signal.SIGTERM)
                answer = await client.answer(1)
                stderr = await client.stderr()
                status = await client.process.wait()
    for connection in HELD:
        connection.close()
    assert "SIGTERM" in answer["error"]["message"]
    assert "Traceback" not in stderr and "InvalidStateError" not in stderr, stderr
    assert status == 128 + signal.SIGTERM


def silent_has_a_connection(server: socket.socket) -> bool:
    """Has a connection come (it is then taken and kept open, unanswered)?"""
    server.setblocking(False)
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    HELD.append(connection)
    return True


HELD: list[socket.socket] = []


@pytest.mark.anyio
@pytest.mark.parametrize("front", ["gateway", "proxy"])
async def test_an_sse_server_is_reached_behind_the_gateway_and_the_proxy(front: str, tmp_path: Path) -> None:
    """A real SSE server (the SDK's ``sse`` transport): the gateway reaches it by its entry's ``type``, the
    proxy by its URL ending in ``/sse``, as clients guess."""
    port = free_port()
    async with serving(build_plain().sse_app(), port):
        url = f"http://127.0.0.1:{port}/sse"
        if front == "gateway":
            config = tmp_path / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"legacy": {"type": "sse", "url": url}}}))
            args, name = ["gateway", "--config", str(config), "--mode", "eager"], "legacy__add"
        else:
            args, name = ["proxy", "--mode", "eager", "--url", url], "add"
        env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
        params = StdioServerParameters(command=sys.executable, args=["-m", "lazymcp", *args], env=env)
        with anyio.fail_after(BOUND):
            async with Client(params, mode="legacy") as client:
                listing = await client.list_tools()
                added = await client.call_tool(name, {"a": 2, "b": 3})
    assert name in [tool.name for tool in listing.tools]
    assert added.structured_content == {"result": 5}


class _Breaks(httpx2.Auth):
    """Signs every request until told to break, then fails inside its own flow, as a bug would."""

    def __init__(self) -> None:
        self.broken = False

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self.broken:
            raise RuntimeError("the flow broke")
        yield request


@pytest.mark.anyio
async def test_a_request_that_fails_inside_the_http_client_fails_its_server_at_once_not_after_the_timeout() -> None:
    """Whatever a request to a remote server raises (here the client's own auth flow, as a bug in it
    would), the server fails at once, named with the URL and the error's kind: the SDK's transport is not
    left to end in silence while the call waits out its timeout."""
    port = free_port()
    breaks = _Breaks()
    async with serving(build_plain().streamable_http_app(), port) as url:
        connection = HttpConnection(url, auth=breaks)
        lines: list[bytes] = []
        gone: list[str] = []
        with anyio.fail_after(30):
            await connection.start(lines.append, gone.append)
            connection.send(json.dumps(request(1, "initialize", INIT)).encode() + b"\n")
            await until(lambda: len(lines) == 1, within=20, what="initialize answered")
            connection.send(json.dumps(INITIALIZED).encode() + b"\n")
            breaks.broken = True
            connection.send(json.dumps(tool_call(2, "add", a=1, b=2)).encode() + b"\n")
            await until(lambda: bool(gone), within=20, what="the server failed")
            await connection.stop()
    assert gone == [f"{url}: a request to it failed (RuntimeError)"], gone
