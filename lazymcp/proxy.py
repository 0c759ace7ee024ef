"""``lazymcp proxy``: the I/O around ``Router``.

A ``Session`` is one client and one upstream with a router between them. The upstream is a spawned
process (``ProcessUpstream``, stdio) or a streamable-HTTP server (``lazymcp.proxy_http``); the client
is this process's stdio (``StdioProxy``) or an HTTP session (``lazymcp.proxy_http``). The loop only
moves bytes: it splits what arrives into lines, hands each line to the router, and writes what the
router returns. The stdio paths use asyncio's protocol callbacks rather than stream tasks, so a
message crosses the proxy in one callback with no task switch: a ``tools/call`` round trip through it
costs little more than a plain byte relay.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from lazymcp import jsonrpc
from lazymcp.errors import UpstreamError
from lazymcp.options import Options
from lazymcp.router import Action, Fail, Router, ToClient, ToServer

EXPIRE_EVERY = 0.25
"""Seconds between checks for requests the upstream has not answered in time."""
SHUTDOWN_GRACE = 2.0
"""Seconds the upstream gets to exit after its stdin closes, before it is terminated."""

LineSink = Callable[[bytes], None]


class Upstream(Protocol):
    """Where the server is: started once, fed lines, reporting its lines and its end."""

    async def start(self, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        """Connect. Raises ``UpstreamError`` when the server cannot be reached or started."""
        ...

    def send(self, line: bytes) -> None: ...

    async def stop(self) -> None: ...


class _Lines(asyncio.Protocol):
    """Split a byte stream into lines and hand each to ``on_line``; report the end to ``on_eof``."""

    def __init__(self, on_line: LineSink, on_eof: Callable[[], None]) -> None:
        self._on_line = on_line
        self._on_eof = on_eof
        self._chunks: list[bytes] = []  # a line in pieces: joined once, so a huge line costs linear time

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
        for line in lines:
            if line.strip():
                self._on_line(line)

    def eof_received(self) -> bool:
        rest = b"".join(self._chunks)
        self._chunks = []
        if rest.strip():
            self._on_line(rest)
        self._on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_eof()


class _ChildPipes(asyncio.SubprocessProtocol):
    def __init__(self, upstream: ProcessUpstream) -> None:
        self.upstream = upstream
        self.lines = _Lines(upstream.on_line, upstream.closed_stdout)
        self.exited = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.lines.data_received(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.lines.eof_received()

    def process_exited(self) -> None:
        self.exited.set()
        self.upstream.exited()


class ProcessUpstream:
    """A server spawned as a child process, over its stdin and stdout; its stderr is ours."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
        self.command = list(command)
        self.env = dict(env or {})
        """Variables set for the server on top of this process's environment (a gateway entry's ``env``)."""
        self.cwd = cwd
        self.on_line: LineSink = lambda line: None
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
                env={**child_environment(), **self.env},
                cwd=self.cwd,
            )
        except OSError as exc:
            reason = exc.strerror or exc
            raise UpstreamError(f"cannot start the upstream server {self.command[0]!r}: {reason}") from None
        self._transport, self._protocol = transport, protocol
        self._stdin = transport.get_pipe_transport(0)  # pyright: ignore[reportAttributeAccessIssue]

    def send(self, line: bytes) -> None:
        if self._stdin is not None and not self._stdin.is_closing():
            self._stdin.writelines((line, b"\n"))

    def exited(self) -> None:
        code = self._transport.get_returncode() if self._transport is not None else None
        self._on_gone(f"the upstream server exited with code {code}")

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


_COERCED = frozenset({"C.UTF-8", "C.utf8", "UTF-8"})


def child_environment() -> dict[str, str]:
    """This process's environment as it was given: without what Python's start-up added to it.

    Started in the C locale, CPython coerces it (PEP 538) by setting ``LC_CTYPE`` in its own
    environment, which a child would inherit: the upstream must see what the proxy was given.
    """
    env = dict(os.environ)
    coerced = env.get("LC_CTYPE") in _COERCED and "LC_ALL" not in env and env.get("LANG", "C") in ("C", "POSIX")
    if coerced:
        del env["LC_CTYPE"]
    return env


