"""One client, the servers behind it, and the gateway core between them: the session both client
sides (stdio, ``lazymcp.proxy``; HTTP, ``lazymcp.proxy_http``) run, for the proxy (a transparent
gateway of one server) and the gateway alike.

A ``Link`` only carries out the core's decisions: it starts and stops the servers' processes or
connections, feeds lines both ways, writes manifests, and owns the three endings of a session:
- the client's input ends (``client_gone``): every request already read is still answered, waiting
  up to the timeout for the servers, and then the link ends with status 0;
- the session fails (``fail``: the proxy's server broke, or the drain ran out of time): what is owed
  is answered with an error, and the link ends with 1;
- it is told to stop (``interrupt``, on SIGTERM or SIGINT): the same, at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lazymcp import jsonrpc
from lazymcp.errors import ErrorCode, UpstreamError
from lazymcp.gateway.link import Action, Fail, Save, Say, Send, Start, Stop, ToClient
from lazymcp.limits import EXPIRE_EVERY, Limits
from lazymcp.notices import proxy_catalog_in, say
from lazymcp.options import Options
from lazymcp.upstream import LineSink, Upstream

if TYPE_CHECKING:
    from lazymcp.gateway.config import ServerEntry
    from lazymcp.gateway.core import Gateway
    from lazymcp.gateway.manifest import ManifestStore


CLOSE_GRACE = 10.0
"""Seconds ``close`` waits for the servers to stop (each gets ``SHUTDOWN_GRACE`` to exit, then a signal)."""


def upstream_of(entry: ServerEntry) -> Upstream:
    """How a server of the configuration is reached: its process, or its URL."""
    if entry.url is not None:
        from lazymcp.upstream import HttpUpstream

        return HttpUpstream(entry.url, entry.headers)
    from lazymcp.upstream import ProcessUpstream

    return ProcessUpstream(entry.command, entry.env, entry.cwd)


class Link:
    """One client, its servers, and the gateway core between them."""

    def __init__(
        self,
        core: Gateway,
        to_client: LineSink,
        *,
        store: ManifestStore | None = None,
        connect: Callable[[ServerEntry], Upstream] = upstream_of,
    ) -> None:
        self.core = core
        self.command = "proxy" if core.transparent else "gateway"
        """What runs, as its reports on stderr name it."""
        self.to_client = to_client
        self.store = store
        self.connect = connect
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[int] = self.loop.create_future()
        """Resolves to 0 when the client leaves (its requests answered), 1 when the session fails."""
        self.failure: str | None = None
        self.upstreams: dict[str, Upstream] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.on_pressure: Callable[[str, bool], None] = lambda server, paused: None
        """A server's input is full (True) or drained (False): its client side should stop reading."""
        self._paused = False
        self._starting: list[asyncio.Future[None]] | None = None
        self._stops: dict[Upstream, asyncio.Event] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._draining: float | None = None  # when the client's input ended: the drain's deadline

    async def start(self, eager: bool = False) -> None:
        """Start the servers the core runs at launch, and wait until each runs or has failed; a failure
        that ends the session ends the link (``done``)."""
        self._starting = []
        self._carry_out(self.core.launch(eager))
        starting, self._starting = self._starting, None
        if starting:
            await asyncio.wait(starting)
        if not self.done.done():
            self._expire()

    def say(self, text: str) -> None:
        """Report on stderr, named after what runs."""
        say(self.command, text)

    def from_client(self, line: bytes, message: jsonrpc.Message | None = None) -> None:
        """One client line; ``message`` is the line already parsed, when the caller has parsed it."""
        try:
            actions = self.core.from_client(line, self.loop.time(), message)
        except Exception as exc:  # a bug must cost one request, never the session
            self.say(f"internal error on a client message: {exc!r}")
            actions: list[Action] = [
                ToClient(jsonrpc.error_line(id_of(line), ErrorCode.INTERNAL_ERROR, "Internal error"))
            ]
        self._carry_out(actions)

    def from_server(self, server: str, line: bytes) -> None:
        if self.done.done():
            return
        try:
            actions = self.core.from_server(server, line, self.loop.time())
        except Exception as exc:
            self.say(f"internal error on a message of server {server!r}: {exc!r}")
            return
        catalog = self.core.upstream_catalog
        if catalog is not None:
            proxy_catalog_in(catalog)  # the start-up line, once per process
        self._carry_out(actions)

    def client_gone(self) -> None:
        """The client's input ended: answer what was read, then end (bounded by the timeout)."""
        if self._draining is None:
            wait = self.core.timeout if self.core.timeout else 300.0
            self._draining = self.loop.time() + wait
        self._settle()

    def fail(self, reason: str) -> None:
        """Answer what is owed, report the cause, and end the link with status 1."""
        if self.done.done():
            return
        self.failure = reason
        self._carry_out(self.core.interrupt(reason, self.loop.time()))
        self.say(reason)
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
        for upstream in self.upstreams.values():
            upstream.pause(paused)

    def _carry_out(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, ToClient):
                self.to_client(action.data)
            elif isinstance(action, Send):
                upstream = self.upstreams.get(action.server)
                if upstream is not None:
                    upstream.send(action.data)
            elif isinstance(action, Start):
                self._spawn(action.server)
            elif isinstance(action, Stop):
                self.say(action.reason)
                self._stop(action.server)
            elif isinstance(action, Say):
                self.say(action.text)
            elif isinstance(action, Save):
                self._save(action)
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
        upstream = self.connect(self.core.links[server].entry)
        stop = self._stops[upstream] = asyncio.Event()
        try:
            await self._start(server, upstream)
            if not ready.done():
                ready.set_result(None)
            if self.upstreams.get(server) is upstream:
                await stop.wait()
        finally:
            if not ready.done():
                ready.set_result(None)
            del self._stops[upstream]
            await upstream.stop()

    async def _start(self, server: str, upstream: Upstream) -> None:
        self.upstreams[server] = upstream
        upstream.on_pressure = lambda paused: self.on_pressure(server, paused)

        def on_line(line: bytes) -> None:
            if self.upstreams.get(server) is upstream:
                self.from_server(server, line)

        def on_gone(reason: str) -> None:
            if self.upstreams.get(server) is upstream and not self.done.done():
                self._carry_out(self.core.start_failed(server, reason, self.loop.time()))

        try:
            await upstream.start(on_line, on_gone)
        except UpstreamError as exc:
            if self.upstreams.get(server) is upstream:
                del self.upstreams[server]
                self._carry_out(self.core.start_failed(server, exc.message, self.loop.time()))
            return
        if self.upstreams.get(server) is not upstream or self.done.done():
            self.upstreams.pop(server, None)
            return  # given up on while it started: ``_run`` stops it
        if self._paused:
            upstream.pause(True)
        self._carry_out(self.core.started(server, self.loop.time()))

    def _stop(self, server: str) -> None:
        upstream = self.upstreams.pop(server, None)
        if upstream is not None:
            self.on_pressure(server, False)  # a server that stopped reading holds the client no more
            stop = self._stops.get(upstream)
            if stop is not None:
                stop.set()

    def _save(self, action: Save) -> None:
        if self.store is None:
            return
        entry = self.core.links[action.server].entry
        try:
            self.store.save(entry.identity(), action.tools, action.version, action.lists)
        except OSError as exc:
            self.say(f"cannot write the manifest of server {action.server!r}: {exc.strerror or exc}")

    def _settle(self) -> None:
        if self._draining is None or self.done.done():
            return
        if self.core.owed == 0:
            self.done.set_result(0)
        elif self.loop.time() >= self._draining:
            self.fail("the client's input ended and the upstream did not answer in time")

    def _expire(self) -> None:
        self._carry_out(self.core.expire(self.loop.time()))
        if not self.done.done():
            self._timer = self.loop.call_later(EXPIRE_EVERY, self._expire)

    async def close(self) -> None:
        """End the link: stop every server, and wait (bounded) for their processes."""
        if self._timer is not None:
            self._timer.cancel()
        if not self.done.done():
            self.done.set_result(0)
        self.upstreams.clear()
        for stop in self._stops.values():
            stop.set()
        if self.tasks:
            _, late = await asyncio.wait(list(self.tasks), timeout=CLOSE_GRACE)
            for task in late:  # a start that hangs (a remote server that never answers)
                task.cancel()


