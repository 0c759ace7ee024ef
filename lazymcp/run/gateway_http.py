"""``lazymcp gateway --http``: the HTTP front over the gateway's sessions (each its own core, for the
principal that opens it; a principal's sessions share its server processes), beside ``/metrics`` and the
status (``/status.json`` and the page at ``/``, ``lazymcp.run.status``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lazymcp.gateway.config import GatewayConfig
from lazymcp.protocol.limits import Limits
from lazymcp.run import observe

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from lazymcp.access.bearer import Access
    from lazymcp.access.policy import Policy
    from lazymcp.access.secrets import PrincipalSecrets
    from lazymcp.run.cluster import Cluster
    from lazymcp.run.gateway_build import Launch
    from lazymcp.run.http_front import HttpFront
    from lazymcp.run.manifests import ManifestStore
    from lazymcp.run.metrics import Metrics
    from lazymcp.run.people import People
    from lazymcp.run.reload import Cores, Files


@dataclass(frozen=True, slots=True)
class Front:
    """How the HTTP front is set up: the command line's choices."""

    config: GatewayConfig
    limits: Limits
    http: tuple[str, int]
    eager: bool = False
    access: Access | None = None
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    metrics_apart: bool = False
    """``--metrics`` serves ``/metrics`` at an address of its own: not beside ``/mcp``."""
    secrets: PrincipalSecrets | None = None
    """Each principal's own values for its servers (``--principal-secrets``)."""
    people: People | None = None
    """Each principal's sign-ins to remote servers (``--public-url``); None: this user's own."""


def serve_http(
    front_of: Front,
    cores: Cores,
    store: ManifestStore,
    peers: Cluster | None,
    metrics: Metrics | None,
    reload: tuple[Files, Callable[[Launch], None]] | None = None,
) -> int:
    """Serve the gateway's clients at ``/mcp`` until a signal; the exit status. ``cores(principal, grant)``
    builds a core: a session's for its principal and the grant its opening request earned (``cores`` is
    also what grants each request: ``front.grants``), or, with no principal, one of the grant's, whose
    tools and listing the status shows. With ``reload`` (the files, and the check
    a configuration read again must pass), the files are read again on SIGHUP and as they change
    (``lazymcp.run.reload``)."""
    from lazymcp.run.http_front import IDLE_SECONDS, HttpFront
    from lazymcp.run.http_serve import serve_front
    from lazymcp.run.shared_servers import SharedServers
    from lazymcp.run.status import Recent, Status, status_routes
    from lazymcp.version import __version__

    servers = SharedServers(IDLE_SECONDS, front_of.secrets)
    recent = Recent()
    observe.watch(recent)  # before any session's core: each then reports its calls
    front = HttpFront(
        cores,  # each session its own core, built with the grant its opening request earned
        front_of.limits,
        front_of.http[0],
        allow_hosts=front_of.allow_hosts,
        allow_origins=front_of.allow_origins,
        access=front_of.access,
        store=store,
        eager=front_of.eager,
        name="gateway",
        cluster=peers,
        connector=servers.connector,  # a principal's sessions share its servers
    )
    front.grants = cores  # each request granted by its own credentials
    people = servers.people = front_of.people
    if people is not None:
        from lazymcp.run.people import fresh_sessions

        front.outgoing = people.outgoing
        if peers is not None:
            from lazymcp.run.people_redis import share

            share(people, peers.redis, peers.advertise, peers.lists)
        people.changed = fresh_sessions(front)
    if reload is not None:
        from lazymcp.run.reload import Reloader

        front.watcher = Reloader(reload[0], cores, front, servers, reload[1])
    config = front_of.config
    policy: Callable[[], Policy | None] = lambda: cores.launch.config.access  # noqa: E731 - the one in force
    status = Status(front, lambda grant: cores(None, grant), policy, recent, source=config.source, version=__version__)
    routes = [*_metrics_routes(front_of, metrics, front, policy), *status_routes(status)]
    if people is not None:
        routes += people.routes(front.guard, front_of.access)
    return serve_front(front, front_of.http, routes)


def _metrics_routes(
    front_of: Front, metrics: Metrics | None, front: HttpFront, policy: Callable[[], Policy | None]
) -> list[BaseRoute]:
    """``/metrics`` beside the front's ``/mcp`` (to the principals ``policy()`` grants ``metrics``), counting
    its sessions, unless ``--metrics`` serves it apart."""
    if metrics is None:
        return []
    metrics.count_sessions(lambda: len(front.sessions) + len(front.moderns))
    if front_of.metrics_apart:
        return []
    from lazymcp.run.metrics import metrics_route

    return [metrics_route(metrics, front, policy)]
