"""Section 3, scale: how the figures grow from 10 to 10,000 tools, and what the cache costs.

- growth: the medians of sections 1 and 2 by catalog size (when those sections ran in this run);
- flatness: ``tools/describe`` on a small and a large lazy server, measured side by side in the
  same rounds, asking both for the same tools (a prefix of a synthetic catalog is the smaller
  catalog), end to end and handler-only;
- build: ``Catalog.build`` plus every listing a default server serves (full, bare stubs at each
  detail, stock stubs), median of a few builds;
- memory: what ``tracemalloc`` sees retained, with the tool dicts counted apart from what lazymcp
  adds (the Catalog: index, tuple, per-tool JSON bytes, meta-tool; then each listing).
"""

from __future__ import annotations

import gc
import linecache
import os
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench.common import (
    Config,
    Rounds,
    Source,
    Summary,
    Table,
    calibrate,
    interleave,
    interleave_async,
    ratio,
    real_catalog,
    synthetic,
    times,
    us,
)
from bench.latency import sessions
from lazymcp.client import raw_request
from lazymcp.protocol.messages import Detail, Shape, Tool
from lazymcp.surfaces import catalog as catalog_module
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import Caller, dispatch
from lazymcp.tools import stubs as stubs_module

LISTINGS: tuple[tuple[Shape, Detail], ...] = (
    ("full", "description"),
    ("bare", "name"),
    ("bare", "summary"),
    ("bare", "description"),
    ("stock", "summary"),
)
"""Every listing a default server serves: stock clients cannot send ``detail``, so stock is at summary."""

GROWTH_OPS = ("plain tools/list", "ping", "tools/list", "tools/list lazy=false", "tools/describe", "describe_batch 10")


def _key(shape: str, detail: str) -> str:
    return shape if shape in ("full", "stock") else f"{shape}:{detail}"


# --- growth, from the other sections -----------------------------------------------------------


