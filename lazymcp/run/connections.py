"""How a server is reached: a spawned process over its stdio (``ProcessConnection``) or a remote
server over streamable HTTP or SSE (``lazymcp.run.remote.HttpConnection``), both behind one small
interface that moves lines.

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
from typing import TYPE_CHECKING, Protocol, cast

from lazymcp.access.secrets import PrincipalSecrets, lacking
from lazymcp.local.environment import passed_on, server_environment
from lazymcp.protocol.errors import UpstreamError
from lazymcp.protocol.limits import READ_SIZE, SHUTDOWN_GRACE
from lazymcp.run.remote import HttpConnection
from lazymcp.run.server_process import Labelled, not_started

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
        elif fd == 2 and self.connection.on_stderr is not None:
            self.connection.on_stderr(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.lines.eof_received()
        elif fd == 2 and self.connection.on_stderr is not None:
            self.connection.on_stderr(b"")

    def pause_writing(self) -> None:  # the server's stdin is full: it is not reading
        self.connection.on_pressure(True)

    def resume_writing(self) -> None:
        self.connection.on_pressure(False)

    def process_exited(self) -> None:
        self.exited.set()
        self.connection.exited()


class ProcessConnection:
    """A server spawned as a child process, over its stdin and stdout; its stderr is ours, or goes to
    ``on_stderr`` (``b""``: it ended; ``lazymcp.run.server_process``)."""

    def __init__(
        self, command: Sequence[str], env: Mapping[str, str], cwd: str | None = None, on_stderr: LineSink | None = None
    ) -> None:
        self.command, self.env, self.cwd, self.on_stderr = list(command), dict(env), cwd, on_stderr
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
                stderr=None if self.on_stderr is None else asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            raise UpstreamError(not_started(self.command[0], self.cwd, exc)) from None
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
    (``lazymcp.local.environment``). An entry that still asks for a principal's values is never started
    (``for_principal`` fills them)."""
    if entry.personal:
        return Refused(lacked(entry, sorted(entry.personal), None))
    if entry.sign_in is not None and entry.sign_in.exchange is not None:
        from lazymcp.access.exchange import NEEDS_PRINCIPAL

        return Refused(NEEDS_PRINCIPAL)  # ``lazymcp.run.exchange`` reaches it for a principal
    if entry.url is not None:
        from lazymcp.run.signin import can_sign_in, connection_auth, login_hint

        hint = login_hint(entry.name) if can_sign_in(entry) else None
        return HttpConnection(
            entry.url, entry.headers, sse=entry.transport == "sse", auth=connection_auth(entry), sign_in=hint
        )
    env = server_environment(entry.env, entry.inherit_env) if isolated else passed_on(entry.env)
    return ProcessConnection(entry.command, env, entry.cwd, Labelled(entry.name) if isolated else None)


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


Connector = Callable[..., Connection]


class Refused:
    """A server this session cannot have: starting it fails with ``reason``, and nothing else happens."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.buffered = 0
        self.on_pressure: Pressure = lambda paused: None

    async def start(self, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        raise UpstreamError(self.reason)

    def send(self, line: bytes) -> None:
        pass

    def pause(self, paused: bool) -> None:
        pass

    async def stop(self) -> None:
        pass


def lacked(entry: ServerEntry, names: Sequence[str], principal: str | None) -> str:
    """Why ``entry`` cannot be started for ``principal``: the values it lacks, by name (never a value)."""
    values = ", ".join(names)
    if principal is None:
        return f"it needs each person's own {values} (${{principal:...}}), given by --principal-secrets"
    return (
        f"sign-in needed: principal {principal!r} has no {values} for it; add them to its block of the"
        " principals' secrets file (--principal-secrets)"
    )


def for_principal(secrets: PrincipalSecrets | None, principal: str, then: Connector = connect) -> Connector:
    """How ``principal``'s sessions reach their servers: an entry asking for the principal's own values
    (``${principal:NAME}``) gets them from ``secrets`` before ``then`` connects it, or is ``Refused`` with
    the names it lacks."""

    def connector(entry: ServerEntry, *, isolated: bool) -> Connection:
        asked = entry.personal
        if not asked:
            return then(entry, isolated=isolated)
        given: Mapping[str, str] = secrets.of(principal) if secrets is not None else {}
        missing = lacking(asked, given)
        if missing:
            return Refused(lacked(entry, missing, principal))
        return then(entry.as_principal(given), isolated=isolated)

    return connector
