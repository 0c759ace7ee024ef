"""One client, the servers behind it, and a sans-IO core between them: the session both client sides
(stdio, ``lazymcp.run.stdio``; HTTP, ``lazymcp.run.http_front``) drive, for the proxy and the gateway alike.

A ``Driver`` only carries out its core's decisions (``lazymcp.core.actions``): it starts and stops the
servers' processes or connections, feeds messages both ways, writes manifests, and owns the three endings
of a session:
- the client's input ends (``client_gone``): every request already read is still answered, waiting
  up to the timeout for the servers, and then the driver ends with status 0;
- the session fails (``fail``: the proxy's server broke, or the drain ran out of time): what is owed
  is answered with an error, and the driver ends with 1;
- it is told to stop (``interrupt``, on SIGTERM or SIGINT): the same, at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lazymcp.core.actions import (
    Action,
    Called,
    Core,
    Fail,
    Ready,
    RunCode,
    Save,
    Say,
    Start,
    Stop,
    StopCode,
    ToClient,
    ToServer,
)
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ErrorCode, UpstreamError
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.protocol.limits import EXPIRE_EVERY, MAX_UNANSWERED, SERVER_INPUT
from lazymcp.run import observe
from lazymcp.run.code_runs import CodeRuns
from lazymcp.run.connections import Connection, connect
from lazymcp.run.notices import proxy_catalog_in, say

if TYPE_CHECKING:
    from lazymcp.run.manifests import ManifestStore

UNANSWERED = "unanswered"
"""The reason ``on_hold`` gives when ``MAX_UNANSWERED`` of the client's requests wait for their answers."""
CLOSE_GRACE = 10.0
"""Seconds ``close`` waits for the servers to stop (each gets ``SHUTDOWN_GRACE`` to exit, then a signal)."""

FrameSink = Callable[[Frame], None]