def growth(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    latency = results.get("latency", {})
    for transport in ("memory", "stdio"):
        runs = [r for r in latency.get("runs", []) if r["transport"] == transport and r["kind"] == "synthetic"]
        if runs:
            out[f"e2e_{transport}"] = {
                op: {str(r["tools"]): r["ops"][op]["median_us"] for r in runs} for op in GROWTH_OPS
            }
    handler = [h for h in latency.get("handler", []) if h["kind"] == "synthetic"]
    if handler:
        keys = list(handler[0]["ops"])
        out["handler"] = {op: {str(h["tools"]): h["ops"][op]["median_us"] for h in handler} for op in keys}
    tokens = [c for c in results.get("tokens", {}).get("catalogs", []) if c["kind"] == "synthetic"]
    if tokens:
        modes = list(tokens[0]["modes"])
        out["tokens"] = {mode: {str(c["tools"]): c["modes"][mode]["tokens"] for c in tokens} for mode in modes}
        out["tokens"]["describe (median)"] = {str(c["tools"]): c["describe"]["median_tokens"] for c in tokens}
    return out


# --- flatness ----------------------------------------------------------------------------------


async def flat_e2e(sizes: tuple[int, int], transport: str, rounds: Rounds, seed: int) -> dict[str, Any]:
    small, large = sizes
    sources = {size: synthetic(size, seed) for size in sizes}
    tools = {size: sources[size].load() for size in sizes}
    asked = [tool["name"] for tool in tools[small]]
    assert asked == [tool["name"] for tool in tools[large][:small]], "a synthetic prefix is the smaller catalog"
    async with (
        sessions(sources[small], tools[small], transport, ("lazy",)) as a,
        sessions(sources[large], tools[large], transport, ("lazy",)) as b,
    ):
        conns = {small: a["lazy"], large: b["lazy"]}

        def op(size: int, method: str) -> Callable[[int], Any]:
            async def send(i: int) -> Any:
                params = {"name": asked[i % len(asked)]} if method == "tools/describe" else None
                return await raw_request(conns[size], method, params)

            return send

        ops = {f"{m}@{size}": op(size, m) for size in sizes for m in ("ping", "tools/describe")}
        samples = await interleave_async(ops, rounds)
    return _flat_result(transport, sizes, samples)


def flat_handler(sizes: tuple[int, int], rounds: Rounds, seed: int) -> dict[str, Any]:
    small = sizes[0]
    catalogs = {size: Catalog.build(synthetic(size, seed).load()) for size in sizes}
    asked = list(catalogs[small].index)

    def op(size: int) -> Callable[[int], Any]:
        catalog = catalogs[size]
        aware = Caller(declared=True)
        return lambda i: dispatch("tools/describe", catalog, {"name": asked[i % len(asked)]}, aware)

    ops = {f"tools/describe@{size}": op(size) for size in sizes}
    inner = {key: calibrate(fn) for key, fn in ops.items()}
    inner = dict.fromkeys(ops, max(inner.values()))  # same repetition at both sizes
    return _flat_result("handler", sizes, interleave(ops, rounds, inner))


def _flat_result(transport: str, sizes: tuple[int, int], samples: dict[str, list[float]]) -> dict[str, Any]:
    small, large = sizes
    stats = {key: Summary.of(values) for key, values in samples.items()}
    out: dict[str, Any] = {
        "transport": transport,
        "sizes": list(sizes),
        "rounds": len(next(iter(samples.values()))),
        "ops": {key: s.to_json() for key, s in stats.items()},
        "describe_ratio": ratio(stats[f"tools/describe@{large}"].median_us, stats[f"tools/describe@{small}"].median_us),
        "describe_ratio_p95": ratio(stats[f"tools/describe@{large}"].p95_us, stats[f"tools/describe@{small}"].p95_us),
    }
    if f"ping@{large}" in stats:
        out["ping_ratio"] = ratio(stats[f"ping@{large}"].median_us, stats[f"ping@{small}"].median_us)
        for size in sizes:
            out[f"describe_vs_ping@{size}"] = ratio(
                stats[f"tools/describe@{size}"].median_us, stats[f"ping@{size}"].median_us
            )
    return out


# --- cache build time and memory ---------------------------------------------------------------


def build_times(source: Source, rounds: int) -> dict[str, Any]:
    tools = source.load()
    samples: dict[str, list[float]] = {"build": [], "listings": [], "total": []}
    samples |= {_key(*listing): [] for listing in LISTINGS}
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter_ns()
        catalog = Catalog.build(tools)
        t1 = time.perf_counter_ns()
        for shape, detail in LISTINGS:
            ts = time.perf_counter_ns()
            catalog.listing(shape, detail)
            samples[_key(shape, detail)].append(time.perf_counter_ns() - ts)
        t2 = time.perf_counter_ns()
        samples["build"].append(t1 - t0)
        samples["listings"].append(t2 - t1)
        samples["total"].append(t2 - t0)
        del catalog
    return {
        **source.describe(),
        "rounds": rounds,
        "median_ms": {key: round(Summary.of(values).median_us / 1e3, 3) for key, values in samples.items()},
        "max_ms": {key: round(max(values) / 1e6, 3) for key, values in samples.items()},
    }


def _retained() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def memory(source: Source) -> dict[str, Any]:
    """Bytes retained, by ``tracemalloc``: the tool dicts, then what the Catalog and each listing add."""
    gc.collect()
    tracemalloc.start()
    tools: list[Tool] = source.load()
    tools_bytes = _retained()
    tracemalloc.stop()
    json_bytes = len(orjson.dumps(tools))
    gc.collect()
    tracemalloc.start()
    catalog = Catalog.build(tools)
    added: dict[str, int] = {"catalog": _retained()}
    for shape, detail in LISTINGS:
        before = _retained()
        catalog.listing(shape, detail)
        added[_key(shape, detail)] = _retained() - before
    total = _retained()
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    by_line = _by_line(snapshot)
    del catalog
    return {
        **source.describe(),
        "json_bytes": json_bytes,
        "tools_bytes": tools_bytes,
        "added_bytes": added,
        "cache_bytes": total,
        "cache_over_json": ratio(total, json_bytes),
        "tools_over_json": ratio(tools_bytes, json_bytes),
        "by_line": by_line,
    }


for _module in (catalog_module, stubs_module):  # keep the source as imported, for the by-line report
    linecache.getlines(_module.__file__ or "")


def _by_line(snapshot: tracemalloc.Snapshot, top: int = 8) -> dict[str, int]:
    """The lazymcp source lines holding the most retained memory: ``"file.py:line  code": bytes``."""
    out: dict[str, int] = {}
    for stat in snapshot.statistics("lineno"):
        frame = stat.traceback[0]
        if f"{os.sep}lazymcp{os.sep}" not in frame.filename:
            continue
        code = linecache.getline(frame.filename, frame.lineno).strip()
        out[f"{Path(frame.filename).name}:{frame.lineno}  {code}"] = stat.size
        if len(out) == top:
            break
    return out


# --- the section -------------------------------------------------------------------------------


def _sizes_and_real(cfg: Config) -> list[Source]:
    sizes = sorted({*(s for s in cfg.sizes if s >= 1_000), *cfg.memory_sizes})
    sources = [synthetic(size, cfg.seed) for size in sizes]
    return sources + [found for name in cfg.memory_real if (found := real_catalog(name)) is not None]


async def _flat(cfg: Config) -> list[dict[str, Any]]:
    out = [await flat_e2e(cfg.flat_sizes, "memory", cfg.e2e, cfg.seed)]
    if not cfg.quick:
        out.append(await flat_e2e(cfg.flat_sizes, "stdio", cfg.stdio, cfg.seed))
    return out


def run(cfg: Config, results: dict[str, Any]) -> dict[str, Any]:
    import anyio

    flat = anyio.run(_flat, cfg)
    flat.append(flat_handler(cfg.flat_sizes, cfg.handler, cfg.seed))
    build_sources = [synthetic(size, cfg.seed) for size in sorted({*cfg.sizes, *cfg.memory_sizes})]
    build_sources += [found for name in cfg.memory_real if (found := real_catalog(name)) is not None]
    builds = [build_times(source, cfg.build_rounds if source.size <= 10_000 else 3) for source in build_sources]
    mem = [memory(source) for source in _sizes_and_real(cfg)]
    return {
        "status": "ok",
        "growth": growth(results),
        "flatness": flat,
        "build": builds,
        "memory": mem,
        "memory_counts": "tools_bytes: the tool dicts as loaded (the server's own, not lazymcp's); "
        "cache_bytes: everything Catalog.build and the listings retain beyond them (per-tool orjson bytes, "
        "index dict, tools tuple, meta-tool, stub dicts and summary strings; stubs share name and description "
        "strings with the tools); per-tool argument validators are compiled on first tools/call and not counted",
    }


def render(section: dict[str, Any]) -> str:
    parts: list[str] = []
    for kind, table_data in section["growth"].items():
        sizes = sorted({int(s) for per in table_data.values() for s in per})
        table = Table(
            f"growth · {kind} (median{' µs' if kind != 'tokens' else ' tokens'})",
            ["op", *[f"{s:,}" for s in sizes], f"{sizes[-1]:,}/{sizes[0]:,}"],
        )
        for op, per in table_data.items():
            if kind == "e2e_memory" and op not in GROWTH_OPS:
                continue
            values = [per.get(str(s)) for s in sizes]
            first, last = values[0], values[-1]
            cells = [us(v) if kind != "tokens" else v for v in values]
            table.add(op, *cells, times(ratio(last, first)) if first and last else None)
        parts.append(table.render())
    flat = Table(
        "flatness · tools/describe, large vs small catalog, same rounds",
        [
            "transport",
            "sizes",
            "rounds",
            "describe small",
            "describe large",
            "large/small",
            "ping large/small",
            "describe/ping (large)",
        ],
    )
    for entry in section["flatness"]:
        small, large = entry["sizes"]
        flat.add(
            entry["transport"],
            f"{small:,} vs {large:,}",
            entry["rounds"],
            us(entry["ops"][f"tools/describe@{small}"]["median_us"]),
            us(entry["ops"][f"tools/describe@{large}"]["median_us"]),
            times(entry["describe_ratio"]),
            times(entry.get("ping_ratio")),
            times(entry.get(f"describe_vs_ping@{large}")),
        )
    parts.append(flat.render())
    build = Table(
        "cache build (median ms)", ["catalog", "tools", "build", *[_key(*li) for li in LISTINGS], "total", "rounds"]
    )
    for entry in section["build"]:
        m = entry["median_ms"]
        build.add(
            entry["catalog"],
            entry["tools"],
            m["build"],
            *[m[_key(*li)] for li in LISTINGS],
            m["total"],
            entry["rounds"],
        )
    parts.append(build.render())
    mem = Table(
        "cache memory (tracemalloc, bytes retained)",
        [
            "catalog",
            "tools",
            "JSON",
            "tool dicts",
            "catalog",
            "listings",
            "cache total",
            "cache/JSON",
        ],
    )
    for entry in section["memory"]:
        added = entry["added_bytes"]
        listings = sum(v for k, v in added.items() if k != "catalog")
        mem.add(
            entry["catalog"],
            entry["tools"],
            entry["json_bytes"],
            entry["tools_bytes"],
            added["catalog"],
            listings,
            entry["cache_bytes"],
            times(entry["cache_over_json"]),
        )
    parts.append(mem.render())
    largest = max(section["memory"], key=lambda e: e["tools"], default=None)
    if largest is not None:
        lines = Table(f"cache memory by lazymcp source line · {largest['catalog']}", ["line", "bytes"])
        for key, size in largest["by_line"].items():
            lines.add(key, size)
        parts.append(lines.render())
    return "\n\n".join(parts)
