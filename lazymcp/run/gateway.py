"""``lazymcp gateway``: the configuration, the launch, and the client sides it runs on.

The gateway runs on the proxy's client sides (``lazymcp.run.stdio``, ``lazymcp.run.http_front``), each
session a ``lazymcp.run.driver.Driver`` over a ``Gateway`` core (``lazymcp.gateway.front``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from lazymcp.access.policy import ANONYMOUS, Grant, Principal, check_policy
from lazymcp.access.ratelimit import Counter, Limiter, MemoryCounter, Rate
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.config import GatewayConfig
from lazymcp.gateway.front import Gateway, Seed
from lazymcp.gateway.lifecycle import State
from lazymcp.gateway.merged import DEFAULT_BUDGET
from lazymcp.gateway.namespace import unusable
from lazymcp.gateway.passthrough import LISTS
from lazymcp.gateway.reading import read_config
from lazymcp.local import environment
from lazymcp.local.files import cache_dir
from lazymcp.protocol.errors import ConfigError
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.protocol.limits import EXPIRE_EVERY, FIRST_LIST_WAIT, Limits
from lazymcp.protocol.messages import Mode
from lazymcp.run import observe, traces
from lazymcp.run.connections import for_principal
from lazymcp.run.driver import Driver
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.notices import LOGGER, plural, say, start_line
from lazymcp.run.wire import sdk_serializer
from lazymcp.surfaces.options import Options
from lazymcp.tools.manifest import DEFAULT_TTL, Manifest
from lazymcp.tools.packed import Packed

if TYPE_CHECKING:
    from lazymcp.access.bearer import Access
    from lazymcp.access.secrets import PrincipalSecrets
    from lazymcp.run.cluster import Cluster
    from lazymcp.run.metrics import Metrics


STILL_WAITING_EVERY = 5.0
"""Seconds between two lines naming the servers whose first tool list is still awaited (``refresh``)."""


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
    rate_limit: Rate | None = None
    """Each principal's ``tools/call`` requests may come at most at this rate (``--rate-limit``)."""
    metrics: tuple[str, int] | None = None
    """Serve ``/metrics`` at this address apart from ``/mcp`` (``--metrics``)."""
    audit: bool = False
    """Write an audit line per call on stderr (``--log-level info`` or ``debug`` asked for)."""
    audit_file: str | None = None
    """Append the audit lines to this file instead (``--audit-file``)."""


