"""``lazymcp gateway``: the I/O around ``Gateway``, with the client on this process's stdio.

It spawns each server when the core says so (``lazymcp.proxy.ProcessUpstream``, or
``lazymcp.proxy_http.HttpUpstream`` for a remote one), feeds lines both ways, ends a failed server's
process, and writes manifests. Events from a process the core has given up on are dropped.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from lazymcp import jsonrpc
from lazymcp.errors import ErrorCode, UpstreamError
from lazymcp.gateway.config import ConfigError, GatewayConfig, ServerEntry, load_config
from lazymcp.gateway.core import Gateway
from lazymcp.gateway.link import Action, Save, Say, Send, Start, Stop, ToClient
from lazymcp.gateway.manifest import DEFAULT_TTL, Manifest, ManifestStore, cache_dir
from lazymcp.gateway.merged import DEFAULT_BUDGET
from lazymcp.gateway.namespace import check_separator, check_server_name
from lazymcp.limits import EXPIRE_EVERY
from lazymcp.link import id_of
from lazymcp.options import Options
from lazymcp.upstream import Lines, ProcessUpstream, Upstream


def say(message: str) -> None:
    """Report on stderr, where the servers' own stderr goes too."""
    print(f"lazymcp gateway: {message}", file=sys.stderr, flush=True)  # noqa: T201


def upstream_of(entry: ServerEntry) -> Upstream:
    if entry.url is not None:
        from lazymcp.upstream import HttpUpstream

        return HttpUpstream(entry.url, entry.headers)
    return ProcessUpstream(entry.command, entry.env, entry.cwd)


class GatewayIO:
    """Carries out the core's actions; ``to_client`` writes one line to the client."""

    def __init__(self, gateway: Gateway, to_client: Any, store: ManifestStore | None) -> None:
        self.gateway = gateway
        self.to_client = to_client
        self.store = store
        self.loop = asyncio.get_running_loop()
        self.upstreams: dict[str, Upstream] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def now(self) -> float:
        return self.loop.time()

    def from_client(self, line: bytes) -> None:
        try:
            actions = self.gateway.from_client(line, self.now())
        except Exception as exc:  # a bug must cost one request, never the session
            say(f"internal error on a client message: {exc!r}")
            actions: list[Action] = [
                ToClient(jsonrpc.error_line(id_of(line), ErrorCode.INTERNAL_ERROR, "Internal error"))
            ]
        self.carry_out(actions)

    def from_server(self, server: str, line: bytes) -> None:
        try:
            actions = self.gateway.from_server(server, line, self.now())
        except Exception as exc:
            say(f"internal error on a message of server {server!r}: {exc!r}")
            return
        self.carry_out(actions)

    def carry_out(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, ToClient):
                self.to_client(action.data)
            elif isinstance(action, Send):
                upstream = self.upstreams.get(action.server)
                if upstream is not None:
                    upstream.send(action.data)
            elif isinstance(action, Start):
                task = self.loop.create_task(self._start(action.server))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            elif isinstance(action, Stop):
                say(action.reason)
                self._stop(action.server)
            elif isinstance(action, Say):
                say(action.text)
            elif isinstance(action, Save):  # pyright: ignore[reportUnnecessaryIsInstance]
                if self.store is not None:
                    entry = self.gateway.links[action.server].entry
                    try:
                        self.store.save(entry.identity(), action.tools, action.version)
                    except OSError as exc:
                        say(f"cannot write the manifest of server {action.server!r}: {exc.strerror or exc}")

    def _stop(self, server: str) -> None:
        upstream = self.upstreams.pop(server, None)
        if upstream is not None:
            task = self.loop.create_task(upstream.stop())
            self.tasks.add(task)  # pyright: ignore[reportArgumentType]
            task.add_done_callback(self.tasks.discard)  # pyright: ignore[reportArgumentType]

    async def _start(self, server: str) -> None:
        upstream = upstream_of(self.gateway.links[server].entry)
        self.upstreams[server] = upstream

        def on_line(line: bytes) -> None:
            if self.upstreams.get(server) is upstream:
                self.from_server(server, line)

        def on_gone(reason: str) -> None:
            if self.upstreams.get(server) is upstream:
                self.carry_out(self.gateway.start_failed(server, reason, self.now()))

        try:
            await upstream.start(on_line, on_gone)
        except UpstreamError as exc:
            if self.upstreams.get(server) is upstream:
                del self.upstreams[server]
                self.carry_out(self.gateway.start_failed(server, exc.message, self.now()))
            return
        if self.upstreams.get(server) is upstream:
            self.carry_out(self.gateway.started(server, self.now()))

    def expire(self) -> None:
        self.carry_out(self.gateway.expire(self.now()))
        self._timer = self.loop.call_later(EXPIRE_EVERY, self.expire)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for server in list(self.upstreams):
            self._stop(server)
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=10)


