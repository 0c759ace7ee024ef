"""Several gateway instances: ``python -m bench.cluster [--clients 50] [--seconds 10] [--rounds 300]``.

Needs ``redis-server`` and ``haproxy`` (Debian packages of those names). Starts its own Redis, three
``lazymcp gateway --http --redis`` instances over one small raw echo server, and two HAProxy fronts
(round-robin, no stickiness): one over the first instance alone, one over all three. Then:

- **forwarded vs direct**: one 2025-11-25 session on the first instance; ``tools/call`` sent to it
  directly and to the second instance (which forwards it to the owner), interleaved one by one, on kept
  connections; the medians and their difference (the target: at most 1 ms more).
- **one vs three instances**: ``--clients`` concurrent clients, each its own session opened through the
  balancer, calling ``tools/call`` for ``--seconds``: requests per second, p50 and p99, failures, and the
  server processes running on the instances afterwards (the clients are one principal, whose sessions
  share one process of each server per instance: at most one per instance, not one per session).

On one machine three instances share the same cores as one: they cannot be faster, and the forwarding
hop adds work. On N machines each instance has its own cores; a session's requests cost one extra hop
for the (N-1)/N of them that land away from their owner.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2

from bench.load import HOST, free_port

ECHO = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    i, method = m.get("id"), m.get("method")
    if i is None or method is None:
        continue
    if method == "initialize":
        info = {"name": "e", "version": "1"}
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
    elif method == "tools/list":
        r = {"tools": [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        r = {"content": [{"type": "text", "text": json.dumps(m["params"].get("arguments"))}]}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": r}) + "\n")
    sys.stdout.flush()
"""
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def wait_listening(port: int, process: subprocess.Popen[bytes], within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"bench.cluster: {process.args!r} exited with status {process.returncode}")
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"bench.cluster: nothing listens on port {port} after {within:g} s")


def haproxy_config(port: int, backends: list[int]) -> str:
    servers = "".join(f"    server i{n} {HOST}:{b} check inter 1s\n" for n, b in enumerate(backends))
    return (
        "global\n    maxconn 1024\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n"
        "    timeout server 60s\n    retries 3\n    option redispatch\n    retry-on conn-failure\n"
        f"frontend f\n    bind {HOST}:{port}\n    default_backend b\nbackend b\n    balance roundrobin\n"
        f"    option httpchk GET /readyz\n{servers}"
    )


def children(pid: int) -> int:
    count = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        count += len((task / "children").read_text().split())
    return count


async def open_session(client: httpx2.AsyncClient, url: str) -> dict[str, str]:
    answer = await client.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    answer.raise_for_status()
    session = {**JSON, "mcp-session-id": answer.headers["mcp-session-id"]}
    await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    return session


def call(number: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": "e__echo", "arguments": {"n": number}},
    }


async def timed(client: httpx2.AsyncClient, url: str, session: dict[str, str], number: int) -> float | None:
    start = time.perf_counter()
    answer = await client.post(url, json=call(number), headers=session)
    elapsed = time.perf_counter() - start
    ok = (
        answer.status_code == 200
        and "result" in answer.json()
        and f"{number}}}" in answer.json()["result"]["content"][0]["text"]
    )
    return elapsed if ok else None


