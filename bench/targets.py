"""The targets the issue sets, read off a run's results. Reported, never asserted: timings are noisy."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bench.common import COMBINED, Table, pct, times

Measured = tuple[float | None, str]
"""A measured value (None: not measured in this run) and where it was measured."""

NOT_MEASURED: Measured = (None, "not measured in this run")


@dataclass(frozen=True)
class Target:
    key: str
    text: str
    limit: float
    unit: str  # "share" (of full tokens), "ratio" (×), "ms" or "count"
    measure: Callable[[dict[str, Any]], Measured]
    strict: bool = False
    """True: the value must stay below the limit; else at or below it."""

    def evaluate(self, sections: dict[str, Any]) -> dict[str, Any]:
        try:
            value, where = self.measure(sections)
        except (KeyError, IndexError, StopIteration, TypeError):
            value, where = NOT_MEASURED
        met = None if value is None else (value < self.limit if self.strict else value <= self.limit)
        return {
            "key": self.key,
            "target": self.text,
            "limit": self.limit,
            "unit": self.unit,
            "measured": value,
            "met": met,
            "where": where,
        }


def _tokens(mode: str) -> Callable[[dict[str, Any]], Measured]:
    def measure(sections: dict[str, Any]) -> Measured:
        entry = next(c for c in sections["tokens"]["catalogs"] if c["catalog"] == COMBINED)
        return entry["modes"][mode]["visible_of_full"], f"{COMBINED}.json, {entry['tools']} tools, what the model sees"

    return measure


def _handler_ratio(op: str, catalog: str = "synthetic-1000") -> Callable[[dict[str, Any]], Measured]:
    def measure(sections: dict[str, Any]) -> Measured:
        entry = next(h for h in sections["latency"]["handler"] if h["catalog"] == catalog)
        return entry["ratios"][op]["median"], f"{catalog}, median of {entry['rounds']} rounds"

    return measure


def _e2e_ratio(op: str, transport: str, catalog: str = "synthetic-1000") -> Callable[[dict[str, Any]], Measured]:
    def measure(sections: dict[str, Any]) -> Measured:
        runs = sections["latency"]["runs"]
        entry = next(r for r in runs if r["transport"] == transport and r["catalog"] == catalog)
        rounds = entry["rounds"]["heavy" if op.startswith("tools/list") else "light"]
        return entry["ratios"][op]["median"], f"{transport}, {catalog}, median of {rounds} rounds"

    return measure


def _worst(values: Iterable[tuple[float | None, str]]) -> Measured:
    present = [(v, where) for v, where in values if v is not None]
    if not present:
        return NOT_MEASURED
    value, where = max(present)
    return value, f"worst: {where}"


def _describe_vs_ping(transport: str) -> Callable[[dict[str, Any]], Measured]:
    def measure(sections: dict[str, Any]) -> Measured:
        runs = [r for r in sections["latency"]["runs"] if r["transport"] == transport]
        return _worst(
            (r["ratios"]["tools/describe"]["median"], f"{r['catalog']} (of {len(runs)} catalogs)") for r in runs
        )

    return measure


def _flat(transport: str) -> Callable[[dict[str, Any]], Measured]:
    def measure(sections: dict[str, Any]) -> Measured:
        entry = next(f for f in sections["scale"]["flatness"] if f["transport"] == transport)
        small, large = entry["sizes"]
        return entry["describe_ratio"], f"{transport}, {large:,} vs {small:,} tools, median of {entry['rounds']} rounds"

    return measure


def _memory(sections: dict[str, Any]) -> Measured:
    entries = sections["scale"]["memory"]
    return _worst((e["cache_over_json"], f"{e['catalog']}") for e in entries)


def _build(sections: dict[str, Any]) -> Measured:
    entry = next(b for b in sections["scale"]["build"] if b["catalog"] == "synthetic-10000")
    return entry["median_ms"]["total"], f"synthetic-10000, median of {entry['rounds']} builds"


def _manifest(read: Callable[[dict[str, Any]], float], where: str) -> Callable[[dict[str, Any]], Measured]:
    def measure(sections: dict[str, Any]) -> Measured:
        return read(sections["manifest"]), where

    return measure


def _second_session(section: dict[str, Any]) -> float:
    return section["cache"]["sessions"][1]["describe_requests"]


def _describe_names_flat(sections: dict[str, Any]) -> Measured:
    entry = sections["manifest"]["flatness"]
    small, large = entry["sizes"]
    return entry["ratio"], f"handler, {large:,} vs {small:,} tools, median of {entry['rounds']} rounds"


TARGETS: tuple[Target, ...] = (
    Target(
        "bare_tokens",
        "bare stubs ≤ 6.5% of full tokens, as the model sees them (combined.json)",
        0.065,
        "share",
        _tokens("bare:summary"),
    ),
    Target(
        "stock_tokens",
        "stock stubs ≤ 10% of full tokens, as the model sees them (combined.json)",
        0.10,
        "share",
        _tokens("stock"),
    ),
    Target(
        "list_server",
        "lazy tools/list server time ≤ 0.5× plain SDK full tools/list (1,000 tools)",
        0.5,
        "ratio",
        _handler_ratio("tools/list"),
    ),
    Target(
        "eager_server",
        "lazy=false tools/list server time ≤ 1.1× plain SDK (1,000 tools)",
        1.1,
        "ratio",
        _handler_ratio("tools/list lazy=false"),
    ),
    Target(
        "list_memory",
        "lazy tools/list end to end ≤ 0.5× plain (in-memory, 1,000 tools)",
        0.5,
        "ratio",
        _e2e_ratio("tools/list", "memory"),
    ),
    Target(
        "eager_memory",
        "lazy=false end to end ≤ 1.1× plain (in-memory, 1,000 tools)",
        1.1,
        "ratio",
        _e2e_ratio("tools/list lazy=false", "memory"),
    ),
    Target(
        "list_stdio",
        "lazy tools/list end to end ≤ 0.5× plain (stdio, 1,000 tools)",
        0.5,
        "ratio",
        _e2e_ratio("tools/list", "stdio"),
    ),
    Target(
        "eager_stdio",
        "lazy=false end to end ≤ 1.1× plain (stdio, 1,000 tools)",
        1.1,
        "ratio",
        _e2e_ratio("tools/list lazy=false", "stdio"),
    ),
    Target(
        "describe_ping_memory",
        "tools/describe ≤ 1.2× ping (in-memory, every catalog)",
        1.2,
        "ratio",
        _describe_vs_ping("memory"),
    ),
    Target(
        "describe_ping_stdio",
        "tools/describe ≤ 1.2× ping (stdio, every catalog)",
        1.2,
        "ratio",
        _describe_vs_ping("stdio"),
    ),
    Target(
        "describe_flat_memory", "tools/describe flat, large/small ≤ 1.2× (in-memory)", 1.2, "ratio", _flat("memory")
    ),
    Target("describe_flat_stdio", "tools/describe flat, large/small ≤ 1.2× (stdio)", 1.2, "ratio", _flat("stdio")),
    Target(
        "describe_flat_handler", "tools/describe flat, large/small ≤ 1.2× (handler)", 1.2, "ratio", _flat("handler")
    ),
    Target("cache_memory", "cache memory ≤ 3× the catalog's JSON size", 3.0, "ratio", _memory),
    Target("cache_build", "cache build for 10,000 tools < 1 s", 1000.0, "ms", _build, strict=True),
    Target(
        "second_session",
        "a second LazyClient session describing 20 kept tools sends no describe request",
        0,
        "count",
        _manifest(_second_session, f"{COMBINED}.json, in-memory, one on-disk cache"),
    ),
    Target(
        "manifest_bytes",
        "tools/manifest < 2x a bare tools/list in bytes (combined.json)",
        2.0,
        "ratio",
        _manifest(lambda m: m["sizes"]["manifest_over_bare"], f"{COMBINED}.json, compact JSON"),
        strict=True,
    ),
    Target(
        "bare_tokens_json",
        "bare stubs ≤ 6% of the full listing's JSON tokens, digests off the listings (combined.json)",
        0.06,
        "share",
        _manifest(lambda m: m["sizes"]["bare_tokens_of_full"], f"{COMBINED}.json, cl100k_base of compact JSON"),
    ),
    Target(
        "describe_names_flat",
        "tools/describe {names} flat, large/small ≤ 1.2× (handler)",
        1.2,
        "ratio",
        _describe_names_flat,
    ),
)


def evaluate(sections: dict[str, Any]) -> list[dict[str, Any]]:
    return [target.evaluate(sections) for target in TARGETS]


def show(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "share":
        return pct(value)
    if unit == "ms":
        return f"{value:,.1f} ms"
    if unit == "count":
        return f"{value:g}"
    return times(value)


def render(results: list[dict[str, Any]]) -> str:
    table = Table("Targets (reported, never asserted)", ["target", "measured", "met", "where"])
    for entry in results:
        met = "n/a" if entry["met"] is None else ("yes" if entry["met"] else "MISSED")
        table.add(entry["target"], show(entry["measured"], entry["unit"]), met, entry["where"])
    return table.render()
