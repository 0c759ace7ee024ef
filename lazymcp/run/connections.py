"""How a server is reached: a spawned process over its stdio (``ProcessConnection``) or a
streamable-HTTP server (``HttpConnection``), both behind one small interface that moves lines.

Both apply backpressure: when the server does not take what is sent (its stdin pipe is full, or the
HTTP outbox holds ``OUTBOX`` lines), ``on_pressure(True)`` tells the owner to stop reading from the
client until ``on_pressure(False)``; and ``pause()`` stops reading from the server while the client
is not reading its answers.
"""

from __future__ import annotations

import asyncio
import ctypes
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from lazymcp.local.environment import passed_on, server_environment
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import UpstreamError
from lazymcp.protocol.limits import OUTBOX, READ_SIZE, SHUTDOWN_GRACE

if TYPE_CHECKING:
    from lazymcp.core.entries import ServerEntry

LineSink = Callable[[bytes], None]
Pressure = Callable[[bool], None]


class Connection(Protocol):
    """A server's process or connection: started once, fed lines, reporting its lines and its end."""

    async def start(self, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        """Connect. Raises ``UpstreamError`` when the server cannot be reached or started."""
        ...

    def send(self, line: bytes) -> None: ...

    @property
    def buffered(self) -> int:
        """Bytes sent and not yet taken by the server."""
        ...

    def pause(self, paused: bool) -> None:
        """Stop (True) or resume (False) reading what the server sends."""
        ...

    on_pressure: Pressure

    async def stop(self) -> None: ...


def small_reads(transport: object) -> None:
    """Read at most ``READ_SIZE`` bytes at a time from an asyncio pipe transport (its ``max_size``,
    256 KiB by default; a transport without one is left as it is)."""
    if hasattr(transport, "max_size"):
        transport.max_size = READ_SIZE  # pyright: ignore[reportAttributeAccessIssue]


class Lines(asyncio.Protocol):
    """Split a byte stream into lines and hand each to ``on_line``; report the end to ``on_eof``.

    ``hold(True)`` stops handing lines over at the next line, even inside one read (a single read
    can hold a thousand requests, each with a large answer); ``hold(False)`` goes on where it stopped.
    """

    def __init__(self, on_line: LineSink, on_eof: Callable[[], None]) -> None:
        self._on_line = on_line
        self._on_eof = on_eof
        self._chunks: list[bytes] = []  # a line in pieces: joined once, so a huge line costs linear time
        self._ready: deque[bytes] = deque()  # whole lines not yet handed over (held)
        self._held = False
        self._eof = False
        self._ended = False

    def data_received(self, data: bytes) -> None:
        if b"\n" not in data:
            self._chunks.append(data)
            return
        if self._chunks:
            self._chunks.append(data)
            data = b"".join(self._chunks)
            self._chunks = []
        lines = data.split(b"\n")
        tail = lines.pop()
        if tail:
            self._chunks.append(tail)
        self._ready.extend(line for line in lines if line.strip())
        self._hand_over()

    def hold(self, held: bool) -> None:
        self._held = held
        self._hand_over()

    def _hand_over(self) -> None:
        while self._ready and not self._held:
            self._on_line(self._ready.popleft())
        if self._eof and not self._ready:
            self._end()

    def eof_received(self) -> bool:
        rest = b"".join(self._chunks)
        self._chunks = []
        if rest.strip():
            self._ready.append(rest)
        self._eof = True
        self._hand_over()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        self._hand_over()

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            self._on_eof()


class _ChildPipes(asyncio.SubprocessProtocol):
    def __init__(self, connection: ProcessConnection) -> None:
        self.connection = connection
        self.lines = Lines(connection.on_line, connection.closed_stdout)
        self.exited = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.lines.data_received(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.lines.eof_received()

    def pause_writing(self) -> None:  # the server's stdin is full: it is not reading
        self.connection.on_pressure(True)

    def resume_writing(self) -> None:
        self.connection.on_pressure(False)

    def process_exited(self) -> None:
        self.exited.set()
        self.connection.exited()


class ProcessConnection:
    """A server spawned as a child process, over its stdin and stdout; its stderr is ours."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> None:
        self.command = list(command)
        self.env = dict(env)
        """The server's whole environment (``lazymcp.local.environment.server_environment``)."""
        self.cwd = cwd
        self.on_line: LineSink = lambda line: None
        self.on_pressure: Pressure = lambda paused: None
        self._on_gone: Callable[[str], None] = lambda reason: None
        self._transport: asyncio.SubprocessTransport | None = None
        self._protocol: _ChildPipes | None = None
        self._stdin: asyncio.WriteTransport | None = None

    async def start(self, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        self.on_line, self._on_gone = on_line, on_gone
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _ChildPipes(self),
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,
                env=self.env,
                cwd=self.cwd,
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            reason = exc.strerror or exc
            raise UpstreamError(f"cannot start the upstream server {self.command[0]!r}: {reason}") from None
        self._transport, self._protocol = transport, protocol
        self._stdin = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
        small_reads(transport.get_pipe_transport(1))

    @property
    def pid(self) -> int | None:
        return self._transport.get_pid() if self._transport is not None else None

    def send(self, line: bytes) -> None:
        if self._stdin is not None and not self._stdin.is_closing():
            self._stdin.writelines((line, b"\n"))

    @property
    def buffered(self) -> int:
        return self._stdin.get_write_buffer_size() if self._stdin is not None else 0

    def pause(self, paused: bool) -> None:
        if self._transport is None:
            return
        out = cast(asyncio.ReadTransport | None, self._transport.get_pipe_transport(1))
        if out is None or out.is_closing():
            return
        if paused:
            out.pause_reading()
        else:
            out.resume_reading()

    def exited(self) -> None:
        code = self._transport.get_returncode() if self._transport is not None else None
        self._on_gone("the upstream server exited" + ("" if code is None else f" with code {code}"))

    def closed_stdout(self) -> None:
        # Usually the process is exiting: wait a moment so the report can give its exit code.
        asyncio.get_running_loop().call_later(0.5, self._on_gone, "the upstream server closed its stdout")

    async def stop(self) -> None:
        """Close the server's stdin; terminate it, then kill it, if it does not exit in time."""
        transport, protocol = self._transport, self._protocol
        if transport is None or protocol is None:
            return
        if self._stdin is not None:
            self._stdin.close()
        for step in (None, transport.terminate, transport.kill):
            if protocol.exited.is_set():
                break
            if step is not None:
                try:
                    step()
                except ProcessLookupError:
                    break
            try:
                await asyncio.wait_for(protocol.exited.wait(), SHUTDOWN_GRACE)
            except TimeoutError:
                continue
        transport.close()


def connect(entry: ServerEntry, *, isolated: bool) -> Connection:
    """How a server is reached: its process, or its URL. ``isolated``: a gateway's server, given the safe
    base of the environment and its own; else the proxy's one server, given the proxy's whole environment
    (``lazymcp.local.environment``)."""
    if entry.url is not None:
        return HttpConnection(entry.url, entry.headers)
    env = server_environment(entry.env, entry.inherit_env) if isolated else passed_on(entry.env)
    return ProcessConnection(entry.command, env, entry.cwd)


def _parent_death_signal() -> Callable[[], None] | None:
    """On Linux, what a child calls before it runs its program so that the kernel kills it when lazymcp
    dies, however it dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    set_death_signal, kill = 1, int(signal.SIGKILL)  # PR_SET_PDEATHSIG, from linux/prctl.h
    return lambda: prctl(set_death_signal, kill, 0, 0, 0)


_die_with_parent = _parent_death_signal()


class HttpConnection:
    """A streamable-HTTP server, through the SDK's client transport.

    Lines are parsed once on the way up (the SDK's writer takes a typed message) and encoded once on
    the way down; the outbox holds at most ``OUTBOX`` lines before the owner is told to stop reading.
    """

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.headers = dict(headers or {})
        """Sent with every request (a gateway entry's ``headers``: credentials, usually)."""
        self.on_pressure: Pressure = lambda paused: None
        self._stack = AsyncExitStack()
        self._outbox: MemoryObjectSendStream[bytes] | None = None
        self._legacy_version: str | None = None
        self._resume = asyncio.Event()
        self._resume.set()
        self._queued = 0
        self._queued_bytes = 0
        self._pressed = False

    async def start(self, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        from mcp.client.streamable_http import streamable_http_client

        try:
            client = None
            if self.headers:  # the timeouts the SDK's own client has: a response stream may stay open
                import httpx2

                timeout = httpx2.Timeout(30.0, read=300.0)
                client = await self._stack.enter_async_context(
                    httpx2.AsyncClient(headers=self.headers, timeout=timeout)
                )
            read, write = await self._stack.enter_async_context(streamable_http_client(self.url, http_client=client))
        except Exception as exc:
            raise UpstreamError(f"cannot reach the upstream server at {self.url}: {exc}") from None
        outbox, pending = anyio.create_memory_object_stream[bytes](sys.maxsize)
        self._outbox = outbox
        group = await self._stack.enter_async_context(anyio.create_task_group())
        group.start_soon(self._read, read, on_line, on_gone)
        group.start_soon(self._write, pending, write)
        self._stack.callback(group.cancel_scope.cancel)  # runs first: stop the pumps, then the transport

    def send(self, line: bytes) -> None:
        if self._outbox is None:
            return
        self._outbox.send_nowait(line)
        self._queued += 1
        self._queued_bytes += len(line)
        if self._queued >= OUTBOX and not self._pressed:
            self._pressed = True
            self.on_pressure(True)

    @property
    def buffered(self) -> int:
        return self._queued_bytes

    def pause(self, paused: bool) -> None:
        if paused:
            self._resume.clear()
        else:
            self._resume.set()

    async def _read(self, read: Any, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        from mcp.shared.message import SessionMessage

        async for item in read:
            if isinstance(item, Exception):
                on_gone(f"the upstream at {self.url} failed: {item}")
                return
            await self._resume.wait()
            message = cast(SessionMessage, item).message
            line = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            version = jsonrpc.field(getattr(message, "result", None), "protocolVersion")
            if isinstance(version, str):
                self._legacy_version = version  # the 2025 handshake's answer: later requests carry it
            on_line(line)
        on_gone(f"the upstream at {self.url} closed the connection")

    async def _write(self, pending: MemoryObjectReceiveStream[bytes], write: Any) -> None:
        from mcp.shared.message import ClientMessageMetadata, SessionMessage
        from mcp_types import jsonrpc_message_adapter

        async for line in pending:
            self._queued -= 1
            self._queued_bytes -= len(line)
            if self._pressed and self._queued < OUTBOX // 2:
                self._pressed = False
                self.on_pressure(False)
            try:
                raw = jsonrpc.parse(line)
                message = jsonrpc_message_adapter.validate_python(raw)
            except ValueError:
                continue  # the core checked it: nothing it forwards fails here
            metadata = ClientMessageMetadata(headers=self._headers(raw))
            await write.send(SessionMessage(message, metadata=metadata))

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        from mcp.shared.inbound import (
            MCP_METHOD_HEADER,
            MCP_NAME_HEADER,
            MCP_PROTOCOL_VERSION_HEADER,
            NAME_BEARING_METHODS,
            encode_header_value,
        )

        from lazymcp.protocol.bridge import PROTOCOL_VERSION_KEY

        method = message.get("method")
        meta = jsonrpc.params_meta(message)
        traceparent = meta.get("traceparent")
        headers: dict[str, str] = {}
        if isinstance(traceparent, str) and jsonrpc.TRACEPARENT.fullmatch(traceparent):  # the W3C header too
            headers["traceparent"] = traceparent
        version = meta.get(PROTOCOL_VERSION_KEY)
        if isinstance(version, str):
            headers[MCP_PROTOCOL_VERSION_HEADER] = version
            if isinstance(method, str):
                headers[MCP_METHOD_HEADER] = method
                name = jsonrpc.field(message.get("params"), NAME_BEARING_METHODS.get(method, ""))
                if isinstance(name, str):
                    headers[MCP_NAME_HEADER] = encode_header_value(name)
            return headers
        if self._legacy_version is not None and method != "initialize":
            headers[MCP_PROTOCOL_VERSION_HEADER] = self._legacy_version
        return headers

    async def stop(self) -> None:
        if self._outbox is not None:
            self._outbox.close()
        self._resume.set()
        await self._stack.aclose()
