"""Server processes per principal (``lazymcp gateway --http``): the sessions of one principal share one
process of each server on this instance; a process never serves two principals.

``SharedServers.connector(principal)`` is what a session's ``Driver`` starts its servers with: for a
server run as a process it gives a ``Lease`` on that principal's process (started by the first session
that needs it), through which the session speaks as if the process were its own; ``Sharing``
(``lazymcp.gateway.sharing``) keeps the sessions' ids, answers and the server's requests apart. A
remote server (``url``) and an entry with ``"share": "session"`` get a connection of the session's own
(one that exchanges tokens, with the principal's exchanged token: ``lazymcp.run.exchange``).

A process is stopped when its last session leaves, and when no message has crossed it for
``idle_timeout`` seconds (the front's idle timeout, 30 minutes) with nothing in flight: its sessions then
start it again on their next request, which waits for its handshake (``Sharing.reopen``, with the first
of those sessions' ``initialize`` params). One session not reading its answers pauses the process for
the principal's other sessions too: the process's output is read once for them all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lazymcp.gateway.sharing import SERVER, Out, Sharing
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import UpstreamError
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.run import observe
from lazymcp.run.connections import Connection, connect, for_principal
from lazymcp.run.exchange import Exchanges, exchanging
from lazymcp.run.notices import say

if TYPE_CHECKING:
    from lazymcp.access.policy import Principal
    from lazymcp.access.secrets import PrincipalSecrets
    from lazymcp.core.entries import ServerEntry
    from lazymcp.run.people import People

JOIN_TRIES = 3
"""Processes a session waits for, each stopped as it started (its other sessions left), before it fails."""
Key = tuple[object, str]
"""A principal and a server's name."""


class _Process:
    """One server process and the sessions sharing it."""

    def __init__(self, pool: SharedServers, key: Key, entry: ServerEntry) -> None:
        self.pool = pool
        self.key = key
        self.entry = entry
        self.connection = connect(entry, isolated=True)
        self.sharing = Sharing()
        self.leases: dict[int, Lease] = {}
        self.joining = 0
        """Sessions waiting for it to start, to take a lease then: it is not stopped as unheld meanwhile."""
        self.paused: set[int] = set()
        self.gone: str | None = None
        loop = asyncio.get_running_loop()
        self.last_used = loop.time()
        self.ready: asyncio.Task[None] = loop.create_task(self._start())
        self.ready.add_done_callback(lambda task: task.cancelled() or task.exception())  # each joiner hears it
        self.stopping: asyncio.Task[None] | None = None
        self.idle = False
        self.started_at: float | None = None
        """When its process started, in wall-clock seconds."""
        observe.server_started(entry.name)

    async def _start(self) -> None:
        self.connection.on_pressure = self._pressure
        try:
            await self.connection.start(self._line, self._gone)
        except UpstreamError:
            observe.server_failed(self.entry.name)
            self.pool.forget(self)
            raise
        self.pool.started += 1
        self.started_at = time.time()

    def _pressure(self, full: bool) -> None:
        for lease in list(self.leases.values()):
            lease.on_pressure(full)

    def _line(self, line: bytes) -> None:
        try:
            frame = Frame.read(line)
        except jsonrpc.NotJSONRPC:
            for lease in list(self.leases.values()):  # each session's upstream says what it makes of it
                lease.on_line(line)
            return
        self.deliver(self.sharing.from_server(frame))

    def _gone(self, reason: str) -> None:
        if self.gone is not None or self.stopping is not None:  # stopped here: not news for its sessions
            return
        self.gone = reason
        observe.server_failed(self.entry.name)
        self.pool.forget(self)
        for lease in list(self.leases.values()):
            lease.on_gone(reason)

    def deliver(self, out: list[Out]) -> None:
        self.last_used = asyncio.get_running_loop().time()
        for where, frame in out:
            if where == SERVER:
                if self.gone is None:
                    self.connection.send(frame.line)
            else:
                lease = self.leases.get(where)
                if lease is not None:
                    lease.on_line(frame.line)

    def pause(self, number: int, paused: bool) -> None:
        was = bool(self.paused)
        (self.paused.add if paused else self.paused.discard)(number)
        if bool(self.paused) != was:
            self.connection.pause(bool(self.paused))

    @property
    def held(self) -> bool:
        """A session holds a lease on it, or waits for its start to take one."""
        return bool(self.leases) or self.joining > 0

    def leave(self, number: int) -> None:
        self.leases.pop(number, None)
        self.pause(number, False)
        self.deliver(self.sharing.detach(number))
        if not self.held:
            self.stop()

    def stop(self, idle: bool = False) -> None:
        """Stop the process (once): its sessions left, or it was ``idle`` too long (its sessions then start
        it again on their next request)."""
        self.pool.forget(self)
        if self.stopping is None:
            self.idle = idle
            self.stopping = asyncio.get_running_loop().create_task(self.connection.stop())
            self.pool.stopping.add(self.stopping)
            self.stopping.add_done_callback(self.pool.stopping.discard)