def build_gateway(
    launch: Launch,
    store: ManifestStore | None,
    seed: Seed | None = None,
    grant: Grant | None = None,
    *,
    principal: Principal = ANONYMOUS,
    limiter: Limiter | None = None,
) -> Gateway:
    """The core over the enabled servers, with their manifests (none when refreshing), for ``principal``;
    its catalog is ``seed``'s when that was built from the same manifests and grant, and holds only the
    tools ``grant`` allows (None: every tool); its calls count against ``limiter``'s rates.

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
        mode = launch.mode or config.mode or "auto"
        hosts = tuple((host, cast(Mode, chosen)) for host, chosen in config.hosts) + launch.options.hosts
        options = launch.options if launch.mode or mode == "auto" else replace(launch.options, mode=cast(Mode, mode))
        return Gateway(
            config.enabled,
            replace(options, by_host=mode == "auto", hosts=hosts),
            manifests,
            separator=config.separator,
            timeout=launch.limits.timeout,
            client_timeout=launch.limits.client_timeout,
            serialize=sdk_serializer,
            mode=mode,
            budget=launch.budget or config.budget or DEFAULT_BUDGET,
            stale=stale,
            client_info={"name": "lazymcp-gateway", "version": __version__},
            seed=seed,
            first_list_wait=launch.first_list_wait,
            grant=grant,
            principal=principal,
            limiter=limiter,
            observe=observe.watching(),
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


async def refresh(launch: Launch, redis_url: str | None = None) -> int:
    """Start every server once, store its tool list, stop; 1 when one could not be listed. With
    ``redis_url`` (``--redis``) each manifest also goes to Redis, announced to the running instances
    (``lazymcp.run.cluster_lists.Refreshed``); 1 too when Redis could not take them. While servers have
    not listed their tools, stderr names them every ``STILL_WAITING_EVERY`` seconds."""
    loop = asyncio.get_running_loop()
    shared = None
    if redis_url is not None:
        from lazymcp.run.cluster_lists import Refreshed

        shared = Refreshed(redis_url, launch.config.enabled)
    store = ManifestStore(cache_dir(), on_saved=shared.lists.saved if shared is not None else None)
    gateway = build_gateway(replace(launch, refresh=True), store)
    gateway.wait_for_client = False

    def nowhere(frame: Frame) -> None:
        pass

    async def settled(busy: Callable[[], bool]) -> None:
        said = loop.time()
        while busy():  # bounded: each server's requests end by --timeout
            done = loop.create_future()
            loop.call_later(EXPIRE_EVERY, done.set_result, None)
            await done
            awaited = gateway.servers.awaited
            if awaited and loop.time() - said >= STILL_WAITING_EVERY:
                said = loop.time()
                say("gateway", f"still waiting for: {', '.join(awaited)}", logging.INFO)

    driver = Driver(gateway, nowhere, store=store)
    driver.said = set()
    await driver.start(eager=True)
    await settled(lambda: gateway.discovering)
    for server in gateway.servers:  # one that failed is not started again by the lists asked next
        if server.life.state is State.DOWN:
            server.life.retry_at = math.inf
    for number, method in enumerate(LISTS, 1):  # the lists clients ask for at start-up, kept too
        driver.from_client(Frame({"jsonrpc": "2.0", "id": f"refresh-{number}", "method": method, "params": {}}))
    await settled(lambda: gateway.owed > 0)
    await driver.close()
    failed = 0
    for server in gateway.servers:  # each listed one was said as it listed (gateway/progress.py)
        if server.life.state is State.DOWN:
            failed += 1
            say("gateway", f"server {server.name!r}: not listed (why: above)")
    if shared is not None and not await shared.sent():
        return 1
    return 1 if failed else 0


def metrics_of(launch: Launch, http: tuple[str, int] | None) -> Metrics | None:
    """The metrics, watching from now on: served apart at ``--metrics``, or at ``/metrics`` beside an HTTP
    front's ``/mcp``; None for a stdio gateway without ``--metrics``.

    Raises:
        ConfigError: the ``--metrics`` address cannot be listened on.
    """
    if launch.metrics is None and http is None:
        return None
    from lazymcp.run.metrics import Metrics, serve_apart

    metrics = Metrics()
    if launch.metrics is not None:
        serve_apart(metrics, launch.metrics)
    observe.watch(metrics)
    return metrics


def limiter_of(launch: Launch, counter: Counter | None = None) -> Limiter | None:
    """The rate limits of ``--rate-limit`` and the servers' ``rateLimit``, counted by ``counter`` (the
    cluster's, with ``--redis``), else in this process; None when there are none (a call then costs no
    counting at all)."""
    servers = tuple((entry.name, entry.rate_limit) for entry in launch.config.enabled if entry.rate_limit)
    if launch.rate_limit is None and not servers:
        return None
    return Limiter(counter or MemoryCounter(), launch.rate_limit, servers)


def known_tools(gateway: Gateway) -> dict[str, list[str] | None]:
    """Each server's gateway tool names as known now; None for a server not listed yet."""
    tools: dict[str, list[str] | None] = {s.name: None if s.tools is None else [] for s in gateway.servers}
    for name, (server, _) in gateway.names.owners.items():
        listed = tools.get(server)
        if listed is not None:
            listed.append(name)
    return tools


