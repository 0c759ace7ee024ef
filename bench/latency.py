"""Section 2, latency: lazy against the plain SDK server, measured side by side in one run.

End to end, a real ``mcp.Client`` (2025-11-25 handshake era, where ``ping`` exists) holds three
connections at once: to the plain server, and to the lazy server as a declaring client and as a
stock one. Each request goes out through ``lazymcp.client.raw_request`` (no client-side result
validation, the same code for both servers), over ``InMemoryTransport`` (JSON-RPC message objects
through memory streams, in this process) or stdio (one subprocess per connection, JSON text over
pipes). Every round times every operation once, forward on even rounds and backward on odd ones.

Server-side handler time is the same comparison with no transport: the pure ``lazymcp.surfaces.methods``
functions over a built ``Catalog`` against what the SDK does for the plain listing
(``ListToolsResult(...)``, ``model_dump`` and ``mcp_types.methods.serialize_server_result``).
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client import advertise
from mcp.client._memory import InMemoryTransport
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import methods as wire

from bench.common import (
    ROOT,
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
    seeded_sample,
    servable,
    synthetic,
    times,
    us,
)
from bench.servers import lazy_server, plain_server
from lazymcp.client import raw_request
from lazymcp.protocol.errors import UnknownTool
from lazymcp.protocol.messages import EXT_ID, Tool
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import Caller, dispatch

ERA = "legacy"
PROTOCOL_VERSION = "2025-11-25"
"""The era measured: 2026-07-28 has no ``ping``, the floor the describe target is stated against."""


@dataclass(frozen=True)
class Names:
    """Which tools the describe operations ask for: seeded, the same in every run."""

    rotation: list[str]
    batches: dict[int, list[str]]
    typo: str

    @classmethod
    def of(cls, tools: Sequence[Tool], seed: int) -> Names:
        names = [tool["name"] for tool in tools]
        rotation = seeded_sample(names, len(names), seed)
        first = rotation[0]
        typo = first[:-1] + ("x" if first[-1] != "x" else "y")  # a misspelt name: not found, with suggestions
        return cls(rotation, {k: seeded_sample(names, k, seed + k) for k in (1, 10, 100)}, typo)

    def pick(self, round_index: int) -> str:
        return self.rotation[round_index % len(self.rotation)]


Params = Callable[[Names, int], dict[str, Any] | None]


@dataclass(frozen=True)
class Op:
    """One measured request. ``conn``: which connection sends it; ``baseline``: the op it is divided by."""

    key: str
    conn: str  # "plain" | "lazy" (declaring client) | "stock" (stock client, lazy server)
    method: str
    params: Params
    baseline: str | None
    what: str
    error: bool = False


def _none(names: Names, i: int) -> None:
    return None


def _empty(names: Names, i: int) -> dict[str, Any]:
    return {}


def _batch(k: int) -> Params:
    return lambda names, i: {"names": names.batches[k]}


OPS: tuple[Op, ...] = (
    Op("plain ping", "plain", "ping", _none, None, "ping, plain server"),
    Op("plain tools/list", "plain", "tools/list", _empty, None, "full listing, plain SDK server (the baseline)"),
    Op("ping", "lazy", "ping", _none, "plain ping", "ping, lazy server (the floor)"),
    Op("tools/list", "lazy", "tools/list", _empty, "plain tools/list", "lazy listing, declaring client: bare stubs"),
    Op("tools/list stock", "stock", "tools/list", _empty, "plain tools/list", "lazy listing, stock client"),
    Op(
        "tools/list lazy=false",
        "lazy",
        "tools/list",
        lambda names, i: {"lazy": False},
        "plain tools/list",
        "full listing from the lazy server",
    ),
    Op("tools/describe", "lazy", "tools/describe", lambda names, i: {"name": names.pick(i)}, "ping", "one tool"),
    Op(
        "tools/describe unknown",
        "lazy",
        "tools/describe",
        lambda names, i: {"name": names.typo},
        "ping",
        "a misspelt name: -32602 with suggestions",
        error=True,
    ),
    Op("describe_batch 1", "lazy", "tools/describe_batch", _batch(1), "ping", "tools/describe_batch of 1 name"),
    Op("describe_batch 10", "lazy", "tools/describe_batch", _batch(10), "ping", "of 10 names"),
    Op(
        "describe_batch 100", "lazy", "tools/describe_batch", _batch(100), "ping", "of 100 names (fewer if fewer tools)"
    ),
)


# --- end to end --------------------------------------------------------------------------------


CONNS = ("plain", "lazy", "stock")


@asynccontextmanager
async def sessions(
    source: Source, tools: Sequence[Tool], transport: str, conns: Sequence[str] = CONNS
) -> AsyncGenerator[dict[str, ClientSession]]:
    """Open the ``conns`` connections (plain, lazy, stock) for ``tools`` over ``transport``."""
    targets: dict[str, Any] = {}
    if transport == "memory":
        lazy = lazy_server(tools) if {"lazy", "stock"} & set(conns) else None
        for conn in conns:
            targets[conn] = InMemoryTransport(plain_server(tools) if conn == "plain" else lazy)  # pyright: ignore[reportArgumentType]
    else:
        for conn in conns:
            args = ["-m", "bench.servers", "plain" if conn == "plain" else "lazy", *source.server_args()]
            targets[conn] = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    async with AsyncExitStack() as stack:
        out: dict[str, ClientSession] = {}
        for conn, target in targets.items():
            extensions = [] if conn == "stock" else [advertise(EXT_ID)]
            client = await stack.enter_async_context(Client(target, mode=ERA, extensions=extensions))
            out[conn] = client.session
        yield out


def _request(session: ClientSession, op: Op, names: Names) -> Callable[[int], Any]:
    async def send(i: int) -> None:
        try:
            await raw_request(session, op.method, op.params(names, i))
        except MCPError:
            if not op.error:
                raise

    return send


def _settle(sessions: Sequence[ClientSession]) -> Callable[[], Any]:
    """Untimed, after every heavy op: a young-generation GC, then a ping on every connection.

    Without it the op after a heavy one (a large listing, a describe of an unknown name) pays for
    that op's aftermath: the server freeing or still writing its answer, the garbage collector,
    cold caches on the next connection's path.
    """

    async def settle() -> None:
        gc.collect(1)
        for session in sessions:
            await raw_request(session, "ping")

    return settle


def summarize(samples: dict[str, list[float]], ops: Sequence[Op]) -> tuple[dict[str, Any], dict[str, Any]]:
    stats = {key: Summary.of(values) for key, values in samples.items()}
    ratios: dict[str, Any] = {}
    for op in ops:
        if op.baseline is not None and op.key in stats and op.baseline in stats:
            mine, base = stats[op.key], stats[op.baseline]
            ratios[op.key] = {
                "vs": op.baseline,
                "median": ratio(mine.median_us, base.median_us),
                "p95": ratio(mine.p95_us, base.p95_us),
            }
    return {key: s.to_json() for key, s in stats.items()}, ratios


def _group(op: Op) -> str:
    """``heavy``: the listings and the unknown-name describe (a search of every name); ``light``: the rest."""
    return "heavy" if op.method == "tools/list" or op.error else "light"


async def measure_e2e(source: Source, transport: str, light: Rounds, heavy: Rounds, seed: int) -> dict[str, Any]:
    """Time every op over ``transport``, in two groups of interleaved rounds.

    ``light`` ops (pings, describes) run back to back, many rounds; ``heavy`` ops (listings, the
    unknown-name describe) get fewer rounds, each followed by an untimed ``_settle`` so the next op
    does not pay for its aftermath. A comparison within a group (lazy listing vs plain listing,
    describe vs ping) shares every round. Settling is kept out of the light group because a settle
    ping warms the very path of the ``ping`` op, which would flatter the floor.
    """
    started = time.perf_counter()
    tools, patched = servable(source.load())
    names = Names.of(tools, seed)
    samples: dict[str, list[float]] = {}
    rounds: dict[str, int] = {}
    async with sessions(source, tools, transport) as conns:
        for group, plan, settle in (("light", light, None), ("heavy", heavy, _settle(list(conns.values())))):
            ops = {op.key: _request(conns[op.conn], op, names) for op in OPS if _group(op) == group}
            got = await interleave_async(ops, plan, settle)
            samples |= got
            rounds[group] = len(next(iter(got.values())))
    stats, ratios = summarize({op.key: samples[op.key] for op in OPS}, OPS)
    return {
        "transport": transport,
        **source.describe(),
        "patched_tools": patched,
        "rounds": rounds,
        "ops": stats,
        "ratios": ratios,
        "seconds": round(time.perf_counter() - started, 2),
    }


# --- server side, no transport -----------------------------------------------------------------


def handler_ops(tools: Sequence[Tool], names: Names) -> dict[str, Callable[[int], Any]]:
    """The pure server-side work behind each ``OPS`` entry that has one."""
    catalog = Catalog.build(tools)
    models = [types.Tool.model_validate(tool) for tool in tools]

    def plain_list(i: int) -> Any:
        result = types.ListToolsResult(tools=models)  # what the plain handler returns, then the SDK's wire pass
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return wire.serialize_server_result("tools/list", PROTOCOL_VERSION, dumped)

    aware = Caller(declared=True)

    def listing(params: dict[str, Any], declared: bool) -> Callable[[int], Any]:
        caller = Caller(declared=declared)

        def run(i: int) -> Any:
            return dispatch("tools/list", catalog, params, caller)

        return run

    def unknown(i: int) -> Any:
        try:
            dispatch("tools/describe", catalog, {"name": names.typo}, aware)
        except UnknownTool as exc:
            return exc

    ops: dict[str, Callable[[int], Any]] = {
        "plain tools/list": plain_list,
        "tools/list": listing({}, True),
        "tools/list stock": listing({}, False),
        "tools/list lazy=false": listing({"lazy": False}, True),
        "tools/describe": lambda i: dispatch("tools/describe", catalog, {"name": names.pick(i)}, aware),
        "tools/describe unknown": unknown,
    }
    for k in (1, 10, 100):
        batch = {"names": names.batches[k]}
        ops[f"describe_batch {k}"] = lambda i, batch=batch: dispatch("tools/describe_batch", catalog, batch, aware)
    for op in ops.values():  # build every listing before timing: the first request's cost is in section 3
        op(0)
    return ops


HANDLER_BASELINE = {
    "tools/list": "plain tools/list",
    "tools/list stock": "plain tools/list",
    "tools/list lazy=false": "plain tools/list",
}


def measure_handlers(source: Source, rounds: Rounds, seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    tools, patched = servable(source.load())
    names = Names.of(tools, seed)
    ops = handler_ops(tools, names)
    inner = {key: calibrate(op) for key, op in ops.items() if key != "plain tools/list"}
    samples = interleave(ops, rounds, inner)
    stats = {key: Summary.of(values) for key, values in samples.items()}
    ratios = {
        key: {
            "vs": base,
            "median": ratio(stats[key].median_us, stats[base].median_us),
            "p95": ratio(stats[key].p95_us, stats[base].p95_us),
        }
        for key, base in HANDLER_BASELINE.items()
    }
    return {
        **source.describe(),
        "patched_tools": patched,
        "rounds": len(samples["plain tools/list"]),
        "calls_per_sample": inner,
        "ops": {key: s.to_json() for key, s in stats.items()},
        "ratios": ratios,
        "seconds": round(time.perf_counter() - started, 2),
    }


# --- the section -------------------------------------------------------------------------------


def _sources(sizes: Sequence[int], real: Sequence[str], seed: int) -> list[Source]:
    sources = [synthetic(size, seed) for size in sizes]
    sources += [found for name in real if (found := real_catalog(name)) is not None]
    return sources


async def run_async(cfg: Config) -> dict[str, Any]:
    runs = [
        await measure_e2e(source, "memory", cfg.e2e, cfg.e2e_heavy, cfg.seed)
        for source in _sources(cfg.sizes, cfg.latency_real, cfg.seed)
    ]
    runs += [
        await measure_e2e(source, "stdio", cfg.stdio, cfg.stdio_heavy, cfg.seed)
        for source in _sources(cfg.stdio_sizes, cfg.stdio_real, cfg.seed)
    ]
    handler = [
        measure_handlers(source, cfg.handler, cfg.seed) for source in _sources(cfg.sizes, cfg.latency_real, cfg.seed)
    ]
    return {
        "status": "ok",
        "era": PROTOCOL_VERSION,
        "timer": "time.perf_counter_ns around each awaited request (end to end) or each handler call; "
        "warm-up rounds untimed; ops interleaved, order alternating per round; GC left on",
        "ops": {op.key: op.what for op in OPS},
        "runs": runs,
        "handler": handler,
    }


def run(cfg: Config, results: dict[str, Any]) -> dict[str, Any]:
    import anyio

    return anyio.run(run_async, cfg)


def render(section: dict[str, Any]) -> str:
    parts: list[str] = []
    for run_ in section["runs"]:
        table = Table(
            f"{run_['transport']} · {run_['catalog']} ({run_['tools']:,} tools)"
            f" · rounds: {run_['rounds']['light']} (light ops), {run_['rounds']['heavy']} (heavy ops)",
            ["op", "median", "p95", "ratio (median)", "ratio (p95)", "vs"],
        )
        for op in OPS:
            stats = run_["ops"][op.key]
            r = run_["ratios"].get(op.key, {})
            table.add(
                op.key,
                us(stats["median_us"]),
                us(stats["p95_us"]),
                times(r.get("median")),
                times(r.get("p95")),
                r.get("vs"),
            )
        parts.append(table.render())
    for entry in section["handler"]:
        table = Table(
            f"server-side handler, no transport · {entry['catalog']} ({entry['tools']:,} tools)"
            f" · {entry['rounds']} rounds",
            ["op", "median", "p95", "ratio (median)", "vs"],
        )
        for key, stats in entry["ops"].items():
            r = entry["ratios"].get(key, {})
            table.add(key, us(stats["median_us"]), us(stats["p95_us"]), times(r.get("median")), r.get("vs"))
        parts.append(table.render())
    return "\n\n".join(parts)