class Lease:
    """One session's way to its principal's process of a server: a ``Connection`` like any other."""

    pooled = True
    """The process's starts and failures are counted by the pool, once (``observe``), not by each session."""

    def __init__(self, pool: SharedServers, key: Key, entry: ServerEntry) -> None:
        self.pool = pool
        self.key = key
        self.entry = entry
        self.on_pressure: Callable[[bool], None] = lambda full: None
        self.on_line: Callable[[bytes], None] = lambda line: None
        self.on_gone: Callable[[str], None] = lambda reason: None
        self.process: _Process | None = None
        self.number = 0
        self._paused = False
        self._stopped = False
        self._params: dict[str, Any] | None = None
        """The session's ``initialize`` params: a process started again after an idle stop opens with them."""
        self._pending: list[Frame] | None = None
        """While it joins a process started again: what the session sent meanwhile, in order."""

    async def start(self, on_line: Callable[[bytes], None], on_gone: Callable[[str], None]) -> None:
        self.on_line, self.on_gone = on_line, on_gone
        await self._join()

    async def _join(self) -> None:
        process = await self._started(self.pool.process(self.key, self.entry))
        for _ in range(JOIN_TRIES):
            if process.stopping is None:
                break
            process = await self._started(self.pool.process(self.key, self.entry))  # stopped meanwhile: a new one
        else:
            raise UpstreamError(f"server {self.entry.name!r} was stopped while it started, {JOIN_TRIES} times")
        if process.gone is not None:
            if not process.held:
                process.stop()
            raise UpstreamError(process.gone)
        if self._stopped:  # given up on while it started
            if not process.held:
                process.stop()
            return
        self.process = process
        self.number = process.sharing.attach()
        process.leases[self.number] = self
        if self._paused:
            process.pause(self.number, True)

    @staticmethod
    async def _started(process: _Process) -> _Process:
        """``process`` once it has started (or failed to), counted among its joiners until then."""
        process.joining += 1
        try:
            await asyncio.shield(process.ready)
        finally:
            process.joining -= 1
        return process

    def send(self, line: bytes) -> None:
        try:
            frame = Frame.read(line)
        except jsonrpc.NotJSONRPC:
            return  # the core sends only what it made
        if frame.method == "initialize" and frame.is_request:
            self._params = frame.params
        if self._pending is not None:
            self._pending.append(frame)
            return
        process = self.process
        if process is None:
            return
        if process.gone is None and process.stopping is None:
            process.deliver(process.sharing.from_session(self.number, frame))
        elif process.idle and not self._stopped:
            self._pending = [frame]
            self.pool.later(self._rejoin(process))

    async def _rejoin(self, idle: _Process) -> None:
        """Leave the process stopped while idle for one started again, opened with the session's params,
        then send it what the session sent meanwhile."""
        if idle.leases.pop(self.number, None) is not None:
            idle.sharing.detach(self.number)  # nothing in flight: nothing to tell a stopped process
        self.process = None
        try:
            await self._join()
        except UpstreamError as exc:
            self._pending = None
            self.on_gone(exc.message)
            return
        pending, self._pending = self._pending or [], None
        process = self.process
        if process is None:
            return  # the session ended meanwhile
        if self._params is not None:
            process.deliver(process.sharing.reopen(self._params))
        for frame in pending:
            process.deliver(process.sharing.from_session(self.number, frame))

    @property
    def buffered(self) -> int:
        return self.process.connection.buffered if self.process is not None else 0

    @property
    def pid(self) -> int | None:
        """The shared process's id (None: it is not running, or is no process)."""
        pid = getattr(self.process.connection, "pid", None) if self.process is not None else None
        return pid if isinstance(pid, int) else None

    @property
    def started_at(self) -> float | None:
        """When the shared process started, in wall-clock seconds."""
        return self.process.started_at if self.process is not None else None

    def pause(self, paused: bool) -> None:
        self._paused = paused
        if self.process is not None:
            self.process.pause(self.number, paused)

    async def stop(self) -> None:
        self._stopped = True
        process, self.process = self.process, None
        if process is None:
            return
        if process.leases.get(self.number) is not None:
            process.leave(self.number)
        if process.stopping is not None and not process.leases:
            await asyncio.shield(process.stopping)