@dataclass(frozen=True, slots=True)
class Launch:
    """How to run the gateway: the configuration and the command line's choices."""

    config: GatewayConfig
    options: Options
    mode: str | None = None
    budget: int | None = None
    timeout: float | None = 300.0
    eager: bool = False
    refresh: bool = False
    ttl: float = DEFAULT_TTL


def read_config(path: str, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """Load and check a configuration: names fit the tool-name rules.

    Raises:
        ConfigError: the file is invalid.
    """
    config = load_config(path, environ)
    check_separator(config.separator, config.source)
    for entry in config.servers:
        check_server_name(entry.name, config.separator, config.source)
    return config


def build_gateway(launch: Launch, store: ManifestStore | None) -> Gateway:
    """The core over the enabled servers, with their manifests (none when refreshing).

    Raises:
        ConfigError: two tools get one name.
    """
    from lazymcp.version import __version__

    config = launch.config
    manifests: dict[str, Manifest | None] = {}
    if store is not None and not launch.refresh:
        manifests = {entry.name: store.load(entry.identity()) for entry in config.enabled}
    stale = frozenset(name for name, m in manifests.items() if m is not None and not m.fresh(launch.ttl))
    try:
        return Gateway(
            config.enabled,
            launch.options,
            manifests,
            separator=config.separator,
            timeout=launch.timeout,
            mode=launch.mode or config.mode or "auto",
            budget=launch.budget or config.budget or DEFAULT_BUDGET,
            stale=stale,
            client_info={"name": "lazymcp-gateway", "version": __version__},
        )
    except ConfigError as exc:
        raise ConfigError(f"{config.source}: {exc.message}") from None


async def serve_stdio(launch: Launch, stdin: Any = None, stdout: Any = None) -> int:
    """Serve the client on stdio until it leaves."""
    loop = asyncio.get_running_loop()
    store = ManifestStore(cache_dir())
    gateway = build_gateway(launch, store)
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, stdout if stdout is not None else sys.stdout.buffer)

    def write(line: bytes) -> None:
        if not out.is_closing():
            out.writelines((line, b"\n"))

    io = GatewayIO(gateway, write, store)
    done: asyncio.Future[int] = loop.create_future()

    def client_gone() -> None:
        if not done.done():
            done.set_result(0)

    client_in, _ = await loop.connect_read_pipe(
        lambda: Lines(io.from_client, client_gone),
        stdin if stdin is not None else sys.stdin.buffer,
    )
    io.carry_out(gateway.launch(eager=launch.eager or launch.refresh))
    io.expire()
    try:
        return await done
    finally:
        client_in.close()
        await io.close()
        out.close()


async def refresh(launch: Launch) -> int:
    """Start every server, store its tool list, stop; 1 when one could not be listed."""
    loop = asyncio.get_running_loop()
    store = ManifestStore(cache_dir())
    gateway = build_gateway(replace(launch, refresh=True), store)
    gateway.wait_for_client = False

    def nowhere(line: bytes) -> None:
        pass

    io = GatewayIO(gateway, nowhere, store)
    io.carry_out(gateway.launch(eager=True))
    io.expire()
    while gateway.discovering or io.tasks:
        done = loop.create_future()
        loop.call_later(EXPIRE_EVERY, done.set_result, None)
        await done
    await io.close()
    failed = 0
    for name, link in gateway.links.items():
        if link.state == "down":
            failed += 1
            say(f"server {name!r}: not listed ({link.reason})")
        else:
            say(f"server {name!r}: {len(link.tools or ())} tools")
    return 1 if failed else 0


def run_gateway(
    path: str, options: Options, *, http: tuple[str, int] | None = None, token: str | None = None, **choices: Any
) -> int:
    """``lazymcp gateway --config FILE``: returns the exit status.

    Raises:
        ConfigError: the configuration is invalid.
    """
    config = read_config(path)
    if config.warnings:
        say("; ".join(config.warnings))
    launch = Launch(config, options, **choices)
    if launch.refresh:
        return asyncio.run(refresh(launch))
    if http is not None:
        from lazymcp.gateway.http import serve_http

        return serve_http(launch, http, token)
    return asyncio.run(serve_stdio(launch))
