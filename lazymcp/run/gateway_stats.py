"""``lazymcp stats --config FILE``: per server and in total, what the user's own servers' tools cost a
model in full, one lazy proxy per server, and behind one gateway: in what the model sees (each tool's
name, description and input schema, as clients put them in the prompt), and on the wire.

Tool lists come from the manifests; a server without one is started once to make it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from lazymcp.gateway.costs import granted_tools, stock_listing
from lazymcp.local.files import cache_dir
from lazymcp.run.gateway import Launch, build_gateway, refresh
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.stats import computed_listings
from lazymcp.surfaces.options import Options
from lazymcp.tools.tokens import ListingSize


@dataclass(frozen=True, slots=True)
class ServerCost:
    server: str
    tools: int
    full: ListingSize
    """Its full ``tools/list``."""
    alone: ListingSize
    """A stock client's listing from ``lazymcp proxy`` in front of it alone."""


@dataclass(frozen=True, slots=True)
class ConfigCost:
    servers: list[ServerCost]
    gateway: ListingSize
    """A stock client's listing from the gateway over all of them."""
    mode: str
    unlisted: tuple[str, ...] = ()
    """The servers that could not be listed, so are in no figure (each said why on stderr)."""

    def full(self, wire: bool = False) -> int:
        return tokens(ListingSize.summed(server.full for server in self.servers), wire)

    def alone(self, wire: bool = False) -> int:
        return tokens(ListingSize.summed(server.alone for server in self.servers), wire)


def tokens(size: ListingSize, wire: bool = False) -> int:
    return size.wire.tokens if wire else size.visible.tokens


def measure(launch: Launch) -> ConfigCost:
    """The costs of every enabled server of the configuration (servers without a manifest are started)."""
    store = ManifestStore(cache_dir())
    if launch.refresh or any(store.load(entry.identity()) is None for entry in launch.config.enabled):
        asyncio.run(refresh(launch))
    gateway = build_gateway(Launch(launch.config, launch.options, launch.mode, launch.budget), store)
    servers: list[ServerCost] = []
    unlisted = tuple(server.name for server in gateway.servers if server.tools is None)
    for name, tools in granted_tools(gateway).items():
        alone = computed_listings(tools, Options())["stock"]
        servers.append(ServerCost(name, len(tools), ListingSize.of(tools), ListingSize.of(alone)))
    listing = stock_listing(gateway)
    return ConfigCost(servers, ListingSize.of(listing), gateway.catalog.options.mode, unlisted)


def render(cost: ConfigCost) -> str:
    """The costs as a plain-text table: what the model sees, then the wire's totals."""

    def share(part: int, whole: int) -> str:
        return f"{100 * part / whole:.1f}%" if whole else "-"

    head = f"{'server':<24}{'tools':>7}{'full':>10}{'lazy alone':>12}{'of full':>9}"
    lines = [head]
    for s in cost.servers:
        full, alone = tokens(s.full), tokens(s.alone)
        lines.append(f"{s.server:<24}{s.tools:>7}{full:>10,}{alone:>12,}{share(alone, full):>9}")
    count, full, gateway = sum(s.tools for s in cost.servers), cost.full(), tokens(cost.gateway)
    lines.append(f"{'total, one proxy each':<24}{count:>7}{full:>10,}{cost.alone():>12,}{share(cost.alone(), full):>9}")
    lines.append(f"{'total, one gateway':<24}{count:>7}{full:>10,}{gateway:>12,}{share(gateway, full):>9}")
    wire_full, wire_gateway = cost.full(wire=True), tokens(cost.gateway, wire=True)
    lines += [
        "",
        f"tokens (cl100k_base) of what the model sees: each tool's name, description and input schema;"
        f" lazy: what a stock client lists; the gateway's mode: {cost.mode}",
        f"on the wire: full {wire_full:,}, one proxy each {cost.alone(wire=True):,}, one gateway {wire_gateway:,}"
        f" ({share(wire_gateway, wire_full)}: stock stubs keep title, annotations and outputSchema, which clients"
        " do not put in the prompt)",
    ]
    if cost.unlisted:
        lines.append(f"not listed, so in no figure: {', '.join(cost.unlisted)} (why: above, on stderr)")
    return "\n".join(lines)
