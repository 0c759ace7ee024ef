"""``lazymcp proxy``: the I/O around ``Router``, for an upstream server spawned over stdio.

The loop only moves bytes: it splits what arrives into lines, hands each line to the router, and
writes what the router returns. It uses asyncio's protocol callbacks rather than stream tasks, so a
message crosses the proxy in one callback with no task switch: a ``tools/call`` round trip through it
costs little more than a plain byte relay.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

from lazymcp.options import Options
from lazymcp.router import Action, Fail, Router, ToClient, ToServer

EXPIRE_EVERY = 0.25
"""Seconds between checks for requests the upstream has not answered in time."""
SHUTDOWN_GRACE = 2.0
"""Seconds the upstream gets to exit after its stdin closes, before it is terminated."""


class _Lines(asyncio.Protocol):
    """Split a byte stream into lines and hand each to ``on_line``; report the end to ``on_eof``."""

    def __init__(self, on_line: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        self._on_line = on_line
        self._on_eof = on_eof
        self._pending = b""

    def data_received(self, data: bytes) -> None:
        if b"\n" not in data:
            self._pending += data
            return
        lines = (self._pending + data).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            if line.strip():
                self._on_line(line)

    def eof_received(self) -> bool:
        if self._pending.strip():
            line, self._pending = self._pending, b""
            self._on_line(line)
        self._on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_eof()


class _Upstream(asyncio.SubprocessProtocol):
    def __init__(self, proxy: StdioProxy) -> None:
        self.lines = _Lines(proxy.from_server, proxy.upstream_closed_stdout)
        self.proxy = proxy
        self.exited = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.lines.data_received(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.lines.eof_received()

    def process_exited(self) -> None:
        self.exited.set()
        self.proxy.upstream_exited()


class StdioProxy:
    """One proxy session: the client on this process's stdin/stdout, the upstream a child process."""

    def __init__(self, command: Sequence[str], router: Router) -> None:
        self.command = list(command)
        self.router = router
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[int] = self.loop.create_future()
        self._client_out: asyncio.WriteTransport | None = None
        self._upstream: asyncio.SubprocessTransport | None = None
        self._protocol: _Upstream | None = None
        self._upstream_in: asyncio.WriteTransport | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def run(self, stdin: Any = None, stdout: Any = None) -> int:
        """Serve until the client leaves (0) or the upstream fails (1)."""
        stdin = stdin if stdin is not None else sys.stdin.buffer
        stdout = stdout if stdout is not None else sys.stdout.buffer
        writer, _ = await self.loop.connect_write_pipe(asyncio.Protocol, stdout)
        self._client_out = writer
        try:
            transport, _protocol = await self.loop.subprocess_exec(
                lambda: _Upstream(self),
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,  # the upstream's stderr is ours
            )
        except OSError as exc:
            _say(f"cannot start the upstream server {self.command[0]!r}: {exc.strerror or exc}")
            return 1
        self._upstream = transport
        self._protocol = _protocol
        self._upstream_in = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
        client_in, _ = await self.loop.connect_read_pipe(lambda: _Lines(self.from_client, self.client_gone), stdin)
        self._schedule_expiry()
        try:
            return await self.done
        finally:
            if self._timer is not None:
                self._timer.cancel()
            client_in.close()
            await self._stop_upstream()
            await self._drain_client()

    # --- callbacks ---------------------------------------------------------------------------

    def from_client(self, line: bytes) -> None:
        self._carry_out(self.router.from_client(line, self.loop.time()))

    def from_server(self, line: bytes) -> None:
        if not self.done.done():
            self._carry_out(self.router.from_server(line, self.loop.time()))

    def client_gone(self) -> None:
        if not self.done.done():
            self.done.set_result(0)

    def upstream_exited(self) -> None:
        code = self._upstream.get_returncode() if self._upstream is not None else None
        self._fail(f"the upstream server exited with code {code}")

    def upstream_closed_stdout(self) -> None:
        # Usually the process is exiting: wait a moment so the report can give its exit code.
        self.loop.call_later(0.5, self._fail, "the upstream server closed its stdout")

    def _carry_out(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, ToClient):
                if self._client_out is not None and not self._client_out.is_closing():
                    self._client_out.writelines((action.data, b"\n"))
            elif isinstance(action, ToServer):
                if self._upstream_in is not None and not self._upstream_in.is_closing():
                    self._upstream_in.writelines((action.data, b"\n"))
            elif isinstance(action, Fail):  # pyright: ignore[reportUnnecessaryIsInstance]
                self._fail(action.reason)
                return

    def _fail(self, reason: str) -> None:
        if self.done.done():
            return
        self._carry_out(self.router.upstream_failed(reason))
        _say(reason)
        self.done.set_result(1)

    def _schedule_expiry(self) -> None:
        self._carry_out(self.router.expire(self.loop.time()))
        if not self.done.done():
            self._timer = self.loop.call_later(EXPIRE_EVERY, self._schedule_expiry)

    # --- shutdown ----------------------------------------------------------------------------

    async def _stop_upstream(self) -> None:
        """Close the upstream's stdin; terminate it, then kill it, if it does not exit in time."""
        transport, protocol = self._upstream, self._protocol
        if transport is None or protocol is None:
            return
        if self._upstream_in is not None:
            self._upstream_in.close()
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

    async def _drain_client(self) -> None:
        out = self._client_out
        if out is not None and not out.is_closing():
            out.close()
            await asyncio.sleep(0)


def _say(message: str) -> None:
    print(f"lazymcp proxy: {message}", file=sys.stderr, flush=True)  # noqa: T201


def run_stdio_proxy(command: Sequence[str], options: Options | None = None, *, timeout: float | None = 300.0) -> int:
    """Proxy this process's stdio to a spawned upstream; returns the exit status."""
    from lazymcp import __version__

    info = {"name": "lazymcp-proxy", "version": __version__}
    router = Router(options or Options(), timeout=timeout or None, client_info=info)

    async def main() -> int:
        return await StdioProxy(command, router).run()

    return asyncio.run(main())


def run_proxy(
    upstream: Sequence[str] | str,
    options: Options | None = None,
    *,
    timeout: float | None = 300.0,
    http: tuple[str, int] | None = None,
) -> int:
    """Run the proxy: ``upstream`` is a command (stdio) or a URL (streamable HTTP); clients come over
    this process's stdio, or streamable HTTP at ``http`` (host, port)."""
    if isinstance(upstream, str) or http is not None:
        from lazymcp.proxy_http import run_http_proxy

        return run_http_proxy(upstream, options, timeout=timeout, http=http)
    return run_stdio_proxy(upstream, options, timeout=timeout)
