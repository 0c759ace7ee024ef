"""Raw JSON-RPC on a process's pipes and raw HTTP on a socket, as the process tests drive lazymcp: the
messages, the commands that start a proxy or a gateway, and the drivers that talk to them. No SDK on
this side, so a test sees exactly what goes over the wire."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from .conftest import SERVERS, free_port, until_listening
from .forkserver import program_pid

TIMEOUT = 30
"""Bound on one test's conversation with a few processes, on a loaded machine."""
STDERR_TAIL = 4000
"""How much of a failed server's stderr a test's failure shows."""
PROXY = [sys.executable, "-m", "lazymcp", "proxy"]
PID_SERVER = [sys.executable, str(SERVERS / "pid_server.py")]
"""A raw server whose ``whoami`` tells its process id, and whose ``raw`` echoes the call's line as read."""


def pid_of(answer: dict[str, Any] | None) -> str:
    """The process id a ``PID_SERVER``'s ``whoami`` answered with."""
    assert answer is not None and "result" in answer, answer
    return answer["result"]["content"][0]["text"]


# --- messages ---------------------------------------------------------------------------------------

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "peer", "version": "1"}}
"""The params of a 2025-11-25 client's ``initialize``."""
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "peer", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
"""The ``_meta`` a 2026-07-28 client sends with each request."""
MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28"}


def request(request_id: object, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def tool_call(request_id: object, name: str, **arguments: Any) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": name, "arguments": arguments})


def modern(request_id: object, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 client's request: ``params`` with the client's ``_meta``."""
    return request(request_id, method, {**(params or {}), "_meta": MODERN})


def modern_call(request_id: object, name: str, token: object = None, **arguments: Any) -> dict[str, Any]:
    """A 2026-07-28 client's ``tools/call`` (with a progress token, when given)."""
    meta = {**MODERN, **({"progressToken": token} if token is not None else {})}
    return request(request_id, "tools/call", {"name": name, "arguments": arguments, "_meta": meta})


def frame(message: dict[str, Any]) -> bytes:
    """``message`` as a line on a stdio pipe."""
    return json.dumps(message).encode() + b"\n"


def line(message: dict[str, Any]) -> bytes:
    """``message`` as the bytes of one line (compact, no newline): what a router is handed."""
    return orjson.dumps(message)


# --- commands ---------------------------------------------------------------------------------------


def hostile(kind: str = "plain") -> list[str]:
    """``servers/hostile_upstream.py KIND``: a server that misbehaves on purpose."""
    return [sys.executable, str(SERVERS / "hostile_upstream.py"), kind]


def proxy(*upstream: str, flags: Sequence[str] = (), timeout: float | None = None) -> list[str]:
    """``lazymcp proxy FLAGS -- UPSTREAM``, with ``--timeout`` when ``timeout`` is given."""
    bound = [] if timeout is None else ["--timeout", f"{timeout:g}"]
    return [*PROXY, *bound, *flags, "--", *upstream]


def config_of(tmp_path: Path, **servers: list[str]) -> Path:
    """A gateway configuration (``mcp.json`` in ``tmp_path``) of the stdio ``servers``, by name."""
    path = tmp_path / "mcp.json"
    entries = {name: {"command": command[0], "args": command[1:]} for name, command in servers.items()}
    path.write_text(json.dumps({"mcpServers": entries}))
    return path


# --- over stdio -------------------------------------------------------------------------------------


class Peer:
    """A raw JSON-RPC client on a process's pipes."""

    def __init__(self, process: Process) -> None:
        assert process.stdout is not None and process.stdin is not None
        self.process = process
        self.out = BufferedByteReceiveStream(process.stdout)

    async def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(b"".join(frame(message) for message in messages))

    async def read(self) -> dict[str, Any]:
        return json.loads(await self.out.receive_until(b"\n", 1 << 26))

    async def answer(self, request_id: object) -> dict[str, Any]:
        """The answer to ``request_id`` (what comes before it is skipped)."""
        while True:
            message = await self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def asked(self, method: str) -> dict[str, Any]:
        """The next request of ``method`` the client is sent (what comes before it is skipped)."""
        while (message := await self.read()).get("method") != method or "id" not in message:
            pass
        return message

    async def handshake(self) -> None:
        await self.send(request(0, "initialize", INIT))
        assert "result" in await self.answer(0)
        await self.send(INITIALIZED)

    async def begin(self, capabilities: dict[str, Any] | None = None) -> None:
        """Initialize (declaring ``capabilities``), then list the tools (id 1) and wait for the listing."""
        init = INIT if capabilities is None else {**INIT, "capabilities": capabilities}
        await self.send(request(0, "initialize", init), INITIALIZED, request(1, "tools/list"))
        await self.answer(1)

    async def stderr(self) -> str:
        assert self.process.stderr is not None
        return b"".join([chunk async for chunk in self.process.stderr]).decode()


@asynccontextmanager
async def peer(command: Sequence[str], env: dict[str, str] | None = None) -> AsyncIterator[Peer]:
    """A ``Peer`` on ``command`` run as a process (``env``: set on top of ours), killed at the end if
    still running."""
    environ = {**os.environ, **env} if env else None
    async with await anyio.open_process(list(command), env=environ) as process:
        try:
            yield Peer(process)
        finally:
            if process.returncode is None:
                process.kill()
    await _written_off(process)


async def _written_off(process: Process) -> None:
    """Wait (a bounded time) until what was left unwritten to the process's stdin is given up. A process
    killed while its stdin was full leaves the pipe closing until the reading end is gone; under the fork
    server (``tests/forkserver.py``) that end is the program's, which dies just after the process the test
    killed, so the pipe would outlive the test's event loop."""
    writer = getattr(process.stdin, "_stream", None)  # anyio's wrapper of an asyncio StreamWriter
    if isinstance(writer, asyncio.StreamWriter) and writer.transport.get_write_buffer_size():
        with anyio.move_on_after(5), contextlib.suppress(OSError):
            await writer.wait_closed()


def gateway(config: Path, cache: Path, *flags: str) -> AbstractAsyncContextManager[Peer]:
    """A ``Peer`` on ``lazymcp gateway --config CONFIG FLAGS`` over stdio, its manifests in ``cache``."""
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), *flags]
    return peer(command, env={"LAZYMCP_CACHE_DIR": str(cache)})


