"""``lazymcp gateway``: the configuration, the launch, and the client sides it runs on.

The gateway runs on the proxy's client sides (``lazymcp.run.stdio``, ``lazymcp.run.http_front``), each
session a ``lazymcp.run.driver.Driver`` over a ``Gateway`` core (``lazymcp.gateway.front``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lazymcp import environment
from lazymcp.entries import ServerEntry
from lazymcp.errors import ConfigError
from lazymcp.files import cache_dir
from lazymcp.gateway.config import GatewayConfig, load_config, runs_gateway_on
from lazymcp.gateway.front import Gateway, Seed
from lazymcp.gateway.lifecycle import State
from lazymcp.gateway.merged import DEFAULT_BUDGET
from lazymcp.gateway.namespace import check_prefixes, check_separator, check_server_name, unusable
from lazymcp.gateway.passthrough import LISTS
from lazymcp.jsonrpc import Frame
from lazymcp.limits import EXPIRE_EVERY, FIRST_LIST_WAIT, Limits
from lazymcp.manifest import DEFAULT_TTL, Manifest
from lazymcp.notices import LOGGER, say
from lazymcp.options import Options
from lazymcp.packed import Packed
from lazymcp.run.driver import Driver
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.wire import sdk_serializer

if TYPE_CHECKING:
    from lazymcp.access import Access


@dataclass(frozen=True, slots=True)
class Launch:
    """How to run the gateway: the configuration and the command line's choices."""

    config: GatewayConfig
    options: Options
    mode: str | None = None
    budget: int | None = None
    limits: Limits = Limits()
    eager: bool = False
    refresh: bool = False
    ttl: float = DEFAULT_TTL
    first_list_wait: float | None = FIRST_LIST_WAIT


