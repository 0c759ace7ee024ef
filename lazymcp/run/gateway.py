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
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lazymcp.access.policy import ANONYMOUS, check_policy
from lazymcp.access.ratelimit import Counter, Limiter, MemoryCounter
from lazymcp.gateway.config import GatewayConfig
from lazymcp.gateway.front import Gateway
from lazymcp.gateway.lifecycle import State
from lazymcp.gateway.passthrough import LISTS
from lazymcp.gateway.reading import read_config
from lazymcp.local import environment
from lazymcp.local.files import cache_dir
from lazymcp.protocol.errors import ConfigError
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.protocol.limits import EXPIRE_EVERY
from lazymcp.run import observe, traces
from lazymcp.run.connections import for_principal
from lazymcp.run.driver import Driver
from lazymcp.run.gateway_build import Launch, build_gateway
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.notices import LOGGER, plural, say, start_line
from lazymcp.surfaces.options import Options

if TYPE_CHECKING:
    from lazymcp.access.bearer import Access
    from lazymcp.access.secrets import PrincipalSecrets
    from lazymcp.core.entries import ServerEntry
    from lazymcp.run.cluster import Cluster
    from lazymcp.run.metrics import Metrics
    from lazymcp.run.people import People


STILL_WAITING_EVERY = 5.0
"""Seconds between two lines naming the servers whose first tool list is still awaited (``refresh``)."""


async def refresh(launch: Launch, redis_url: str | None = None) -> int:
    """Start every server once, store its tool list, stop; 1 when one could not be listed. With
    ``redis_url`` (``--redis``) each manifest also goes to Redis, announced to the running instances
    (``lazymcp.run.cluster_lists.Refreshed``); 1 too when Redis could not take them. While servers have
    not listed their tools, stderr names them every ``STILL_WAITING_EVERY`` seconds.

    An entry that asks for a principal's own values (``${principal:NAME}``) is left out, with one line: a
    refresh starts its servers for no one, so there is no one to fill them for (``check_personal``).
    """
    launch = _for_no_one(launch)
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


def read_and_warn(path: str, command: str, *, project: str | None = None) -> GatewayConfig:
    """``read_config``, its warnings said once on stderr under ``command``'s name.

    Raises:
        ConfigError: the configuration is invalid.
    """
    config = read_config(path, project=project)
    if config.warnings:
        say(command, "; ".join(config.warnings))
    return config


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
    token_file: str | None = None,
    secrets_file: str | None = None,
    people: tuple[str | None, str | None] = (None, None),
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
    config = read_and_warn(path, "gateway", project=project)
    launch = Launch(config, options, **choices)
    if launch.refresh:
        return asyncio.run(refresh(launch, cluster[0] if cluster is not None else None))
    check_personal(config, access)
    sign_ins = _people(people, config, access, http is not None)
    if sign_ins is not None and cluster is None:
        sign_ins.check()  # a file sealed with another key stops the start, in one line
    metrics = _watchers(launch, http)
    store, peers = _store(config, cluster if http is not None else None)
    first = build_gateway(launch, store)  # a name collision stops it here, before any client comes
    _check_access(first, config, access)
    limiter = limiter_of(launch, peers.rates if peers is not None else None)
    LOGGER.info(start_line(first, config.source, http, launch.eager, access))
    if http is not None:
        from lazymcp.run.gateway_http import Front, serve_http

        apart = launch.metrics is not None
        from lazymcp.run.reload import Cores, Files

        cores = Cores(launch, store, first.seed, limiter)
        front = Front(config, launch.limits, http, launch.eager, access, allow_hosts, allow_origins, apart, secrets)
        if sign_ins is not None:
            sign_ins.entries = lambda: cores.launch.config.enabled  # the configuration in force
            front = replace(front, people=sign_ins)
        files = Files(path, project, token_file, secrets_file)
        return serve_http(
            front, cores, store, peers, metrics, (files, lambda renewed: _checked(renewed, store, access, people))
        )
    policy = config.access
    if policy is not None or limiter is not None:  # a stdio client shows no credentials: it is anonymous
        first = build_gateway(launch, store, first.seed, policy and policy.grant(ANONYMOUS), limiter=limiter)
    first.session.environ = dict(os.environ)  # the host's own, which may say how it treats tool listings
    connector = for_principal(secrets, ANONYMOUS.describe())
    return asyncio.run(run_stdio(first, store=store, eager=launch.eager, connector=connector))


def _people(
    asked: tuple[str | None, str | None], config: GatewayConfig, access: Access | None, http: bool
) -> People | None:
    """Each principal's sign-ins, when ``--public-url`` or ``--secrets-key-file`` asks for them
    (``lazymcp.run.people``, loaded only then).

    Raises:
        ConfigError: they cannot be had as asked.
    """
    if asked == (None, None):
        return None
    from lazymcp.run.people import people_of

    return people_of(asked, config, access, http)


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


def _checked(
    launch: Launch, store: ManifestStore, access: Access | None, people: tuple[str | None, str | None]
) -> None:
    """A configuration read again can be served as the first one was: its principals' values have principals
    to come from, its tools take distinct names, its policy names what is there, and with ``--public-url`` a
    server that may ask for a sign-in has the key to seal it.

    Raises:
        ConfigError: it cannot.
    """
    check_personal(launch.config, access)
    _check_access(build_gateway(launch, store), launch.config, access)
    if people[0] is not None and people[1] is None:
        _people(people, launch.config, access, True)


def check_personal(config: GatewayConfig, access: Access | None) -> None:
    """The one rule of ``${principal:NAME}``: a gateway that tells no principals apart (on stdio, or over HTTP
    without tokens or OAuth) has no one to fill it for. Its start stops, and a configuration read again with
    such an entry is not taken (``_checked``); a refresh leaves such entries out (``_for_no_one``).

    Raises:
        ConfigError: an enabled entry asks for a principal's own values.
    """
    if access is not None and access.names_principals:
        return
    for entry in _personal(config):
        raise ConfigError(
            f"{config.source}: server {entry.name!r} uses {_values(entry)}, each principal's own value, but this"
            " gateway has no principals: serve it with --http and --token-file or --oauth-issuer"
            " (and --principal-secrets), or, for one person, use ${NAME} from the environment"
        )


def _personal(config: GatewayConfig) -> list[ServerEntry]:
    return [entry for entry in config.servers if entry.enabled and entry.personal]


def _values(entry: ServerEntry) -> str:
    return ", ".join(f"${{principal:{name}}}" for name in sorted(entry.personal))


def _for_no_one(launch: Launch) -> Launch:
    """``launch`` without the entries that ask for a principal's own values, each named in one line."""
    personal = _personal(launch.config)
    for entry in personal:
        say(
            "gateway",
            f"{launch.config.source}: server {entry.name!r} uses {_values(entry)}, each principal's own value:"
            " left out of the refresh, which starts servers for no principal (its tools are listed when a"
            " principal's session starts it)",
        )
    if not personal:
        return launch
    left_out = {entry.name for entry in personal}
    servers = tuple(entry for entry in launch.config.servers if entry.name not in left_out)
    return replace(launch, config=replace(launch.config, servers=servers))


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