# --- processes --------------------------------------------------------------------------------------


def gone(pid: int) -> bool:
    """The process has exited (it may linger as a zombie until its parent reaps it)."""
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rpartition(")")[2].split()[0] == "Z"


def rss_kib(pid: int) -> int:
    """The resident memory of the process's program (``tests/forkserver.py``), in KiB."""
    for row in Path(f"/proc/{program_pid(pid)}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1])
    return 0


def children(pid: int) -> list[int]:
    """The process ids of the children of ``pid``'s program (zombies included, until it reaps them): of the
    processes that run them, where a program was handed over (``tests/forkserver.py``)."""
    found: list[int] = []
    for task in Path(f"/proc/{program_pid(pid)}/task").iterdir():
        try:
            listed = (task / "children").read_text().split()
        except FileNotFoundError:  # a thread that ended since the directory was read
            continue
        found += [program_pid(int(child)) for child in listed]
    return found


# --- over HTTP --------------------------------------------------------------------------------------


def mcp_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


@asynccontextmanager
async def listening(
    command: Sequence[str], port: int, *, env: dict[str, str] | None = None, stderr: int | None = subprocess.PIPE
) -> AsyncIterator[Process]:
    """``command``, a server of 127.0.0.1:``port`` (``env``: set on top of ours), once it accepts
    connections; terminated at the end, and its exit awaited."""
    environ = {**os.environ, **env} if env else None
    async with await anyio.open_process(list(command), stdout=None, stderr=stderr, env=environ) as process:
        try:
            try:
                await until_listening(port, process, within=TIMEOUT)
            except pytest.fail.Exception as exc:  # why it did not listen, in its own words
                said = await _said(process) if process.returncode is not None else ""
                pytest.fail(f"{exc.msg}; its stderr:\n{said}" if said else str(exc.msg))
            yield process
        finally:
            if process.returncode is None:
                process.terminate()
                with anyio.fail_after(10):
                    await process.wait()


async def _said(process: Process) -> str:
    """What an exited process wrote on its stderr (when piped), its last ``STDERR_TAIL`` characters."""
    if process.stderr is None:
        return ""
    said = bytearray()
    with anyio.move_on_after(5):
        async for chunk in process.stderr:
            said += chunk
    return said.decode(errors="replace")[-STDERR_TAIL:]


@asynccontextmanager
async def http_proxy(
    *upstream: str, flags: Sequence[str] = (), bind: str = "127.0.0.1"
) -> AsyncIterator[tuple[int, Process]]:
    """``lazymcp proxy --http BIND:PORT FLAGS -- UPSTREAM`` once it listens: its port and process."""
    port = free_port()
    async with listening([*PROXY, "--http", f"{bind}:{port}", *flags, "--", *upstream], port) as process:
        yield port, process


@asynccontextmanager
async def http_gateway(
    config: Path, cache: Path, port: int, flags: Sequence[str] = (), env: dict[str, str] | None = None
) -> AsyncIterator[Process]:
    """``lazymcp gateway --config CONFIG --http 127.0.0.1:PORT FLAGS`` once it listens, its manifests in
    ``cache`` (``env``: set on top of ours)."""
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"127.0.0.1:{port}"]
    async with listening([*command, *flags], port, env={"LAZYMCP_CACHE_DIR": str(cache), **(env or {})}) as process:
        yield process


