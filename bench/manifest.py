"""Section 7, manifests: the draft standard's ``tools/manifest`` and a client's schema cache, side by side
with today's listings in one run (spec/lazy-tools.md §18).

- bytes: the JSON of a ``tools/manifest`` answer of the 954-tool catalog beside a bare ``tools/list``
  and a full one, and the bare stubs' tokens as a share of the full listing's (digests stay off stubs);
- sessions: ``LazyClient`` over the SDK's in-memory transport, twice, on one on-disk cache, each session
  describing the same 20 tools; the server counts the describe requests it is sent;
- flatness: the draft's ``tools/describe {names}`` of one name through the one door on a small and a
  large synthetic catalog, timed in the same interleaved rounds.
"""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import orjson

from bench.common import (
    COMBINED,
    Config,
    Summary,
    Table,
    calibrate,
    interleave,
    pct,
    ratio,
    real_catalog,
    seeded_sample,
)
from bench.common import synthetic as synthetic_source
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import Caller, dispatch
from lazymcp.tools.tokens import Size

DESCRIBED = 20
"""Tools a session describes (of the 954)."""


def sizes(tools: list[dict[str, Any]]) -> dict[str, Any]:
    catalog = Catalog.build(copy.deepcopy(tools))
    aware = Caller(declared=True)
    answers = {
        "manifest": dispatch("tools/manifest", catalog, None, aware),
        "bare": dispatch("tools/list", catalog, None, aware),
        "full": dispatch("tools/list", catalog, {"lazy": False}, aware),
    }
    wire = {key: len(orjson.dumps(answer.result)) for key, answer in answers.items()}  # pyright: ignore[reportAttributeAccessIssue]
    fresh = Catalog.build(copy.deepcopy(tools))
    start = time.perf_counter_ns()
    fresh.manifest()  # every tool's canonical encoding and digest, once per catalog version
    digest_ms = (time.perf_counter_ns() - start) / 1e6
    bare_tokens = Size.of(catalog.listing("bare", "summary")).tokens
    full_tokens = Size.of(catalog.listing("full", "description")).tokens
    return {
        "tools": len(tools),
        "bytes": wire,
        "manifest_over_bare": ratio(wire["manifest"], wire["bare"]),
        "manifest_over_full": ratio(wire["manifest"], wire["full"]),
        "bare_tokens_of_full": bare_tokens / full_tokens,
        "digest_ms": digest_ms,
    }


async def two_sessions(tools: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    from mcp.client._memory import InMemoryTransport

    from lazymcp.client import LazyClient
    from lazymcp.run.serve import build_server
    from lazymcp.tools.toolcache import ToolCache

    lazy = build_server(copy.deepcopy(tools))
    seen: list[str] = []

    async def count(ctx: Any, call_next: Any) -> Any:
        seen.append(ctx.method)
        return await call_next(ctx)

    lazy.server.middleware.insert(0, count)
    sessions: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(2):
            seen.clear()
            cache = ToolCache(Path(directory) / "tools")
            start = time.perf_counter_ns()
            async with LazyClient(InMemoryTransport(lazy.server), cache=cache) as client:
                for name in names:
                    await client.describe(name)
                from_cache = client.described_from_cache
            sessions.append(
                {
                    "describe_requests": sum(method.startswith("tools/describe") for method in seen),
                    "manifest_requests": seen.count("tools/manifest"),
                    "from_cache": from_cache,
                    "ms": (time.perf_counter_ns() - start) / 1e6,
                }
            )
    return {"described": len(names), "sessions": sessions}


def flat(sizes_: tuple[int, int], cfg: Config) -> dict[str, Any]:
    small = sizes_[0]
    catalogs = {size: Catalog.build(synthetic_source(size).load()) for size in sizes_}
    asked = list(catalogs[small].index)
    caller = Caller(declared=True)

    def op(size: int) -> Callable[[int], Any]:
        catalog = catalogs[size]
        return lambda i: dispatch("tools/describe", catalog, {"names": [asked[i % len(asked)]]}, caller)

    ops = {f"describe-names@{size}": op(size) for size in sizes_}
    inner = dict.fromkeys(ops, max(calibrate(fn) for fn in ops.values()))
    stats = {key: Summary.of(values) for key, values in interleave(ops, cfg.handler, inner).items()}
    large = sizes_[1]
    return {
        "sizes": list(sizes_),
        "rounds": stats[f"describe-names@{small}"].n,
        "ops": {key: s.to_json() for key, s in stats.items()},
        "ratio": ratio(stats[f"describe-names@{large}"].median_us, stats[f"describe-names@{small}"].median_us),
    }


def run(cfg: Config, results: dict[str, Any]) -> dict[str, Any]:
    source = real_catalog(COMBINED)
    if source is None:
        return {"status": "skipped", "reason": f"{COMBINED}.json is not in ../shared/catalogs"}
    tools = source.load()
    names = seeded_sample([tool["name"] for tool in tools], DESCRIBED)
    return {
        "status": "ok",
        "catalog": COMBINED,
        "sizes": sizes(tools),
        "cache": anyio.run(two_sessions, tools, names),
        "flatness": flat(cfg.flat_sizes, cfg),
    }


def render(section: dict[str, Any]) -> str:
    if section.get("status") != "ok":
        return f"manifest: {section.get('status')} ({section.get('reason', '')})"
    s = section["sizes"]
    table = Table("manifests and the schema cache", ["measure", "value"])
    table.add(f"tools/manifest bytes ({s['tools']} tools)", f"{s['bytes']['manifest']:,}")
    table.add("bare tools/list bytes", f"{s['bytes']['bare']:,}")
    table.add("full tools/list bytes", f"{s['bytes']['full']:,}")
    table.add("manifest / bare tools/list (bytes)", f"{s['manifest_over_bare']:.2f}x")
    table.add("bare stubs / full listing (JSON tokens)", pct(s["bare_tokens_of_full"]))
    table.add("every digest of a catalog version", f"{s['digest_ms']:.1f} ms")
    for number, session in enumerate(section["cache"]["sessions"], 1):
        table.add(
            f"session {number}: {section['cache']['described']} describes",
            f"{session['describe_requests']} describe requests, {session['from_cache']} from the cache, "
            f"{session['ms']:.0f} ms",
        )
    f = section["flatness"]
    small, large = f["sizes"]
    table.add(f"describe {{names}} {large:,} vs {small:,} tools (median)", f"{f['ratio']:.2f}x")
    return table.render()