class SharedServers:
    """Every principal's shared server processes on this instance."""

    def __init__(self, idle_timeout: float | None = None, secrets: PrincipalSecrets | None = None) -> None:
        self.idle_timeout = idle_timeout
        """Seconds without a message after which a process is stopped (None: only when its sessions leave)."""
        self.secrets = secrets
        """Each principal's own values for its servers (``--principal-secrets``)."""
        self.people: People | None = None
        """Each principal's sign-ins to remote servers (``--public-url``); None: this user's own."""
        self.exchanges = Exchanges()
        """Each principal's tokens exchanged for remote servers (``lazymcp.run.exchange``)."""
        self.processes: dict[Key, _Process] = {}
        self.started = 0
        """Processes started so far (for the operator and the bench)."""
        self.stopping: set[asyncio.Task[Any]] = set()
        self._later: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def connector(
        self, principal: Principal, token: Callable[[], str | None] | None = None
    ) -> Callable[..., Connection]:
        """How a session of ``principal`` reaches its servers (a ``Driver``'s ``connector``); ``token``: the
        OAuth token of the session's latest request, what a token exchange trades (None: ``principal``'s)."""

        def direct(entry: ServerEntry, *, isolated: bool) -> Connection:
            if entry.remote or entry.share == "session" or not isolated:
                return connect(entry, isolated=isolated)
            return Lease(self, (principal, entry.name), entry)

        def connector(entry: ServerEntry, *, isolated: bool) -> Connection:  # the secrets as they are now
            signed = direct if self.people is None else self.people.connector(principal, direct)
            exchanged = exchanging(self.exchanges, principal, signed, token)
            return for_principal(self.secrets, principal.describe(), exchanged)(entry, isolated=isolated)

        return connector

    def process(self, key: Key, entry: ServerEntry) -> _Process:
        """The principal's running process of the server, started now when there is none, or when the one
        running was started from another entry (the configuration changed: it serves its sessions until they
        leave it, and is stopped then)."""
        process = self.processes.get(key)
        if process is not None and process.entry != entry:
            self.forget(process)
            process = None
        if process is None:
            process = self.processes[key] = _Process(self, key, entry)
            if self.idle_timeout and self._timer is None:
                every = min(max(self.idle_timeout / 4, 0.05), 10.0)
                self._timer = asyncio.get_running_loop().call_later(every, self._expire, every)
        return process

    def _expire(self, every: float) -> None:
        """Stop every process no message has crossed for ``idle_timeout`` seconds, nothing in flight, and
        every one that no session holds (a session cancelled while it waited for the start)."""
        self._timer = None
        now = asyncio.get_running_loop().time()
        assert self.idle_timeout is not None
        for process in list(self.processes.values()):
            if process.ready.done() and not process.held:  # its starters were given up on as it started
                process.stop()
                continue
            quiet = now - process.last_used >= self.idle_timeout
            if quiet and process.ready.done() and process.gone is None and not process.sharing.busy:
                text = f"server {process.entry.name!r}: stopped after {self.idle_timeout:g} s without a message"
                say("gateway", text, logging.INFO)
                process.stop(idle=True)
        if self.processes:
            self._timer = asyncio.get_running_loop().call_later(every, self._expire, every)

    def later(self, work: Any) -> None:
        """Run ``work`` in a task of its own, kept until it ends."""
        task = asyncio.get_running_loop().create_task(work)
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    def forget(self, process: _Process) -> None:
        if self.processes.get(process.key) is process:
            del self.processes[process.key]