def read_config(path: str, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """Load and check a configuration: names fit the tool-name rules, and each gateway name names one server.

    Raises:
        ConfigError: the file is invalid.
    """
    config = load_config(path, environ)
    check_separator(config.separator, config.source)
    for entry in config.servers:
        check_server_name(entry.name, config.separator, config.source)
        if entry.enabled and runs_gateway_on(entry, Path(path)):
            raise ConfigError(f"{config.source}: server {entry.name!r} runs this gateway on its own configuration")
    check_prefixes([entry.name for entry in config.enabled], config.separator, config.source)
    return config


def build_gateway(launch: Launch, store: ManifestStore | None, seed: Seed | None = None) -> Gateway:
    """The core over the enabled servers, with their manifests (none when refreshing); its catalog is
    ``seed``'s when that was built from the same manifests.

    Raises:
        ConfigError: two tools get one name.
    """
    from lazymcp.version import __version__

    config = launch.config
    manifests: dict[str, Manifest | None] = {}
    if store is not None and not launch.refresh:
        manifests = {entry.name: _usable(store, entry, config.separator) for entry in config.enabled}
        manifests = {n: m and replace(m, lists=m.fresh_lists(launch.ttl)) for n, m in manifests.items()}
    stale = frozenset(name for name, m in manifests.items() if m is not None and not m.fresh(launch.ttl))
    try:
        return Gateway(
            config.enabled,
            launch.options,
            manifests,
            separator=config.separator,
            timeout=launch.limits.timeout,
            client_timeout=launch.limits.client_timeout,
            serialize=sdk_serializer,
            mode=launch.mode or config.mode or "auto",
            budget=launch.budget or config.budget or DEFAULT_BUDGET,
            stale=stale,
            client_info={"name": "lazymcp-gateway", "version": __version__},
            seed=seed,
            first_list_wait=launch.first_list_wait,
        )
    except ConfigError as exc:
        raise ConfigError(f"{config.source}: {exc.message}") from None


def _usable(store: ManifestStore, entry: ServerEntry, separator: str) -> Manifest | None:
    """A server's manifest, unless it cannot be served (then the server is listed afresh, and the file
    is named once on stderr)."""
    manifest = store.load(entry.identity())
    if manifest is None:
        return None
    names = manifest.tools.names if isinstance(manifest.tools, Packed) else [t["name"] for t in manifest.tools]
    reason = unusable(entry.name, names, separator)
    if reason is None:
        return manifest
    path = store.path(entry.identity())
    if path not in store.ignored:
        store.ignored.add(path)
        say("gateway", f"ignoring the manifest {path} of server {entry.name!r}: {reason}; listing it afresh")
    return None


async def refresh(launch: Launch) -> int:
    """Start every server, store its tool list, stop; 1 when one could not be listed."""
    loop = asyncio.get_running_loop()
    store = ManifestStore(cache_dir())
    gateway = build_gateway(replace(launch, refresh=True), store)
    gateway.wait_for_client = False

    def nowhere(frame: Frame) -> None:
        pass

    async def settled(busy: Callable[[], bool]) -> None:
        while busy():  # bounded: each server's requests end by --timeout
            done = loop.create_future()
            loop.call_later(EXPIRE_EVERY, done.set_result, None)
            await done

    driver = Driver(gateway, nowhere, store=store)
    driver.said = set()
    await driver.start(eager=True)
    await settled(lambda: gateway.discovering)
    for number, method in enumerate(LISTS, 1):  # the lists clients ask for at start-up, kept too
        driver.from_client(Frame({"jsonrpc": "2.0", "id": f"refresh-{number}", "method": method, "params": {}}))
    await settled(lambda: gateway.owed > 0)
    await driver.close()
    failed = 0
    for server in gateway.servers:
        if server.life.state is State.DOWN:
            failed += 1
            say("gateway", f"server {server.name!r}: not listed (why: above)")
        else:
            say("gateway", f"server {server.name!r}: {len(server.tools or ())} tools", logging.INFO)
    return 1 if failed else 0


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def start_line(
    gateway: Gateway, source: str, http: tuple[str, int] | None, eager: bool, access: Access | None = None
) -> str:
    """What is running: the servers, what is known of them without starting them, the mode, the clients."""
    from lazymcp.version import __version__

    listed = [server for server in gateway.servers if server.tools is not None]
    count = len(gateway.servers)
    starting = count if eager else count - len(listed) + len(gateway.stale)
    mode = gateway.catalog.options.mode
    chosen = f"auto ({mode} for these tools)" if gateway.mode == "auto" else mode
    servers = f"{plural(count, 'server')} of {source} ({len(listed)} listed from manifests"
    if http is None:
        servers += f", {starting} started now, the rest on first use)"
        clients = "clients on stdio"
    else:  # each session runs its own servers
        servers += f"; each client session starts {starting} at once, the rest on first use)"
        host = f"[{http[0]}]" if ":" in http[0] else http[0]
        clients = f"clients on http://{host}:{http[1]}/mcp ({access.describe() if access else 'no authentication'})"
    tools = f"{len(gateway.catalog)} tools known"
    return f"lazymcp gateway {__version__}: {servers}, {tools}, mode {chosen}, {clients}"


def run_gateway(
    path: str,
    options: Options,
    *,
    http: tuple[str, int] | None = None,
    access: Access | None = None,
    allow_hosts: tuple[str, ...] = (),
    allow_origins: tuple[str, ...] = (),
    **choices: Any,
) -> int:
    """``lazymcp gateway --config FILE``: returns the exit status.

    Raises:
        ConfigError: the configuration is invalid.
    """
    from lazymcp.run.stdio import run_stdio

    if environment.depth() >= environment.MAX_DEPTH:
        raise ConfigError(
            f"{path}: this gateway would run inside {environment.depth()} others (at most {environment.MAX_DEPTH}):"
            " does a configuration start a gateway on itself?"
        )
    config = read_config(path)
    if config.warnings:
        say("gateway", "; ".join(config.warnings))
    launch = Launch(config, options, **choices)
    if launch.refresh:
        return asyncio.run(refresh(launch))
    store = ManifestStore(cache_dir())
    first = build_gateway(launch, store)  # a name collision stops it here, before any client comes
    LOGGER.info(start_line(first, config.source, http, launch.eager, access))
    if http is not None:
        from lazymcp.run.http_front import HttpFront, serve_front

        seed = first.seed

        def session_core() -> Gateway:
            nonlocal seed
            core = build_gateway(launch, store, seed)  # each session its own, over one catalog while it lasts
            seed = core.seed
            return core

        front = HttpFront(
            session_core,
            launch.limits,
            http[0],
            allow_hosts=allow_hosts,
            allow_origins=allow_origins,
            access=access,
            store=store,
            eager=launch.eager,
            name="gateway",
        )
        return serve_front(front, http)
    return asyncio.run(run_stdio(first, store=store, eager=launch.eager))