class Session:
    """One client, one upstream, and the router between them."""

    def __init__(self, router: Router, upstream: Upstream, to_client: LineSink) -> None:
        self.router = router
        self.upstream = upstream
        self.to_client = to_client
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[int] = self.loop.create_future()
        """Resolves to 0 when the client leaves, 1 when the upstream fails."""
        self.failure: str | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def start(self) -> None:
        """Start the upstream. Raises ``UpstreamError`` when it cannot start."""
        await self.upstream.start(self.from_server, self.upstream_gone)
        self._expire()

    def from_client(self, line: bytes) -> None:
        try:
            actions = self.router.from_client(line, self.loop.time())
        except Exception as exc:  # a router bug must cost one request, never the session
            say(f"internal error on a client message: {exc!r}")
            actions: list[Action] = [ToClient(jsonrpc.error_line(_id_of(line), -32603, "Internal error"))]
        self._carry_out(actions)

    def from_server(self, line: bytes) -> None:
        if self.done.done():
            return
        try:
            actions = self.router.from_server(line, self.loop.time())
        except Exception as exc:
            say(f"internal error on an upstream message: {exc!r}")
            return
        self._carry_out(actions)

    def client_gone(self) -> None:
        if not self.done.done():
            self.done.set_result(0)

    def upstream_gone(self, reason: str) -> None:
        self.fail(reason)

    def fail(self, reason: str) -> None:
        """Answer what is owed, report the cause, and end the session with status 1."""
        if self.done.done():
            return
        self.failure = reason
        self._carry_out(self.router.upstream_failed(reason))
        say(reason)
        self.done.set_result(1)

    def _carry_out(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, ToClient):
                self.to_client(action.data)
            elif isinstance(action, ToServer):
                self.upstream.send(action.data)
            elif isinstance(action, Fail):  # pyright: ignore[reportUnnecessaryIsInstance]
                self.fail(action.reason)
                return

    def _expire(self) -> None:
        self._carry_out(self.router.expire(self.loop.time()))
        if not self.done.done():
            self._timer = self.loop.call_later(EXPIRE_EVERY, self._expire)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if not self.done.done():
            self.done.set_result(0)
        await self.upstream.stop()


class StdioProxy:
    """The client on this process's stdin and stdout."""

    def __init__(self, upstream: Upstream, router: Router) -> None:
        self.upstream = upstream
        self.router = router
        self._out: asyncio.WriteTransport | None = None

    def _write(self, line: bytes) -> None:
        if self._out is not None and not self._out.is_closing():
            self._out.writelines((line, b"\n"))

    async def run(self, stdin: Any = None, stdout: Any = None) -> int:
        """Serve until the client leaves (0) or the upstream fails (1)."""
        loop = asyncio.get_running_loop()
        stdout = stdout if stdout is not None else sys.stdout.buffer
        self._out, _ = await loop.connect_write_pipe(asyncio.Protocol, stdout)
        session = Session(self.router, self.upstream, self._write)
        try:
            await session.start()
        except UpstreamError as exc:
            say(exc.message)
            return 1
        stdin = stdin if stdin is not None else sys.stdin.buffer
        client_in, _ = await loop.connect_read_pipe(lambda: _Lines(session.from_client, session.client_gone), stdin)
        try:
            return await session.done
        finally:
            client_in.close()
            await session.close()
            self._out.close()
            await asyncio.sleep(0)


def _id_of(line: bytes) -> jsonrpc.RequestId | None:
    try:
        request_id = jsonrpc.parse(line).get("id")
    except jsonrpc.NotJSONRPC:
        return None
    return request_id if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None


def say(message: str) -> None:
    """Report on stderr, where the upstream's own stderr goes too."""
    print(f"lazymcp proxy: {message}", file=sys.stderr, flush=True)  # noqa: T201


def make_router(options: Options | None, timeout: float | None) -> Router:
    from lazymcp.version import __version__

    info = {"name": "lazymcp-proxy", "version": __version__}
    return Router(options or Options(), timeout=timeout or None, client_info=info)


def run_stdio_proxy(command: Sequence[str], options: Options | None = None, *, timeout: float | None = 300.0) -> int:
    """Proxy this process's stdio to a spawned upstream; returns the exit status."""

    async def main() -> int:
        return await StdioProxy(ProcessUpstream(command), make_router(options, timeout)).run()

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