async def http(
    port: int,
    method: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    host: str = "127.0.0.1",
    sent: anyio.Event | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.1 exchange on a fresh connection: status, headers, body (``sent`` is set once the
    request is written)."""
    fields = {"Host": f"{host}:{port}", "Content-Type": "application/json", "Connection": "close"}
    fields |= {"Accept": "application/json, text/event-stream", "Content-Length": str(len(body))}
    fields |= headers or {}
    head = f"{method} /mcp HTTP/1.1\r\n" + "".join(f"{key}: {value}\r\n" for key, value in fields.items()) + "\r\n"
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(head.encode() + body)
        if sent is not None:
            sent.set()
        chunks = []
        try:
            while True:
                chunks.append(await stream.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass
    raw = b"".join(chunks)
    if not raw.startswith(b"HTTP/1."):
        what = f"{raw[:80]!r}, not an HTTP answer" if raw else "nothing: the connection was closed or reset first"
        pytest.fail(f"{method} /mcp on port {port} got {what}")
    top, _, content = raw.partition(b"\r\n\r\n")
    status_line, *rows = top.decode().split("\r\n")
    parsed = {key.lower(): value.strip() for key, _, value in (row.partition(":") for row in rows)}
    return int(status_line.split()[1]), parsed, content


async def post(
    port: int, message: object, headers: dict[str, str] | None = None, *, sent: anyio.Event | None = None
) -> tuple[int, dict[str, Any] | None]:
    """POST ``message``: the status, and the JSON answer, whether the body is JSON or an event stream that ends
    with it (None when it is neither)."""
    status, answer, _ = await post_streamed(port, message, headers, sent=sent)
    return status, answer


async def post_streamed(
    port: int, message: object, headers: dict[str, str] | None = None, *, sent: anyio.Event | None = None
) -> tuple[int, dict[str, Any] | None, list[dict[str, Any]]]:
    """POST ``message``: the status, the answer, and the messages an event-stream body carried before it (a
    request's progress, answered on its own POST)."""
    status, _, content = await http(port, "POST", json.dumps(message).encode(), headers, sent=sent)
    try:
        return status, json.loads(content), []
    except ValueError:
        pass
    rows = content.decode(errors="replace").splitlines()
    events = [json.loads(row[5:]) for row in rows if row.startswith("data:") and row[5:].strip()]
    answers = [event for event in events if "id" in event and ("result" in event or "error" in event)]
    return status, (answers[-1] if answers else None), [event for event in events if "method" in event]


async def open_session(port: int, headers: dict[str, str] | None = None) -> dict[str, str]:
    """A 2025-11-25 session over HTTP, initialized with ``headers``: the headers that name it (and them)."""
    status, found, _ = await http(port, "POST", json.dumps(request(1, "initialize", INIT)).encode(), headers)
    assert status == 200, status
    session = {**(headers or {}), "Mcp-Session-Id": found["mcp-session-id"]}
    await post(port, INITIALIZED, session)
    return session


async def put_in_flight(
    group: TaskGroup, port: int, message: object, session: dict[str, str], outcome: list[Any]
) -> None:
    """POST ``message`` in the background (its answer goes to ``outcome``); returns once the server has it:
    its bytes are written before a ping's connection opens, and the ping is answered."""
    sent = anyio.Event()

    async def run() -> None:
        outcome.append(await post(port, message, session, sent=sent))

    group.start_soon(run)
    await sent.wait()
    await post(port, request(99, "ping"), session)
