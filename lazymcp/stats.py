"""``lazymcp stats``: what each listing mode of a server costs a model, in bytes and tokens.

It connects to a server like any client, lists its tools in every mode and counts them. A server
with the extension is asked for each listing; for one without, the lazy figures are computed here
from its full listing with the same code a lazy server uses: what lazymcp would save it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from mcp import Client

from lazymcp.catalog import Catalog
from lazymcp.client import LazyClient, list_all
from lazymcp.messages import DETAILS, Tool
from lazymcp.methods import Caller, list_tools
from lazymcp.options import Options
from lazymcp.tokens import Size, compact_json, count_tokens

MODES: tuple[tuple[str, str], ...] = (
    ("full", "lazy=false: every tool as the server defines it"),
    ("stock", "a stock client's lazy listing: stubs with inputSchema {type: object} + describe_tools"),
    *((f"stubs:{detail}", f"a declaring client's stubs, detail={detail}") for detail in DETAILS),
)


@dataclass(frozen=True, slots=True)
class Row:
    mode: str
    tools: int
    bytes: int
    tokens: int
    saving: float
    """Share of the full listing's tokens saved (0.94 = 94% fewer)."""


@dataclass(frozen=True, slots=True)
class Report:
    server: str
    native: bool
    """True when the server speaks the extension; else the lazy rows are computed from its full listing."""
    rows: list[Row]
    costliest: list[tuple[str, int]] = field(default_factory=lambda: [])

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


async def collect(target: Any, stock_target: Any | None = None, **client_kwargs: Any) -> Report:
    """Measure every listing mode of the server at ``target`` (anything ``mcp.Client`` takes).

    ``stock_target`` reaches the same server for a second, non-declaring connection (needed when
    ``target`` is a one-shot transport); it defaults to ``target``.
    """
    listings: dict[str, list[Any]] = {}
    async with LazyClient(target, **client_kwargs) as client:
        server = client.client.server_info.name if client.client.server_info else "?"
        native = client.server_supports_lazy
        full = await client.list_full()
        listings["full"] = full
        if native:
            for detail in DETAILS:
                listings[f"stubs:{detail}"] = await list_all(client.session, {"lazy": True, "detail": detail})
    if native:
        async with Client(stock_target if stock_target is not None else target, **client_kwargs) as stock:
            listings["stock"] = await list_all(stock.session, {"lazy": True})
    else:
        listings |= computed_listings(full, Options())
    return report(server, native, listings)


def computed_listings(full: Sequence[Tool], options: Options) -> dict[str, list[Any]]:
    """The lazy listings a lazy server would serve for ``full``, computed locally."""
    catalog = Catalog.build(full, options)
    stock = list_tools(catalog, {"lazy": True}, Caller())  # what a stock client is served
    listings: dict[str, list[Any]] = {"stock": stock.result["tools"]}
    for detail in DETAILS:
        listings[f"stubs:{detail}"] = catalog.page("bare", detail, None)["tools"]
    return listings


def report(server: str, native: bool, listings: dict[str, list[Any]]) -> Report:
    """Count every listing and the costliest tools of the full one."""
    full_tokens = Size.of(listings["full"]).tokens
    rows: list[Row] = []
    for mode, _ in MODES:
        size = Size.of(listings[mode])
        saving = 1 - size.tokens / full_tokens if full_tokens else 0.0
        rows.append(Row(mode, len(listings[mode]), size.bytes, size.tokens, round(saving, 4)))
    per_tool = sorted(
        ((t.get("name", "?"), count_tokens(compact_json(t))) for t in listings["full"]), key=lambda x: -x[1]
    )
    return Report(server, native, rows, per_tool[:5])


def render(report: Report) -> str:
    """The report as a plain-text table."""
    how = "served by the server" if report.native else "computed here: the server does not speak the extension"
    lines = [f"server: {report.server}  (lazy listings {how})", ""]
    lines.append(f"{'mode':<18}{'tools':>7}{'bytes':>12}{'tokens':>10}{'of full':>9}{'saved':>8}")
    full = report.rows[0].tokens or 1
    for row in report.rows:
        share = f"{100 * row.tokens / full:.1f}%"
        saved = f"{100 * row.saving:.1f}%"
        lines.append(f"{row.mode:<18}{row.tools:>7}{row.bytes:>12,}{row.tokens:>10,}{share:>9}{saved:>8}")
    lines += ["", "modes:"] + [f"  {mode:<19}{text}" for mode, text in MODES]
    if report.costliest:
        lines += ["", "costliest tools (tokens in the full listing):"]
        lines += [f"  {tokens:>7,}  {name}" for name, tokens in report.costliest]
    return "\n".join(lines)
