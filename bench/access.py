"""What the access policy, the rate limits and the audit report cost per call (``python -m bench.access``).

The gateway's sans-IO core over 10 servers of 100 tools each (``synthetic_tools``), each server's
handshake fed in so calls go out: one round is a ``tools/call`` from the client and its server's answer.
Three cores side by side, round by round:

- ``plain``: no policy, no limit, not watched (what a gateway with none of them configured runs);
- ``guarded``: a policy grant (allow every server but one, deny a pattern) and both rate limits (set far
  above the rounds, so every call is counted and none refused);
- ``guarded, shared``: the same, counted by ``--redis``'s ``SharedCounter`` (its syncs with Redis run
  apart, off the call path);
- ``guarded, watched``: the same as ``guarded``, reporting each call (``Called``) and making its audit line.

Also the price of a session's start: building a granted session's catalog (once per grant, then shared)
against taking the ungranted one from its seed; and the time to make a ``/metrics`` page after calls to
1,000 tools.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from lazymcp.access.policy import Principal, parse_policy
from lazymcp.access.ratelimit import Limiter, MemoryCounter, Rate
from lazymcp.core.actions import Called, ToServer
from lazymcp.gateway.config import parse_config
from lazymcp.gateway.front import Gateway
from lazymcp.protocol.jsonrpc import request_line
from lazymcp.run.cluster_rates import SharedCounter
from lazymcp.run.observe import audit_line
from lazymcp.tools.manifest import Manifest
from lazymcp.tools.sample import synthetic_tools

SERVERS = [f"s{n}" for n in range(10)]
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench"}}
FIRST = 10
POLICY = {"bench": {"allow": [f"{server}__*" for server in SERVERS[:-1]], "deny": ["*__delete*"]}}


def manifests() -> dict[str, Manifest]:
    tools = synthetic_tools(1000)
    return {server: Manifest(tuple(tools[n * 100 : n * 100 + 100]), 1.0, "1") for n, server in enumerate(SERVERS)}


def core(**more: Any) -> Gateway:
    """A gateway core whose server s0 is ready to take calls."""
    config = parse_config({"mcpServers": {server: {"command": "x"} for server in SERVERS}})
    gateway = Gateway(config.servers, manifests=manifests(), mode="proxy", wait_for_client=False, **more)
    gateway.from_client(request_line(0, "initialize", HELLO), 0.0)
    tool = "s0__" + first_tool(gateway)
    gateway.from_client(request_line(1, "tools/call", {"name": tool, "arguments": arguments_for(gateway, tool)}), 0.0)
    for action in gateway.started("s0", 0.0):
        message = orjson.loads(action.data) if isinstance(action, ToServer) else {}
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s0"}}
            gateway.from_server("s0", orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), 0.0)
    return gateway


def first_tool(gateway: Gateway) -> str:
    return next(name for name in gateway.names.owners if name.startswith("s0__")).removeprefix("s0__")


def arguments_for(gateway: Gateway, tool: str) -> dict[str, Any]:
    """Arguments the tool's input schema takes: a value of its type for each required property."""
    found = gateway.catalog.get(tool)
    assert found is not None, tool
    schema = found["inputSchema"]
    values = {"string": "x1", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
    properties = schema.get("properties", {})
    return {name: values.get(properties[name].get("type"), "x1") for name in schema.get("required", [])}


def round_trip(gateway: Gateway, tool: str, watched: bool) -> Callable[[int], int]:
    """One call and its answer, timed in nanoseconds."""
    answer = {"content": [{"type": "text", "text": "ok"}]}
    arguments = arguments_for(gateway, tool)

    def run(request_id: int) -> int:
        call = request_line(request_id, "tools/call", {"name": tool, "arguments": arguments})
        reply = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": answer})
        start = time.perf_counter_ns()
        sent = gateway.from_client(call, 1.0)
        actions = gateway.from_server("s0", reply, 1.0)
        if watched:
            for action in actions:
                if isinstance(action, Called):
                    audit_line(action)
        spent = time.perf_counter_ns() - start
        if request_id == FIRST:  # each case's call goes to its server, and is reported when watched
            assert [type(action) for action in sent] == [ToServer], sent
            assert any(isinstance(action, Called) for action in actions) == watched, actions
        return spent

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20_000)
    rounds = parser.parse_args().rounds
    policy = parse_policy(POLICY, "bench")
    assert policy is not None
    grant = policy.grant(Principal(name="bench"))
    plenty = Rate(10**9, 1.0)
    limits = {"principal": Principal(name="bench")}
    plain = core()
    tool = "s0__" + first_tool(plain)
    cases = {
        "plain": round_trip(plain, tool, False),
        "guarded": round_trip(
            core(grant=grant, limiter=Limiter(MemoryCounter(), plenty, (("s0", plenty),)), **limits), tool, False
        ),
        "guarded, shared": round_trip(  # --redis: the counter the instances reconcile (its sync is off the call)
            core(grant=grant, limiter=Limiter(SharedCounter(), plenty, (("s0", plenty),)), **limits), tool, False
        ),
        "guarded, watched": round_trip(
            core(grant=grant, limiter=Limiter(MemoryCounter(), plenty, (("s0", plenty),)), observe=True, **limits),
            tool,
            True,
        ),
    }
    times: dict[str, list[int]] = {name: [] for name in cases}
    for request_id in range(FIRST, FIRST + rounds):
        for name, run in cases.items():
            times[name].append(run(request_id))
    base = statistics.median(times["plain"])
    print(f"tools/call through the gateway core, call and answer, {rounds} interleaved rounds (median, p95)")
    for name, spent in times.items():
        median, p95 = statistics.median(spent), statistics.quantiles(spent, n=20)[-1]
        print(f"  {name:18} {median / 1000:7.2f} µs  {p95 / 1000:7.2f} µs  +{(median - base) / 1000:5.2f} µs")
    seed = plain.seed
    opened: dict[str, list[float]] = {"ungranted, from the seed": [], "granted, built": []}
    config = parse_config({"mcpServers": {server: {"command": "x"} for server in SERVERS}})
    found = manifests()
    for _ in range(5):
        start = time.perf_counter()
        Gateway(config.servers, manifests=found, mode="proxy", seed=seed)
        opened["ungranted, from the seed"].append(time.perf_counter() - start)
        start = time.perf_counter()
        Gateway(config.servers, manifests=found, mode="proxy", seed=seed, grant=grant)
        opened["granted, built"].append(time.perf_counter() - start)
    print("a session's core over 1,000 tools (median of 5; a grant's catalog is built once, then shared)")
    for name, spent in opened.items():
        print(f"  {name:26} {statistics.median(spent) * 1000:7.1f} ms")
    scrape()


def scrape() -> None:
    """A ``/metrics`` page after calls to each of 1,000 tools (10 servers) with two outcomes each."""
    from lazymcp.run.metrics import Metrics

    metrics = Metrics()
    for n, tool in enumerate(synthetic_tools(1000)):
        for outcome in ("ok", "tool_error"):
            metrics.called(Called("token:bench", SERVERS[n % 10], str(tool["name"]), outcome, 0.01))
    spent: list[float] = []
    for _ in range(20):
        start = time.perf_counter()
        page = metrics.text()
        spent.append(time.perf_counter() - start)
    size = len(page)
    print(f"/metrics after calls to 1,000 tools: {statistics.median(spent) * 1000:.1f} ms a page of {size:,} bytes")


if __name__ == "__main__":
    main()
