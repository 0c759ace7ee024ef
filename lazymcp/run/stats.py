"""``lazymcp stats``: what each listing mode of a server costs a model, in bytes and tokens.

It connects to a server like any client, lists its tools in every mode and counts them. A server
with the extension is asked for each listing; for one without, the lazy figures are computed here
from its full listing with the same code a lazy server uses: what lazymcp would save it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from lazymcp.protocol.messages import DETAILS, Tool
from lazymcp.search.index import describe_ranker
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.hosts import every_host
from lazymcp.surfaces.methods import Caller, list_tools
from lazymcp.surfaces.modes import DynamicSession
from lazymcp.surfaces.options import Options
from lazymcp.tools.tokens import ListingSize, compact_json, count_tokens

MODES: tuple[tuple[str, str], ...] = (
    ("full", "lazy=false: every tool as the server defines it"),
    ("stock", "what a stock client's tools/list gets in the mode shown (describe: stubs + meta-tools)"),
    *((f"stubs:{detail}", f"a declaring client's stubs, detail={detail}") for detail in DETAILS),
)


@dataclass(frozen=True, slots=True)
class Row:
    mode: str
    tools: int
    bytes: int
    """Wire size: the compact JSON of the whole listing."""
    tokens: int
    visible_bytes: int
    """Model-visible size: the name, description and inputSchema of each tool (``tokens.MODEL_VISIBLE``)."""
    visible_tokens: int
    saving: float
    """Share of the full listing's model-visible tokens saved (0.94 = 94% fewer)."""


@dataclass(frozen=True, slots=True)
class Report:
    server: str
    native: bool
    """True when the server speaks the extension; else the lazy rows are computed from its full listing."""
    rows: list[Row]
    costliest: list[tuple[str, int]] = field(default_factory=lambda: [])
    stock_mode: str = "describe"
    """The mode of the ``stock`` row."""
    stock_computed: bool = False
    """True when the ``stock`` row is computed here from the full listing in ``stock_mode``."""
    search: str = ""
    """The ranker ``search_tools`` uses with what is installed here (``search.describe_ranker``)."""
    hosts: list[tuple[str, str, str, str]] = field(default_factory=lambda: [])
    """Each known host (label, ``clientInfo.name``) with the mode it is served and why."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


async def collect(
    target: Any, stock_target: Any | None = None, *, options: Options | None = None, **client_kwargs: Any
) -> Report:
    """Measure every listing mode of the server at ``target`` (anything ``mcp.Client`` takes).

    ``stock_target`` reaches the same server for a second, non-declaring connection (needed when
    ``target`` is a one-shot transport); it defaults to ``target``. With ``options``, the ``stock``
    row is what lazymcp would serve a stock client in ``options.mode``, computed from the full listing.
    """
    from mcp import Client  # the SDK's client: not loaded by the proxy's start-up line, which needs the rest

    from lazymcp.client import LazyClient, list_all

    listings: dict[str, list[Any]] = {}
    async with LazyClient(target, **client_kwargs) as client:
        server = client.client.server_info.name if client.client.server_info else "?"
        native = client.server_supports_lazy
        full = await client.list_full()
        listings["full"] = full
        if native:
            for detail in DETAILS:
                listings[f"stubs:{detail}"] = await list_all(client.session, {"lazy": True, "detail": detail})
    computed = options is not None or not native
    if not native:
        listings |= computed_listings(full, options or Options())
    elif options is not None:
        listings["stock"] = computed_listings(full, options)["stock"]
    else:
        async with Client(stock_target if stock_target is not None else target, **client_kwargs) as stock:
            listings["stock"] = await list_all(stock.session, {"lazy": True})
    mode = options.mode if options is not None else "describe"
    made = report(server, native, listings, stock_mode=mode, stock_computed=computed)
    served = Catalog.build(full, options or Options(by_host=True), rejected=[])
    hosts = [(host.label, host.name, choice.mode, choice.why) for host, choice in every_host(served)]
    return replace(made, hosts=hosts)


def computed_listings(full: Sequence[Tool], options: Options) -> dict[str, list[Any]]:
    """The lazy listings a lazy server would serve for ``full``, computed locally.

    The ``stock`` listing is what a stock client's first plain ``tools/list`` gets in ``options.mode``
    (a ``dynamic`` session that has enabled nothing yet).
    """
    return catalog_listings(Catalog.build(full, options))


def catalog_listings(catalog: Catalog) -> dict[str, list[Any]]:
    """The lazy listings ``catalog`` serves: the ``stock`` one in its own mode, and the bare stubs."""
    session = DynamicSession() if catalog.options.mode == "dynamic" else None
    stock = list_tools(catalog, {}, Caller(session=session))
    listings: dict[str, list[Any]] = {"stock": stock.result["tools"]}
    for detail in DETAILS:
        listings[f"stubs:{detail}"] = catalog.page("bare", detail, None)["tools"]
    return listings


def report(
    server: str,
    native: bool,
    listings: dict[str, list[Any]],
    *,
    stock_mode: str = "describe",
    stock_computed: bool = False,
) -> Report:
    """Count every listing, on the wire and as the model sees it, and the costliest tools of the full one."""
    full_visible = ListingSize.of(listings["full"]).visible.tokens
    rows: list[Row] = []
    for mode, _ in MODES:
        size = ListingSize.of(listings[mode])
        saving = 1 - size.visible.tokens / full_visible if full_visible else 0.0
        wire, visible = size.wire, size.visible
        rows.append(
            Row(mode, len(listings[mode]), wire.bytes, wire.tokens, visible.bytes, visible.tokens, round(saving, 4))
        )
    per_tool = sorted(
        ((t.get("name", "?"), count_tokens(compact_json(t))) for t in listings["full"]), key=lambda x: -x[1]
    )
    return Report(server, native, rows, per_tool[:5], stock_mode, stock_computed, describe_ranker())


def render(report: Report) -> str:
    """The report as a plain-text table."""
    how = "served by the server" if report.native else "computed here: the server does not speak the extension"
    stock_how = "computed here" if report.stock_computed else "served"
    lines = [
        f"server: {report.server}  (lazy listings {how})",
        f"stock row: mode {report.stock_mode} ({stock_how})",
        f"search_tools ranks with: {report.search}",
        "",
        f"{'':<18}{'':>7}{'on the wire':>22}{'what the model sees':>30}",
        f"{'mode':<18}{'tools':>7}{'bytes':>12}{'tokens':>10}{'bytes':>12}{'tokens':>10}{'of full':>9}{'saved':>8}",
    ]
    full = report.rows[0].visible_tokens or 1
    for row in report.rows:
        share = f"{100 * row.visible_tokens / full:.1f}%"
        saved = f"{100 * row.saving:.1f}%"
        lines.append(
            f"{row.mode:<18}{row.tools:>7}{row.bytes:>12,}{row.tokens:>10,}"
            f"{row.visible_bytes:>12,}{row.visible_tokens:>10,}{share:>9}{saved:>8}"
        )
    lines += ["", "what the model sees: name, description and inputSchema of each tool; of full and saved count it"]
    lines += ["", "modes:"] + [f"  {mode:<19}{text}" for mode, text in MODES]
    if report.hosts:
        lines += [
            "",
            "hosts (by the clientInfo.name they send; over stdio Claude Code's environment may say otherwise):",
        ]
        lines += [f"  {label:<18}{name:<32}{mode:<10}{why}" for label, name, mode, why in report.hosts]
    if report.costliest:
        lines += ["", "costliest tools (tokens in the full listing):"]
        lines += [f"  {tokens:>7,}  {name}" for name, tokens in report.costliest]
    return "\n".join(lines)