def run_gateway(
    path: str,
    options: Options,
    *,
    project: str | None = None,
    http: tuple[str, int] | None = None,
    access: Access | None = None,
    allow_hosts: tuple[str, ...] = (),
    allow_origins: tuple[str, ...] = (),
    cluster: tuple[str, str] | None = None,
    secrets: PrincipalSecrets | None = None,
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
    config = read_config(path, project=project)
    if config.warnings:
        say("gateway", "; ".join(config.warnings))
    launch = Launch(config, options, **choices)
    if launch.refresh:
        return asyncio.run(refresh(launch, cluster[0] if cluster is not None else None))
    metrics = _watchers(launch, http)
    store, peers = _store(config, cluster if http is not None else None)
    first = build_gateway(launch, store)  # a name collision stops it here, before any client comes
    _check_access(first, config, access)
    limiter = limiter_of(launch, peers.rates if peers is not None else None)
    LOGGER.info(start_line(first, config.source, http, launch.eager, access))
    if http is not None:
        from lazymcp.run.gateway_http import Front, serve_http

        apart = launch.metrics is not None
        front = Front(config, launch.limits, http, launch.eager, access, allow_hosts, allow_origins, apart, secrets)
        return serve_http(front, _session_cores(launch, store, first.seed, limiter), store, peers, metrics)
    policy = config.access
    if policy is not None or limiter is not None:  # a stdio client shows no credentials: it is anonymous
        first = build_gateway(launch, store, first.seed, policy and policy.grant(ANONYMOUS), limiter=limiter)
    first.session.environ = dict(os.environ)  # the host's own, which may say how it treats tool listings
    connector = for_principal(secrets, ANONYMOUS.describe())
    return asyncio.run(run_stdio(first, store=store, eager=launch.eager, connector=connector))


def _watchers(launch: Launch, http: tuple[str, int] | None) -> Metrics | None:
    """The watchers of calls asked for, watching from now on: the audit line, the metrics (returned; None:
    none) and the traces."""
    if launch.audit_file is not None:
        observe.watch(observe.AuditFile(launch.audit_file))
    elif launch.audit:
        observe.watch(observe.AUDIT)
    metrics = metrics_of(launch, http)
    if traces.asked():
        observe.tracing = traces.Traces()
        observe.watch(observe.tracing)
    elif (lacking := traces.missing()) is not None:
        say("gateway", lacking)
    return metrics


def _store(config: GatewayConfig, cluster: tuple[str, str] | None) -> tuple[ManifestStore, Cluster | None]:
    """The manifest store, and with ``cluster`` (``--redis`` URL, advertised address) the peers it is shared
    with, its manifests first warmed from theirs in Redis; None: no peers."""
    if cluster is None:
        return ManifestStore(cache_dir()), None
    from lazymcp.run.cluster import Cluster  # the Redis client is loaded only for --redis
    from lazymcp.run.cluster_lists import warm_start

    peers = Cluster(*cluster, config.enabled)
    store = ManifestStore(cache_dir(), on_saved=peers.lists.saved)
    peers.lists.store = store
    warmed = warm_start(cluster[0], store, config.enabled)
    if warmed:
        say("gateway", f"{plural(warmed, 'manifest')} taken from Redis", logging.INFO)
    return store, peers


def _check_access(first: Gateway, config: GatewayConfig, access: Access | None) -> None:
    """A policy pattern naming no server or no tool stops the gateway; a token name the token file does not
    know is said on stderr.

    Raises:
        ConfigError: the policy names what is not there.
    """
    policy = config.access
    if policy is None:
        return
    check_policy(policy, known_tools(first), config.separator, config.source)
    known = access.principal_names() if access is not None else None
    unknown = [name for name in policy.token_names() if known is not None and name not in known]
    if unknown:  # perhaps a token not issued yet; perhaps a typo
        say(
            "gateway",
            f"{config.source}: 'lazymcp.access' names {', '.join(map(repr, unknown))}, no token of the token file",
        )


def _session_cores(
    launch: Launch, store: ManifestStore, seed: Seed | None, limiter: Limiter | None
) -> Callable[[Principal | None, Grant | None], Gateway]:
    """How an HTTP front builds each session's core, for the principal that opens it (grant None: the
    principal's own), over one catalog for each grant while its manifests last (``seed``: the first core's);
    with no principal, a core of the grant's (None: every tool), which nothing starts: what the status shows."""
    policy = launch.config.access
    seeds: dict[Grant | None, Seed | None] = {None: seed}

    def session_core(principal: Principal | None, grant: Grant | None) -> Gateway:
        if principal is not None and policy is not None:
            grant = policy.grant(principal)
        core = build_gateway(launch, store, seeds.get(grant), grant, principal=principal or ANONYMOUS, limiter=limiter)
        seeds[grant] = core.seed
        return core

    return session_core
