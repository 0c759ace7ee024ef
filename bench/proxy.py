"""The proxy's price: ``tools/call`` and ``tools/list`` through ``lazymcp proxy`` versus direct.

Three stdio connections to the same upstream (server-everything from the npm registry, installed into
``.cache/npm-servers`` on first use) are measured interleaved, round by round, so machine noise hits
all three alike: direct, through a plain byte relay (the floor: what any stdio relay costs here),
and through ``lazymcp proxy``. Reported: median and p95 of each, the ratios to direct, and the
microseconds the proxy adds over the relay. Also the ``tools/list`` the proxy serves (lazy stubs and
``lazy=false``) against the upstream's own.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench.common import ROOT, Config
from lazymcp.client import raw_request
from tests.five_servers import EVERYTHING_PACKAGE

CACHE = ROOT / ".cache" / "npm-servers"
RELAY = Path(__file__).with_name("relay.py")


def everything_command() -> list[str] | None:
    entry = CACHE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return None
    if not entry.exists():
        install = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(CACHE)]
        if subprocess.run([*install, EVERYTHING_PACKAGE], capture_output=True, timeout=300).returncode != 0:
            return None
    return [node, str(entry), "stdio"]


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": round(statistics.median(ordered) * 1e6, 1),
        "p95_us": round(ordered[int(0.95 * (len(ordered) - 1))] * 1e6, 1),
    }


async def _measure(command: list[str], rounds: int) -> dict[str, Any]:
    python = sys.executable
    targets = {
        "direct": StdioServerParameters(command=command[0], args=command[1:]),
        "byte relay": StdioServerParameters(command=python, args=[str(RELAY), *command]),
        "lazymcp proxy": StdioServerParameters(command=python, args=["-m", "lazymcp", "proxy", "--", *command]),
    }
    calls: dict[str, list[float]] = {name: [] for name in targets}
    lists: dict[str, list[float]] = {name: [] for name in (*targets, "lazymcp proxy lazy=false")}
    async with (
        Client(targets["direct"], mode="legacy") as direct,
        Client(targets["byte relay"], mode="legacy") as relay,
        Client(targets["lazymcp proxy"], mode="legacy") as proxy,
    ):
        clients = {"direct": direct, "byte relay": relay, "lazymcp proxy": proxy}
        for client in clients.values():
            await client.list_tools()
            for _ in range(20):  # warm-up
                await client.call_tool("echo", {"message": "x"})
        for _ in range(rounds):
            for name, client in clients.items():
                started = time.perf_counter()
                await client.call_tool("echo", {"message": "x"})
                calls[name].append(time.perf_counter() - started)
        for _ in range(max(rounds // 10, 5)):
            for name, client in clients.items():
                started = time.perf_counter()
                await raw_request(client.session, "tools/list")
                lists[name].append(time.perf_counter() - started)
            started = time.perf_counter()
            await raw_request(proxy.session, "tools/list", {"lazy": False})
            lists["lazymcp proxy lazy=false"].append(time.perf_counter() - started)
    call = {name: _stats(samples) for name, samples in calls.items()}
    base = call["direct"]["median_us"]
    for figures in call.values():
        figures["ratio"] = round(figures["median_us"] / base, 3)
    listing = {name: _stats(samples) for name, samples in lists.items()}
    for figures in listing.values():
        figures["ratio"] = round(figures["median_us"] / listing["direct"]["median_us"], 3)
    added = round(call["lazymcp proxy"]["median_us"] - call["byte relay"]["median_us"], 1)
    return {"tools/call echo": call, "tools/list": listing, "proxy_over_relay_us": added, "rounds": rounds}


def run(cfg: Config, results: dict[str, Any]) -> dict[str, Any]:
    command = everything_command()
    if command is None:
        return {"status": "skipped", "reason": "node/npm or the npm registry is not available"}
    rounds = 100 if cfg.quick else 1000
    return {"status": "ok", **anyio.run(_measure, command, rounds)}


def render(section: dict[str, Any]) -> str:
    lines = [f"proxy (server-everything over stdio, {section['rounds']} interleaved rounds)"]
    for operation in ("tools/call echo", "tools/list"):
        lines.append(f"  {operation:<30}{'median µs':>12}{'p95 µs':>10}{'vs direct':>11}")
        for name, figures in section[operation].items():
            lines.append(
                f"    {name:<28}{figures['median_us']:>12,.1f}{figures['p95_us']:>10,.1f}{figures['ratio']:>10.2f}x"
            )
    lines.append(f"  the proxy adds {section['proxy_over_relay_us']} µs per tools/call over a plain byte relay")
    return "\n".join(lines)
