"""The gateway's price, side by side in one run (``python -m bench.gateway [--quick]``).

- ``tools/call`` of server-everything's ``echo`` with a raw JSON-RPC client over stdio: direct, through a
  plain byte relay, through ``lazymcp proxy`` and through ``lazymcp gateway`` with five servers
  (server-everything five times, under five names), interleaved round by round.
- Cold start: the gateway over 30 cached manifests (the 954 tools of ``combined.json``), from spawn to
  its first ``tools/list`` answered, with no server started (their commands would fail if run).
- Memory: the resident size of that gateway after the listing, above a gateway with no servers, against
  the size of the catalog's JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import CATALOGS, Config
from bench.proxy import RELAY, everything_command
from lazymcp.core.entries import ServerEntry
from lazymcp.run.manifests import ManifestStore
from lazymcp.search.index import describe_ranker

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}


class Raw:
    """A raw JSON-RPC client over a child's stdio: one line out, lines in until the answer (or ``within``
    seconds). A request from the server gets -32601, as from a client that declares no capabilities."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0
        )
        assert self.process.stdout is not None
        self.fd = self.process.stdout.fileno()
        self.buffer = b""
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    def _line(self, method: str, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{method}: no answer in time")
            if select.select([self.fd], [], [], left)[0]:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"{method}: the server closed its stdout")
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def request(self, method: str, params: dict[str, Any], within: float = 120.0) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + within
        while True:
            message = json.loads(self._line(method, deadline))
            if "method" in message:
                if "id" in message:
                    refusal = {"code": -32601, "message": "Method not found"}
                    self.send({"jsonrpc": "2.0", "id": message["id"], "error": refusal})
                continue
            if message.get("id") == self.next_id:
                return message

    def handshake(self, within: float = 120.0) -> dict[str, Any]:
        answer = self.request("initialize", INIT, within)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def _gateway(config: dict[str, Any], cache: Path) -> list[str]:
    path = cache / f"config-{len(config['mcpServers'])}.json"
    path.write_text(json.dumps(config))
    return [sys.executable, "-m", "lazymcp", "gateway", "--config", str(path), "--mode", "describe"]


def _median_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


def calls(command: list[str], rounds: int, cache: Path, env: dict[str, str]) -> dict[str, Any]:
    servers = {f"everything{n}": {"command": command[0], "args": command[1:]} for n in range(5)}
    python = sys.executable
    targets = {
        "direct": (command, "echo"),
        "byte relay": ([python, str(RELAY), *command], "echo"),
        "lazymcp proxy": ([python, "-m", "lazymcp", "proxy", "--", *command], "echo"),
        "lazymcp gateway, 5 servers": (_gateway({"mcpServers": servers}, cache), "everything2__echo"),
    }
    clients = {name: Raw(target, env) for name, (target, _) in targets.items()}
    samples: dict[str, list[float]] = {name: [] for name in targets}
    try:
        for client in clients.values():
            client.handshake()
        for name, client in clients.items():
            for _ in range(20):
                client.request("tools/call", {"name": targets[name][1], "arguments": {"message": "x"}})
        for _ in range(rounds):
            for name, client in clients.items():
                started = time.perf_counter()
                client.request("tools/call", {"name": targets[name][1], "arguments": {"message": "x"}})
                samples[name].append(time.perf_counter() - started)
    finally:
        for client in clients.values():
            client.close()
    medians = {name: _median_us(values) for name, values in samples.items()}
    return {
        "median_us": medians,
        "gateway_over_relay_us": round(medians["lazymcp gateway, 5 servers"] - medians["byte relay"], 1),
        "proxy_over_relay_us": round(medians["lazymcp proxy"] - medians["byte relay"], 1),
        "rounds": rounds,
    }


def cold_start(cache: Path, env: dict[str, str], repeats: int) -> dict[str, Any]:
    combined = json.loads((CATALOGS / "combined.json").read_text())
    by_server: dict[str, list[Any]] = {}
    for tool in combined["tools"]:
        server, _, name = tool["name"].partition("__")
        by_server.setdefault(server, []).append({**tool, "name": name})
    store = ManifestStore(cache / "manifests")
    servers: dict[str, Any] = {}
    for server, tools in by_server.items():
        servers[server] = {"command": "/nonexistent/never-started", "args": [server]}
        entry = ServerEntry(server, command=("/nonexistent/never-started", server))
        store.save(entry.identity(), tools, "captured")
    command = _gateway({"mcpServers": servers}, cache)
    empty = _gateway({"mcpServers": {}}, cache)
    env = {**env, "LAZYMCP_CACHE_DIR": str(cache / "manifests")}
    times: list[float] = []
    rss: list[int] = []
    listed = 0
    for _ in range(repeats):
        started = time.perf_counter()
        client = Raw(command, env)
        client.handshake()
        listing = client.request("tools/list", {"lazy": False})
        times.append(time.perf_counter() - started)
        listed = len(listing["result"]["tools"])
        client.request("tools/list", {})
        rss.append(client.rss_kib())
        client.close()
    bare = Raw(empty, env)
    bare.handshake()
    bare.request("tools/list", {})
    empty_rss = bare.rss_kib()
    bare.close()
    catalog_kib = len(json.dumps(combined["tools"], separators=(",", ":")).encode()) / 1024
    above = statistics.median(rss) - empty_rss
    return {
        "servers": len(servers),
        "tools_listed": listed,
        "first_list_ms": round(statistics.median(times) * 1000, 1),
        "rss_above_empty_kib": round(above),
        "catalog_json_kib": round(catalog_kib),
        "rss_over_catalog": round(above / catalog_kib, 2),
        "ranker": describe_ranker(),  # built on the first search only, which this run makes none of
    }


def run(cfg: Config, results: dict[str, Any]) -> dict[str, Any]:
    command = everything_command()
    if command is None or not (CATALOGS / "combined.json").exists():
        return {"status": "skipped", "reason": "node/npm, the npm registry or ../shared/catalogs is not available"}
    with tempfile.TemporaryDirectory() as directory:
        cache = Path(directory)
        env = {**os.environ, "LAZYMCP_CACHE_DIR": str(cache / "calls")}
        section = {"status": "ok", "calls": calls(command, 100 if cfg.quick else 1000, cache, env)}
        section["cold_start"] = cold_start(cache, env, 3 if cfg.quick else 7)
    return section


def render(section: dict[str, Any]) -> str:
    calls, cold = section["calls"], section["cold_start"]
    lines = [f"gateway (raw JSON-RPC client, tools/call echo, {calls['rounds']} interleaved rounds)"]
    lines += [f"    {name:<30}{median:>10,.1f} µs" for name, median in calls["median_us"].items()]
    lines.append(f"  the gateway adds {calls['gateway_over_relay_us']} µs over a plain byte relay (target: 50)")
    lines.append(f"  the proxy adds {calls['proxy_over_relay_us']} µs over a plain byte relay")
    lines.append(
        f"  cold start, {cold['servers']} manifests, {cold['tools_listed']} tools: first tools/list in "
        f"{cold['first_list_ms']} ms (target: 500), no server started"
    )
    lines.append(
        f"  memory above an empty gateway: {cold['rss_above_empty_kib']:,} KiB, {cold['rss_over_catalog']}x the "
        f"catalog's {cold['catalog_json_kib']:,} KiB of JSON (target: under 3x); ranker {cold['ranker']}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    section = run(Config.make(args.quick), {})
    print(render(section) if section["status"] == "ok" else section)