class Driver:
    """One client, its servers, and the core between them."""

    def __init__(
        self,
        core: Core,
        to_client: FrameSink,
        *,
        store: ManifestStore | None = None,
        connector: Callable[..., Connection] = connect,
    ) -> None:
        self.core = core
        self.to_client = to_client
        self.store = store
        self.connector = connector
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[int] = self.loop.create_future()
        """Resolves to 0 when the client leaves (its requests answered), 1 when the session fails."""
        self.failure: str | None = None
        self.connections: dict[str, Connection] = {}
        self.since: dict[str, float] = {}
        """When each server's process or connection last started, in wall-clock seconds (for the status)."""
        self._pooled: set[str] = set()
        """Servers reached through a pool's shared process (``shared_servers.Lease``), whose starts and
        failures the pool counts, once for all its sessions."""
        self.tasks: set[asyncio.Task[Any]] = set()
        self.on_hold: Callable[[str, bool], None] = lambda reason, held: None
        """Stop (True) or resume (False) reading the client, for ``reason``: ``server NAME``, the proxy's
        server not taking its input, or ``UNANSWERED``, too many of its requests waiting for answers."""
        self._paused = False
        self._backlogged = False
        self._full: dict[str, float] = {}
        """A gateway's servers not taking their input, and since when: each fails alone past a bound."""
        self._starting: list[asyncio.Future[None]] | None = None
        self._stops: dict[Connection, asyncio.Event] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._draining: float | None = None  # when the client's input ended: the drain's deadline
        self.on_called: Callable[[Called], Called] | None = None
        """What a front adds to a call's report before it is seen (the session, the client's address and id)."""
        self.said: set[str] | None = None
        """When a set: what was reported, each said once (a refresh, which asks a failing server twice)."""
        self.code = CodeRuns(self)
        """Its ``run_code`` calls (code mode)."""

    def say(self, text: str, level: int = logging.WARNING) -> None:
        """Report on stderr, named after what runs."""
        if self.said is not None:
            if text in self.said:
                return
            self.said.add(text)
        say(self.core.command, text, level)

    async def start(self, eager: bool = False) -> None:
        """Start the servers the core runs at launch, and wait until each runs or has failed; a failure
        that ends the session ends the driver (``done``)."""
        self._starting = []
        self._carry_out(self.core.launch(eager))
        starting, self._starting = self._starting, None
        if starting:
            await asyncio.wait(starting)
        if not self.done.done():
            self._expire()

    def from_client(self, data: bytes | Frame) -> None:
        """One client message: its line, or its frame when the caller has parsed it."""
        try:
            if observe.tracing is not None:
                data = observe.tracing.incoming(self, data)
            actions = self.core.from_client(data, self.loop.time())
        except Exception as exc:  # a bug must cost one request, never the session
            self.say(f"internal error on a client message: {exc!r}")
            error = jsonrpc.error_message(_id_of(data), ErrorCode.INTERNAL_ERROR, "Internal error")
            actions: list[Action] = [ToClient(Frame(error))]
        if not actions and not self._backlogged and self.core.owed >= MAX_UNANSWERED:
            self._backlogged = True  # requests kept waiting here (for the first tool lists): read no more
            self.on_hold(UNANSWERED, True)
        self._carry_out(actions)

    def from_server(self, server: str, line: bytes) -> None:
        if self.done.done():
            return
        try:
            if observe.tracing is not None:
                observe.tracing.from_server(self, server, line)
            actions = self.core.from_server(server, line, self.loop.time())
        except Exception as exc:
            self.say(f"internal error on a message of server {server!r}: {exc!r}")
            return
        self._carry_out(actions)

    def apply(self, step: Callable[[float], list[Action]]) -> None:
        """Carry out what the core decides on news from outside its session (``step``, given the time):
        a server's tools another gateway instance saw."""
        if self.done.done():
            return
        try:
            actions = step(self.loop.time())
        except Exception as exc:  # a bug must cost this news, never the session
            self.say(f"internal error on a server's list from elsewhere: {exc!r}")
            return
        self._carry_out(actions)

    def client_gone(self) -> None:
        """The client's input ended: answer what was read, then end (bounded by the timeout)."""
        if self._draining is None:
            wait = self.core.timeout if self.core.timeout else 300.0
            self._draining = self.loop.time() + wait
        self._settle()

    def fail(self, reason: str) -> None:
        """Answer what is owed, report the cause, and end the driver with status 1."""
        if self.done.done():
            return
        self.failure = reason
        self._carry_out(self.core.interrupt(reason, self.loop.time()))
        say(self.core.command, reason, logging.ERROR)  # why the session ended: shown at every log level
        self.done.set_result(1)

    def interrupt(self, reason: str, status: int) -> None:
        """Stop now: every request still owed gets an error naming ``reason``."""
        if self.done.done():
            return
        self._carry_out(self.core.interrupt(reason, self.loop.time()))
        self.done.set_result(status)

    def pause(self, paused: bool) -> None:
        """Stop (True) or resume (False) reading every server: the client is not reading what they send."""
        self._paused = paused
        for connection in self.connections.values():
            connection.pause(paused)

    def _carry_out(self, actions: list[Action]) -> None:
        if observe.tracing is not None:
            actions = observe.tracing.outgoing(self, actions)
        for action in actions:
            if isinstance(action, ToClient):
                if not self.code.takes(action.frame):  # a run's tool call answered: the run's, not the client's
                    self.to_client(action.frame)
            elif isinstance(action, ToServer):
                connection = self.connections.get(action.server)
                if connection is not None:
                    line = action.frame.line if action.frame.fits() else None
                    if line is None:  # the cores refuse what they cannot write: this is the last guard
                        self.say(f"dropped a message to server {action.server!r}: it nests too deeply to write")
                    else:
                        connection.send(line)
                        if action.server in self._full and connection.buffered > SERVER_INPUT:
                            self._stuck(action.server, f"{connection.buffered} bytes wait for it")
            elif isinstance(action, Start):
                self._spawn(action.server)
            elif isinstance(action, Stop):
                if action.server not in self._pooled:  # a pool counts its processes' failures once
                    observe.server_failed(action.server)
                self.say(action.reason)
                self._stop(action.server)
            elif isinstance(action, Say):
                self.say(action.text, action.level)
            elif isinstance(action, Save):
                self._save(action)
            elif isinstance(action, Ready):
                proxy_catalog_in(action.catalog)  # the start-up line, once per process
            elif isinstance(action, (RunCode, StopCode)):
                self.code.carry_out(action)
            elif isinstance(action, Called):
                observe.called(action if self.on_called is None else self.on_called(action))
            elif isinstance(action, Fail):  # pyright: ignore[reportUnnecessaryIsInstance]
                self.fail(action.reason)
                return
        self._settle()

    def _spawn(self, server: str) -> None:
        ready: asyncio.Future[None] = self.loop.create_future()
        self._task(self._run(server, ready))
        if self._starting is not None:
            self._starting.append(ready)  # ``start`` waits for it

    def _task(self, work: Any) -> None:
        task = self.loop.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, server: str, ready: asyncio.Future[None]) -> None:
        """One server's whole life in one task, since a connection's scopes (the SDK's HTTP client) must
        be left in the task that entered them: started, run until ``_stop`` or ``close``, stopped."""
        connection = self.connector(self.core.entry(server), isolated=self.core.isolates_servers)
        if getattr(connection, "pooled", False):  # one process of several sessions: its pool counts it
            self._pooled.add(server)
        else:
            self._pooled.discard(server)
            observe.server_started(server)
        stop = self._stops[connection] = asyncio.Event()
        try:
            await self._start(server, connection)
            if not ready.done():
                ready.set_result(None)
            if self.connections.get(server) is connection:
                await stop.wait()
        finally:
            if not ready.done():
                ready.set_result(None)
            del self._stops[connection]
            await connection.stop()

    async def _start(self, server: str, connection: Connection) -> None:
        self.connections[server] = connection
        connection.on_pressure = lambda paused: self._pressure(server, connection, paused)

        def on_line(line: bytes) -> None:
            if self.connections.get(server) is connection:
                self.from_server(server, line)

        def on_gone(reason: str) -> None:
            if self.connections.get(server) is connection and not self.done.done():
                self._carry_out(self.core.start_failed(server, reason, self.loop.time()))

        try:
            await connection.start(on_line, on_gone)
        except UpstreamError as exc:
            if self.connections.get(server) is connection:
                del self.connections[server]
                self._carry_out(self.core.start_failed(server, exc.message, self.loop.time()))
            return
        if self.connections.get(server) is not connection:
            return  # given up on while it started (another may run in its place): ``_run`` stops it
        if self.done.done():
            del self.connections[server]
            return
        self.since[server] = time.time()
        if self._paused:
            connection.pause(True)
        self._carry_out(self.core.started(server, self.loop.time()))

    def _pressure(self, server: str, connection: Connection, full: bool) -> None:
        """A server's input is full (True) or drained (False). The proxy's one server holds its client; a
        gateway's server is given ``SERVER_INPUT`` bytes and ``--timeout`` seconds, then fails alone."""
        if self.connections.get(server) is not connection:
            return
        if not self.core.isolates_servers:
            self.on_hold(f"server {server}", full)
        elif full:
            self._full.setdefault(server, self.loop.time())
        else:
            self._full.pop(server, None)

    def _stuck(self, server: str, reason: str) -> None:
        """A gateway's server does not take its input: it fails alone, and what it owed gets an error."""
        self._full.pop(server, None)
        self._carry_out(self.core.start_failed(server, f"it does not read its input ({reason})", self.loop.time()))

    def _stop(self, server: str) -> None:
        self._full.pop(server, None)
        connection = self.connections.pop(server, None)
        if connection is not None:
            self.on_hold(f"server {server}", False)  # a server that stopped reading holds the client no more
            stop = self._stops.get(connection)
            if stop is not None:
                stop.set()

    def _save(self, action: Save) -> None:
        if self.store is None:
            return
        entry = self.core.entry(action.server)
        try:
            self.store.save(entry.identity(), action.tools, action.version, action.lists, changed=action.changed)
        except OSError as exc:
            self.say(f"cannot write the manifest of server {action.server!r}: {exc.strerror or exc}")

    def _settle(self) -> None:
        if self._backlogged and self.core.owed < MAX_UNANSWERED:
            self._backlogged = False
            self.on_hold(UNANSWERED, False)
        if self._draining is None or self.done.done():
            return
        if self.core.owed == 0:
            self.done.set_result(0)
        elif self.loop.time() >= self._draining:
            self.fail("the client's input ended and the upstream did not answer in time")

    def _expire(self) -> None:
        now = self.loop.time()
        wait = self.core.timeout
        for server, since in list(self._full.items()):
            if wait and now - since >= wait:
                self._stuck(server, f"it has been full for {wait:g} s")
        self._carry_out(self.core.expire(now))
        if not self.done.done():
            self._timer = self.loop.call_later(EXPIRE_EVERY, self._expire)

    async def close(self) -> None:
        """End the driver: stop every server, and wait (bounded) for their processes."""
        if self._timer is not None:
            self._timer.cancel()
        if not self.done.done():
            self.done.set_result(0)
        if observe.tracing is not None:
            observe.tracing.closed(self)
        self.connections.clear()
        for stop in self._stops.values():
            stop.set()
        if self.tasks:
            _, late = await asyncio.wait(list(self.tasks), timeout=CLOSE_GRACE)
            for task in late:  # a start that hangs (a remote server that never answers)
                task.cancel()


def _id_of(data: bytes | Frame) -> jsonrpc.RequestId | None:
    if isinstance(data, bytes):
        try:
            data = Frame.read(data)
        except jsonrpc.NotJSONRPC:
            return None
    request_id = data.id
    return request_id if jsonrpc.valid_id(request_id) else None
