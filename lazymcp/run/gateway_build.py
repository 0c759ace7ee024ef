"""The gateway's cores as a launch asks for them: ``Launch`` (the configuration and the command line's
choices) and ``build_gateway``, one session's core over the manifests known (``lazymcp.gateway.front``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

from lazymcp.access.policy import ANONYMOUS, Grant, Principal
from lazymcp.access.ratelimit import Limiter, Rate
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.config import GatewayConfig
from lazymcp.gateway.front import Gateway, Seed
from lazymcp.gateway.merged import DEFAULT_BUDGET
from lazymcp.gateway.namespace import unusable
from lazymcp.protocol.errors import ConfigError
from lazymcp.protocol.limits import FIRST_LIST_WAIT, Limits
from lazymcp.protocol.messages import Mode
from lazymcp.run import observe
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.notices import say
from lazymcp.run.wire import sdk_serializer
from lazymcp.surfaces.options import Options
from lazymcp.tools.manifest import DEFAULT_TTL, Manifest
from lazymcp.tools.packed import Packed


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
        manifests = {entry.name: usable_manifest(store, entry, config.separator) for entry in config.enabled}
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


def usable_manifest(store: ManifestStore, entry: ServerEntry, separator: str) -> Manifest | None:
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
