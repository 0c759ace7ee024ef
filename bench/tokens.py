"""Section 1, tokens and bytes: what each listing mode puts in a model's context (exact, deterministic).

Counts are ``lazymcp.tools.tokens.Size.of``: the compact JSON of the value, cl100k_base tokens (offline
copy), so they match ``lazymcp stats`` and the catalogs' README. The listings are what a lazy server
serves, taken from ``Catalog.page`` with the default options (one page, 80-character summaries).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from bench.common import Config, Source, Table, pct, real_catalogs, seeded_sample, synthetic, times
from lazymcp.protocol.messages import Detail, Shape, Tool
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import Caller, list_tools
from lazymcp.tools.tokens import ListingSize, Size

SESSION_DESCRIBES = 3
"""A typical session: the bare listing, then the full definitions of this many tools."""


@dataclass(frozen=True)
class Mode:
    """One listing a client can receive."""

    key: str
    shape: Shape
    detail: Detail
    what: str


MODES: tuple[Mode, ...] = (
    Mode("full", "full", "description", "full tools/list (a plain server, or lazy=false)"),
    Mode("stock", "stock", "summary", "stock client: stubs ({type: object} schema) + the describe mode's meta-tools"),
    Mode("bare:description", "bare", "description", "bare stubs, detail=description ({name, description})"),
    Mode("bare:summary", "bare", "summary", "bare stubs, detail=summary (a declaring client's default)"),
    Mode("bare:name", "bare", "name", "bare stubs, detail=name: names only, the floor"),
)
FLOOR = "bare:name"


def listing(catalog: Catalog, mode: Mode) -> list[Any]:
    """What a server serves in ``mode``: a stock client gets the default mode's meta-tools too."""
    if mode.shape == "stock":
        return list_tools(catalog, {"lazy": True}, Caller()).result["tools"]
    return catalog.page(mode.shape, mode.detail, None)["tools"]


def measure(source: Source, seed: int) -> dict[str, Any]:
    tools: list[Tool] = source.load()
    catalog = Catalog.build(tools)
    pages = {mode.key: listing(catalog, mode) for mode in MODES}
    both = {key: ListingSize.of(tools) for key, tools in pages.items()}
    sizes = {key: size.wire for key, size in both.items()}
    listed = {key: len(tools) for key, tools in pages.items()}
    full, floor = sizes["full"], sizes[FLOOR]
    full_visible = both["full"].visible.tokens

    def row(size: Size, tools_listed: int | None = None, visible: Size | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "bytes": size.bytes,
            "tokens": size.tokens,
            "of_full": round(size.tokens / full.tokens, 5) if full.tokens else None,
            "over_floor": round(size.tokens / floor.tokens, 3) if floor.tokens else None,
        }
        if visible is not None:  # what the model sees: name, description, inputSchema (the targets' measure)
            out["visible_bytes"] = visible.bytes
            out["visible_tokens"] = visible.tokens
            out["visible_of_full"] = round(visible.tokens / full_visible, 5) if full_visible else None
        if tools_listed is not None:
            out = {"tools": tools_listed, **out}
        return out

    described = {tool["name"]: Size.of({"tool": tool}) for tool in tools}
    tokens = [size.tokens for size in described.values()]
    largest = max(described, key=lambda name: described[name].tokens) if described else None
    picked = seeded_sample(list(described), SESSION_DESCRIBES, seed)
    session = Size(
        sizes["bare:summary"].bytes + sum(described[name].bytes for name in picked),
        sizes["bare:summary"].tokens + sum(described[name].tokens for name in picked),
    )
    return {
        **source.describe(),
        "modes": {key: row(size, listed[key], both[key].visible) for key, size in sizes.items()},
        "describe": {
            "median_tokens": statistics.median(tokens) if tokens else 0,
            "mean_tokens": round(statistics.fmean(tokens), 1) if tokens else 0,
            "max_tokens": max(tokens, default=0),
            "largest_tool": largest,
            "median_bytes": statistics.median(size.bytes for size in described.values()) if tokens else 0,
        },
        "session": {"describes": picked, **row(session)},
    }


def run(cfg: Config, results: dict[str, Any]) -> dict[str, Any]:
    sources = [synthetic(size, cfg.seed) for size in cfg.sizes] + list(real_catalogs())
    return {
        "status": "ok",
        "modes": {mode.key: mode.what for mode in MODES},
        "session": f"bare:summary listing + tools/describe results of {SESSION_DESCRIBES} tools (seeded sample)",
        "catalogs": [measure(source, cfg.seed) for source in sources],
    }


def render(section: dict[str, Any]) -> str:
    table = Table(
        "Tokens (cl100k_base) per listing on the wire; % of the full listing, × over the names-only floor",
        [
            "catalog",
            "tools",
            "full",
            "stock",
            "",
            "bare:summary",
            "",
            "bare:descr",
            "",
            "floor",
            "describe(med)",
            "session",
            "",
        ],
    )
    for entry in section["catalogs"]:
        modes = entry["modes"]
        table.add(
            entry["catalog"],
            entry["tools"],
            modes["full"]["tokens"],
            modes["stock"]["tokens"],
            pct(modes["stock"]["of_full"]),
            modes["bare:summary"]["tokens"],
            pct(modes["bare:summary"]["of_full"]),
            modes["bare:description"]["tokens"],
            pct(modes["bare:description"]["of_full"]),
            modes[FLOOR]["tokens"],
            entry["describe"]["median_tokens"],
            entry["session"]["tokens"],
            pct(entry["session"]["of_full"]),
        )
    floor = Table("Above the floor (names only), × its tokens", ["catalog", *[m.key for m in MODES[:-1]], "session"])
    for entry in section["catalogs"]:
        modes = entry["modes"]
        floor.add(
            entry["catalog"],
            *[times(modes[m.key]["over_floor"]) for m in MODES[:-1]],
            times(entry["session"]["over_floor"]),
        )
    visible = Table(
        "What the model sees (name, description, inputSchema), tokens; % of the full listing's",
        ["catalog", *[m.key for m in MODES]],
    )
    for entry in section["catalogs"]:
        modes = entry["modes"]
        visible.add(
            entry["catalog"],
            *[f"{modes[m.key]['visible_tokens']:,} ({pct(modes[m.key]['visible_of_full'])})" for m in MODES],
        )
    return table.render() + "\n\n" + visible.render() + "\n\n" + floor.render()