async def forwarded_vs_direct(ports: list[int], rounds: int) -> dict[str, Any]:
    async with httpx2.AsyncClient(trust_env=False, headers=JSON, timeout=30) as client:
        owner, other = (f"http://{HOST}:{port}/mcp" for port in ports[:2])
        session = await open_session(client, owner)
        for warm in range(20):
            await timed(client, owner, session, warm)
            await timed(client, other, session, warm)
        direct: list[float] = []
        forwarded: list[float] = []
        failed = 0
        for number in range(rounds):
            for url, kept in (
                ((owner, direct), (other, forwarded)) if number % 2 else ((other, forwarded), (owner, direct))
            ):
                elapsed = await timed(client, url, session, 1000 + number)
                if elapsed is None:
                    failed += 1
                else:
                    kept.append(elapsed)
    direct_ms, forwarded_ms = statistics.median(direct) * 1e3, statistics.median(forwarded) * 1e3
    return {
        "direct_ms": direct_ms,
        "forwarded_ms": forwarded_ms,
        "added_ms": forwarded_ms - direct_ms,
        "failed": failed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    redis_server, haproxy = (
        shutil.which("redis-server"),
        shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin"),
    )
    if redis_server is None or haproxy is None:
        print("bench.cluster: needs redis-server and haproxy (Debian packages redis-server, haproxy)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        root = Path(scratch)
        (root / "echo.py").write_text(ECHO)
        config = root / "mcp.json"
        config.write_text(
            json.dumps({"mcpServers": {"e": {"command": sys.executable, "args": [str(root / "echo.py")]}}})
        )

        def start(command: list[str], port: int, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
            process = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL)
            stack.callback(lambda: (process.terminate(), process.wait(10)))
            wait_listening(port, process)
            return process

        redis_port = free_port()
        start(
            [redis_server, "--port", str(redis_port), "--bind", HOST, "--save", "", "--loglevel", "warning"], redis_port
        )
        ports = [free_port() for _ in range(3)]
        instances = []
        for number, port in enumerate(ports):
            command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"{HOST}:{port}"]
            command += ["--redis", f"redis://{HOST}:{redis_port}/0", "--max-sessions", str(args.clients * 3)]
            instances.append(
                start(
                    command, port, {"LAZYMCP_CACHE_DIR": str(root / f"cache{number}"), "LAZYMCP_LOG_LEVEL": "warning"}
                )
            )
        fronts = {}
        for name, backends in (("one", ports[:1]), ("three", ports)):
            port = free_port()
            (root / f"{name}.cfg").write_text(haproxy_config(port, backends))
            start([haproxy, "-q", "-f", str(root / f"{name}.cfg")], port)
            fronts[name] = port
        results: dict[str, Any] = {"clients": args.clients, "seconds": args.seconds}
        results["forwarded_vs_direct"] = asyncio.run(forwarded_vs_direct(ports, args.rounds))
        for name, port in fronts.items():
            results[name] = asyncio.run(load(port, args.clients, args.seconds))
            results[name]["server_processes"] = sum(children(p.pid) for p in instances)
    f = results["forwarded_vs_direct"]
    print(
        f"forwarded vs direct tools/call, median of {args.rounds}: direct {f['direct_ms']:.2f} ms, "
        f"forwarded {f['forwarded_ms']:.2f} ms, added {f['added_ms']:.2f} ms (target <= 1 ms), failed {f['failed']}"
    )
    for name in ("one", "three"):
        r = results[name]
        print(
            f"HAProxy -> {name:5} instance(s), {args.clients} clients: {r['requests_per_s']:.0f} req/s, "
            f"p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, failures {r['failures']}, "
            f"server processes on the instances {r['server_processes']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


async def load(port: int, clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` sessions opened (untimed), then all calling for ``seconds``."""
    url = f"http://{HOST}:{port}/mcp"
    latencies: list[float] = []
    failures = 0
    opened = 0
    all_open = asyncio.Event()
    go = asyncio.Event()
    window: list[float] = []

    async def one(index: int) -> None:
        nonlocal failures, opened
        limits = httpx2.Limits(max_connections=1)
        async with httpx2.AsyncClient(trust_env=False, headers=JSON, timeout=60, limits=limits) as client:
            session = await open_session(client, url)
            await timed(client, url, session, index)  # untimed: the session's server process has started
            opened += 1
            if opened == clients:
                all_open.set()
            await go.wait()
            number = index * 1_000_000
            while time.perf_counter() < window[0]:
                number += 1
                try:
                    elapsed = await timed(client, url, session, number)
                except httpx2.HTTPError:
                    elapsed = None
                if elapsed is None:
                    failures += 1
                else:
                    latencies.append(elapsed)

    tasks = [asyncio.ensure_future(one(index)) for index in range(clients)]
    await asyncio.wait_for(all_open.wait(), 300)
    start = time.perf_counter()
    window.append(start + seconds)
    go.set()
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "requests_per_s": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1e3 if latencies else None,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3 if latencies else None,
        "failures": failures,
    }


if __name__ == "__main__":
    raise SystemExit(main())
