"""What a gateway's listing costs a model against its tools in full, counted one way for
``lazymcp stats --config`` and the status page (``lazymcp.run.status``): each listed server's tools the
session's catalog holds (its grant's), each server's full listing of them, and what a stock client's
``tools/list`` gets, in tokens of what the model sees (``lazymcp.tools.tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lazymcp.gateway.front import Gateway
from lazymcp.protocol.messages import Tool
from lazymcp.surfaces.methods import Caller, list_tools
from lazymcp.tools.tokens import ListingSize


def granted_tools(gateway: Gateway) -> dict[str, list[Tool]]:
    """Each listed server's tools that the gateway's catalog holds (those its grant allows), by server; a
    server not listed yet is left out."""
    grant, names = gateway.grant, gateway.names
    tools: dict[str, list[Tool]] = {}
    for server in gateway.servers:
        if server.tools is not None:
            tools[server.name] = [t for t in server.tools if grant is None or grant(names.name(server.name, t["name"]))]
    return tools


def stock_listing(gateway: Gateway) -> list[Tool]:
    """What a stock client's first ``tools/list`` of the gateway gets."""
    return list_tools(gateway.catalog, {}, Caller()).result["tools"]


@dataclass(frozen=True, slots=True)
class ListingCost:
    """A gateway's listing against its tools in full, in tokens of what the model sees."""

    tools: int
    full: int
    """Every listed server's full listing (of the tools the catalog holds), summed."""
    listed: int
    """A stock client's listing of the gateway."""
    mode: str

    @property
    def saving(self) -> float:
        """The share of the full listing's tokens the gateway's listing saves (0.9: 90% fewer)."""
        return 1 - self.listed / self.full if self.full else 0.0


def listing_cost(gateway: Gateway) -> ListingCost:
    """The gateway's listing against its tools in full (``lazymcp stats --config``'s totals)."""
    tools = granted_tools(gateway)
    full = ListingSize.of_servers(tools.values()).visible.tokens
    listed = ListingSize.of(stock_listing(gateway)).visible.tokens
    return ListingCost(sum(map(len, tools.values())), full, listed, gateway.catalog.options.mode)
