"""``lazymcp stats --config FILE``: per server and in total, what the user's own servers' tools cost a
model in full, one lazy proxy per server, and behind one gateway.

Tool lists come from the manifests; a server without one is started once to make it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from lazymcp.gateway.manifest import ManifestStore, cache_dir
from lazymcp.gateway.run import Launch, build_gateway, refresh
from lazymcp.methods import Caller, list_tools
from lazymcp.options import Options
from lazymcp.stats import computed_listings
from lazymcp.tokens import Size


@dataclass(frozen=True, slots=True)
class ServerCost:
    server: str
    tools: int
    full: int
    """Tokens of its full ``tools/list``."""
    alone: int
    """Tokens of a stock client's listing from ``lazymcp proxy`` in front of it alone."""


@dataclass(frozen=True, slots=True)
class ConfigCost:
    servers: list[ServerCost]
    gateway: int
    """Tokens of a stock client's listing from the gateway over all of them."""
    mode: str

    @property
    def full(self) -> int:
        return sum(server.full for server in self.servers)

    @property
    def alone(self) -> int:
        return sum(server.alone for server in self.servers)


def measure(launch: Launch) -> ConfigCost:
    """The costs of every enabled server of the configuration (servers without a manifest are started)."""
    store = ManifestStore(cache_dir())
    if launch.refresh or any(store.load(entry.identity()) is None for entry in launch.config.enabled):
        asyncio.run(refresh(launch))
    gateway = build_gateway(Launch(launch.config, launch.options, launch.mode, launch.budget), store)
    servers: list[ServerCost] = []
    for name, link in gateway.links.items():
        tools = list(link.tools or ())
        alone = computed_listings(tools, Options())["stock"]
        servers.append(ServerCost(name, len(tools), Size.of(tools).tokens, Size.of(alone).tokens))
    listing = list_tools(gateway.catalog, {}, Caller()).result["tools"]
    return ConfigCost(servers, Size.of(listing).tokens, gateway.catalog.options.mode)


def render(cost: ConfigCost) -> str:
    """The costs as a plain-text table."""

    def share(tokens: int) -> str:
        return f"{100 * tokens / cost.full:.1f}%" if cost.full else "-"

    head = f"{'server':<24}{'tools':>7}{'full':>10}{'lazy alone':>12}{'of full':>9}"
    lines = [head]
    for s in cost.servers:
        of_full = f"{100 * s.alone / s.full:.1f}%" if s.full else "-"
        lines.append(f"{s.server:<24}{s.tools:>7}{s.full:>10,}{s.alone:>12,}{of_full:>9}")
    tools = sum(s.tools for s in cost.servers)
    lines.append(f"{'total, one proxy each':<24}{tools:>7}{cost.full:>10,}{cost.alone:>12,}{share(cost.alone):>9}")
    lines.append(f"{'total, one gateway':<24}{tools:>7}{cost.full:>10,}{cost.gateway:>12,}{share(cost.gateway):>9}")
    lines += ["", f"tokens: cl100k_base; lazy: what a stock client lists; the gateway's mode: {cost.mode}"]
    return "\n".join(lines)
