"""This process's stdin and stdout as the client side of a session (the proxy's or the gateway's).

A ``Driver`` (``lazymcp.run.driver``) runs one client, a core and its servers; here the client is this
process's stdin and stdout (``lazymcp.run.http_front`` serves HTTP clients instead). The paths use
asyncio's protocol callbacks rather than stream tasks, so a message crosses in one callback with no
task switch: a ``tools/call`` round trip through the proxy costs little more than a plain byte relay.

stdin and stdout may be pipes, sockets, ttys, regular files or ``/dev/null``: what the event loop
cannot watch is read in a worker thread and written directly. Reading stops while the client does
not read its answers, or a server does not take its requests (backpressure), so neither side can
make lazymcp buffer without bound.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import signal
import stat
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lazymcp.core.actions import Core
from lazymcp.protocol.jsonrpc import Frame, line_of
from lazymcp.protocol.limits import FLUSH_GRACE, READ_SIZE, fix_mmap_threshold
from lazymcp.run.connections import Connector, Lines, connect, small_reads
from lazymcp.run.driver import Driver

if TYPE_CHECKING:
    from lazymcp.run.manifests import ManifestStore


class _Out(asyncio.Protocol):
    """The client's stdout, reporting when its buffer fills (the client is not reading) and empties."""

    def __init__(self, on_pressure: Callable[[bool], None]) -> None:
        self.on_pressure = on_pressure
        self.closed = asyncio.get_running_loop().create_future()

    def pause_writing(self) -> None:
        self.on_pressure(True)

    def resume_writing(self) -> None:
        self.on_pressure(False)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class ClientStdio:
    """This process's stdin and stdout as the client: lines in, lines out, with flow control."""

    def __init__(self, stdin: Any, stdout: Any) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self._out: asyncio.WriteTransport | None = None
        self._out_protocol: _Out | None = None
        self._out_fd: int | None = None
        self._in: asyncio.ReadTransport | None = None
        self._reader: asyncio.Task[None] | None = None
        self._resume = asyncio.Event()
        self._lines: Lines | None = None
        self._resume.set()
        self._reasons: set[str] = set()
        self.on_out_pressure: Callable[[bool], None] = lambda paused: None

    async def open_output(self) -> None:
        loop = asyncio.get_running_loop()
        if not _pollable(self.stdout, selectors.EVENT_WRITE):  # a regular file or /dev/null: writes do not block
            self._out_fd = self.stdout.fileno()
            return
        self._out, protocol = await loop.connect_write_pipe(lambda: _Out(self.on_out_pressure), self.stdout)
        self._out_protocol = protocol

    def write_frame(self, frame: Frame) -> None:
        """Write one message (a message that cannot be encoded becomes the error answering it)."""
        line = line_of(frame)
        if line is not None:
            self.write(line)

    def write(self, line: bytes) -> None:
        if self._out is not None:
            if not self._out.is_closing():
                self._out.writelines((line, b"\n"))
        elif self._out_fd is not None:
            data = memoryview(line + b"\n")
            try:
                while data:
                    data = data[os.write(self._out_fd, data) :]
            except OSError:
                self._out_fd = None

    async def open_input(self, lines: Lines) -> None:
        self._lines = lines
        loop = asyncio.get_running_loop()
        if not _pollable(self.stdin, selectors.EVENT_READ):  # a regular file or /dev/null: a worker thread reads
            self._reader = asyncio.ensure_future(self._read_blocking(lines))
            return
        self._in, _ = await loop.connect_read_pipe(lambda: lines, self.stdin)
        small_reads(self._in)

    async def _read_blocking(self, lines: Lines) -> None:
        loop = asyncio.get_running_loop()
        fd = self.stdin.fileno()
        while True:
            await self._resume.wait()
            try:
                chunk = await loop.run_in_executor(None, os.read, fd, READ_SIZE)
            except OSError:
                chunk = b""
            if not chunk:
                lines.eof_received()
                return
            lines.data_received(chunk)

    def hold(self, reason: str, paused: bool) -> None:
        """Stop reading the client while any reason holds (its answers unread, a server full)."""
        was = bool(self._reasons)
        if paused:
            self._reasons.add(reason)
        else:
            self._reasons.discard(reason)
        if bool(self._reasons) == was:
            return
        if self._lines is not None:
            self._lines.hold(bool(self._reasons))  # the lines already read wait too
        if self._reasons:
            self._resume.clear()
            if self._in is not None and not self._in.is_closing():
                self._in.pause_reading()
        else:
            self._resume.set()
            if self._in is not None and not self._in.is_closing():
                self._in.resume_reading()

    async def close(self) -> None:
        """Stop reading, and write what is buffered for the client (bounded)."""
        if self._in is not None:
            self._in.close()
        if self._reader is not None:
            self._reader.cancel()
        if self._out is not None and self._out_protocol is not None:
            self._out.close()
            try:
                await asyncio.wait_for(asyncio.shield(self._out_protocol.closed), FLUSH_GRACE)
            except TimeoutError:
                self._out.abort()


def _pollable(stream: Any, events: int) -> bool:
    """Can the event loop watch this file? (epoll refuses regular files and /dev/null.)"""
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, events)
        except (OSError, ValueError):
            return False
    return True


async def run_stdio(
    core: Core,
    stdin: Any = None,
    stdout: Any = None,
    *,
    store: ManifestStore | None = None,
    eager: bool = False,
    connector: Connector = connect,
) -> int:
    """Serve the client on this process's stdio until its input ends and its requests are answered (0),
    the session fails (1), or a signal stops it (128 + the signal's number)."""
    fix_mmap_threshold()
    loop = asyncio.get_running_loop()
    client = ClientStdio(stdin if stdin is not None else sys.stdin.buffer, stdout or sys.stdout.buffer)
    driver = Driver(core, client.write_frame, store=store, connector=connector)

    def out_pressure(paused: bool) -> None:
        client.hold("output", paused)
        driver.pause(paused)  # nor read the servers: their messages would pile up here

    client.on_out_pressure = out_pressure
    driver.on_hold = client.hold
    await client.open_output()
    signals = _on_signals(loop, driver)
    try:
        await driver.start(eager)
        if not driver.done.done():
            await client.open_input(Lines(driver.from_client, driver.client_gone))
        return await driver.done
    finally:
        await driver.close()
        await client.close()
        for signum in signals:
            loop.remove_signal_handler(signum)


def _on_signals(loop: asyncio.AbstractEventLoop, driver: Driver) -> list[int]:
    """SIGTERM and SIGINT end the session at once, answering what is owed; returns the signals handled."""
    command = f"the {driver.core.command}"
    handled: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        name = signal.Signals(signum).name
        try:
            loop.add_signal_handler(signum, driver.interrupt, f"{command} was stopped by {name}", 128 + signum)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
            continue
        handled.append(signum)
    return handled