def id_of(line: bytes) -> jsonrpc.RequestId | None:
    try:
        request_id = jsonrpc.parse(line).get("id")
    except jsonrpc.NotJSONRPC:
        return None
    return request_id if jsonrpc.valid_id(request_id) else None


def proxy_core(upstream: Sequence[str] | str, options: Options | None, limits: Limits) -> Gateway:
    """The proxy: a transparent gateway over one server (a command, or a streamable-HTTP URL), with the
    SDK's 2026 wire model for the results it bridges."""
    from lazymcp.gateway.config import ServerEntry
    from lazymcp.gateway.core import Gateway
    from lazymcp.version import __version__

    if isinstance(upstream, str):
        entry = ServerEntry("upstream", url=upstream)
    else:
        entry = ServerEntry("upstream", command=tuple(upstream))
    return Gateway(
        [entry],
        options or Options(),
        timeout=limits.timeout or None,
        client_timeout=limits.client_timeout,
        client_info={"name": "lazymcp-proxy", "version": __version__},
        serialize=sdk_serializer,
        transparent=True,
    )


def sdk_serializer(method: str, version: str, result: dict[str, Any]) -> dict[str, Any] | None:
    """A result through the SDK's wire model of ``method`` in ``version``; None when the model has no
    such method or refuses the result (the bridge then relays it as it came)."""
    from mcp_types import methods as wire  # loaded on the first bridged result, not at start-up
    from pydantic import ValidationError

    try:
        return wire.serialize_server_result(method, version, result)
    except (KeyError, ValidationError):
        return None
