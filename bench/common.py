"""Shared pieces of the benchmark harness: configuration, catalogs, timing, tables.

Everything a section needs to know about the run is in ``Config``; every catalog it measures is a
``Source``. Timings are ``time.perf_counter_ns`` samples, summarized by ``Summary`` (median, p95 by
nearest rank). ``interleave`` runs several measured operations in alternating rounds so that noise
from the shared machine lands on all of them alike.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import random
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, cast

from lazymcp.protocol.messages import Tool
from lazymcp.run.serve import load_tools
from lazymcp.tools.sample import synthetic_tools

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LAZYMCP_SHARED", ROOT.parent / "shared"))
CATALOGS = SHARED / "catalogs"
SEED = 0
COMBINED = "combined"


# --- configuration -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rounds:
    """How many interleaved rounds to time: at least ``minimum``, then more until ``budget_s`` of
    wall time has gone by, at most ``maximum``; ``warmup`` untimed rounds first."""

    minimum: int
    maximum: int
    budget_s: float
    warmup: int


@dataclass(frozen=True)
class Config:
    quick: bool
    sizes: tuple[int, ...]
    """Synthetic catalog sizes measured by every section."""
    stdio_sizes: tuple[int, ...]
    """Synthetic sizes also measured over stdio (subprocess servers)."""
    latency_real: tuple[str, ...]
    """Real catalogs (by name) measured for latency; tokens are measured on every real catalog."""
    stdio_real: tuple[str, ...]
    memory_sizes: tuple[int, ...]
    """Synthetic sizes whose cache build time and memory are measured (beyond ``sizes``)."""
    flat_sizes: tuple[int, int]
    """The two sizes whose ``tools/describe`` latencies are compared side by side (flatness)."""
    memory_real: tuple[str, ...]
    e2e: Rounds
    """In-memory transport, light ops (ping, describe); the heavy ones (listings) have ``e2e_heavy``."""
    e2e_heavy: Rounds
    stdio: Rounds
    stdio_heavy: Rounds
    handler: Rounds
    build_rounds: int
    seed: int = SEED

    @classmethod
    def make(cls, quick: bool) -> Config:
        if quick:
            return cls(
                quick=True,
                sizes=(10, 100, 1_000),
                stdio_sizes=(10,),
                latency_real=(COMBINED,),
                stdio_real=(),
                memory_sizes=(1_000,),
                flat_sizes=(100, 1_000),
                memory_real=(COMBINED,),
                e2e=Rounds(minimum=5, maximum=30, budget_s=0.2, warmup=2),
                e2e_heavy=Rounds(minimum=3, maximum=15, budget_s=0.4, warmup=1),
                stdio=Rounds(minimum=5, maximum=20, budget_s=0.2, warmup=2),
                stdio_heavy=Rounds(minimum=3, maximum=5, budget_s=0.3, warmup=1),
                handler=Rounds(minimum=3, maximum=20, budget_s=0.4, warmup=1),
                build_rounds=2,
            )
        return cls(
            quick=False,
            sizes=(10, 100, 1_000, 10_000),
            stdio_sizes=(10, 100, 1_000, 10_000),
            latency_real=(COMBINED,),
            stdio_real=(COMBINED,),
            memory_sizes=(10_000, 100_000),
            flat_sizes=(100, 10_000),
            memory_real=(COMBINED,),
            e2e=Rounds(minimum=100, maximum=500, budget_s=3.0, warmup=10),
            e2e_heavy=Rounds(minimum=12, maximum=200, budget_s=4.0, warmup=2),
            stdio=Rounds(minimum=100, maximum=400, budget_s=3.0, warmup=10),
            stdio_heavy=Rounds(minimum=8, maximum=100, budget_s=6.0, warmup=1),
            handler=Rounds(minimum=10, maximum=300, budget_s=4.0, warmup=2),
            build_rounds=5,
        )


# --- catalogs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """A catalog to measure: synthetic (``synthetic_tools(size, seed)``) or a real captured file."""

    name: str
    kind: str  # "synthetic" | "real"
    size: int
    path: Path | None = None
    seed: int = SEED

    def load(self) -> list[Tool]:
        if self.path is not None:
            return load_tools(self.path)
        return synthetic_tools(self.size, seed=self.seed)  # pyright: ignore[reportReturnType]

    def server_args(self) -> list[str]:
        """How ``bench.server`` finds this catalog in a subprocess."""
        if self.path is not None:
            return ["--catalog", str(self.path)]
        return ["--synthetic", str(self.size), "--seed", str(self.seed)]

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"catalog": self.name, "kind": self.kind, "tools": self.size}
        if self.path is not None:
            out["path"] = (
                str(self.path.relative_to(SHARED.parent)) if self.path.is_relative_to(SHARED.parent) else str(self.path)
            )
        return out


def synthetic(size: int, seed: int = SEED) -> Source:
    return Source(name=f"synthetic-{size}", kind="synthetic", size=size, seed=seed)


@cache
def real_catalogs() -> tuple[Source, ...]:
    """Every catalog in ``../shared/catalogs/*.json`` and ``variants/*.json`` (none when absent)."""
    if not CATALOGS.is_dir():
        return ()
    paths = sorted(CATALOGS.glob("*.json")) + sorted((CATALOGS / "variants").glob("*.json"))
    sources: list[Source] = []
    for path in paths:
        name = path.stem if path.parent == CATALOGS else f"variants/{path.stem}"
        sources.append(Source(name=name, kind="real", size=len(load_tools(path)), path=path))
    return tuple(sources)


def real_catalog(name: str) -> Source | None:
    return next((source for source in real_catalogs() if source.name == name), None)


def servable(tools: Sequence[Tool]) -> tuple[list[Tool], int]:
    """The tools with ``"type": "object"`` added to any ``inputSchema`` that lacks a ``type``.

    The SDK's wire validation refuses such a schema (``tools/list`` answers -32603), so the plain
    baseline server could not list them at all; latency runs give both servers this same copy.
    Returns the tools and how many were patched.
    """
    patched = 0
    out: list[Tool] = []
    for tool in tools:
        schema = tool.get("inputSchema")
        if isinstance(schema, dict) and "type" not in schema:
            tool = {**tool, "inputSchema": {"type": "object", **cast(dict[str, Any], schema)}}
            patched += 1
        out.append(tool)
    return out, patched


# --- timing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """A sample of durations, in microseconds."""

    n: int
    median_us: float
    p95_us: float
    min_us: float
    mean_us: float

    @classmethod
    def of(cls, samples_ns: Sequence[float]) -> Summary:
        ordered = sorted(samples_ns)
        n = len(ordered)
        mid = n // 2
        median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        p95 = ordered[max(0, math.ceil(0.95 * n) - 1)]  # nearest rank
        return cls(
            n=n,
            median_us=round(median / 1e3, 3),
            p95_us=round(p95 / 1e3, 3),
            min_us=round(ordered[0] / 1e3, 3),
            mean_us=round(sum(ordered) / n / 1e3, 3),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "median_us": self.median_us,
            "p95_us": self.p95_us,
            "min_us": self.min_us,
            "mean_us": self.mean_us,
        }


def ratio(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator`` to 4 significant digits (None when the denominator is 0)."""
    return float(f"{numerator / denominator:.4g}") if denominator else None


def _orders(names: Sequence[str], round_index: int) -> list[str]:
    """Even rounds run the operations forward, odd rounds backward: no operation always goes first."""
    return list(names) if round_index % 2 == 0 else list(reversed(names))


def interleave(
    ops: dict[str, Callable[[int], Any]], rounds: Rounds, inner: dict[str, int] | None = None
) -> dict[str, list[float]]:
    """Time synchronous ``ops`` (called with the round number) in alternating rounds.

    ``inner[name]`` calls make one sample of a very fast op (the sample is their mean), so timer
    overhead stays small against what is measured.
    """
    inner = inner or {}
    samples: dict[str, list[float]] = {name: [] for name in ops}
    gc.collect()
    start = time.perf_counter()
    total = rounds.warmup + rounds.maximum
    for index in range(total):
        timed = index >= rounds.warmup
        if timed and index - rounds.warmup >= rounds.minimum and time.perf_counter() - start > rounds.budget_s:
            break
        for name in _orders(list(ops), index):
            op, k = ops[name], inner.get(name, 1)
            t0 = time.perf_counter_ns()
            for _ in range(k):
                op(index)
            elapsed = time.perf_counter_ns() - t0
            if timed:
                samples[name].append(elapsed / k)
    return samples


async def interleave_async(
    ops: dict[str, Callable[[int], Awaitable[Any]]],
    rounds: Rounds,
    settle: Callable[[], Awaitable[Any]] | None = None,
) -> dict[str, list[float]]:
    """``interleave`` for coroutines: one awaited request per op per round.

    ``settle``, awaited untimed after every op, lets the work a server still does after answering
    (freeing a large response, writing it out) finish before the next op's clock starts.
    """
    samples: dict[str, list[float]] = {name: [] for name in ops}
    gc.collect()
    start = time.perf_counter()
    total = rounds.warmup + rounds.maximum
    for index in range(total):
        timed = index >= rounds.warmup
        if timed and index - rounds.warmup >= rounds.minimum and time.perf_counter() - start > rounds.budget_s:
            break
        for name in _orders(list(ops), index):
            t0 = time.perf_counter_ns()
            await ops[name](index)
            elapsed = time.perf_counter_ns() - t0
            if timed:
                samples[name].append(elapsed)
            if settle is not None:
                await settle()
    return samples


def calibrate(op: Callable[[int], Any], target_ns: float = 20_000, limit: int = 1_000) -> int:
    """How many calls of ``op`` make one sample of about ``target_ns`` (at least 1)."""
    op(0)
    t0 = time.perf_counter_ns()
    op(0)
    once = max(time.perf_counter_ns() - t0, 1)
    return max(1, min(limit, int(target_ns // once)))


def seeded_sample(names: Sequence[str], k: int, seed: int = SEED) -> list[str]:
    """``k`` names (at most all of them), the same for the same names and seed."""
    return random.Random(seed).sample(list(names), min(k, len(names)))


# --- the machine -------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    from importlib.metadata import version

    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(),
        "mcp": version("mcp"),
        "lazymcp": version("lazymcp"),
        "loadavg_at_start": load,
    }


# --- tables ------------------------------------------------------------------------------------


@dataclass
class Table:
    """A plain-text table: first column left-aligned, the rest right-aligned."""

    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=lambda: [])

    def add(self, *cells: object) -> None:
        self.rows.append([fmt(cell) for cell in cells])

    def render(self) -> str:
        widths = [len(h) for h in self.headers]
        for row in self.rows:
            widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

        def line(cells: Iterable[str]) -> str:
            parts = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
            return "  ".join(parts).rstrip()

        out = [self.title, line(self.headers), line("-" * w for w in widths)]
        out += [line(row) for row in self.rows]
        return "\n".join(out)


def fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    return str(value)


def us(value: float | None) -> str:
    """Microseconds, in a readable unit."""
    if value is None:
        return "-"
    if value >= 10_000:
        return f"{value / 1e3:,.1f} ms"
    if value >= 1_000:
        return f"{value / 1e3:.2f} ms"
    return f"{value:.1f} µs" if value >= 10 else f"{value:.2f} µs"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def times(value: float | None) -> str:
    return "-" if value is None else (f"{value:.3g}×" if value < 10 else f"{value:,.0f}×")
