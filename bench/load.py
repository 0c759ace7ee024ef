"""Load: ``python -m bench.load [--clients 50] [--seconds 20] [--json FILE] [--eras ...] [--targets ...]``.

Three servers of the same tools, each a subprocess on 127.0.0.1 over streamable HTTP, under the same load:

- ``plain``: an ``MCPServer`` without lazymcp (``load_server``: an ``echo`` tool and ``--tools - 1`` others
  built from typed Python functions, as servers in the field are);
- ``serve``: ``lazymcp serve --http``, serving a catalog file holding exactly the tools ``plain`` lists;
- ``proxy``: ``lazymcp proxy --http -- <plain over stdio>``. A 2025-11-25 session there gets its own
  upstream process; 2026-07-28 requests share one.

Each of ``--clients`` concurrent clients first opens its session (2025-11-25: ``initialize``; 2026-07-28:
nothing, every request carries its envelope), untimed; then, for ``--seconds``, loops over ``tools/list``,
``tools/call echo`` and ``ping`` (2026-07-28, which has no ``ping``: ``server/discover``), bounded by
``--max-requests`` per client too; each request a raw
JSON-RPC POST, and stops by itself. Every answer is checked: HTTP 200, exactly one JSON-RPC response with
the request's id (none is lost, none duplicated), a result and not an error, and the right result (the
echo carries a token unique to that client and request, so crossed answers show). The server's RSS is
sampled from /proc every half second over the timed phase (for the proxy: the proxy alone, and with its
upstream processes).

Reported per target and era: requests per second, p50 and p99 latency, failures, lost and duplicated
answers, RSS at start and end of the timed phase and its peak, and the load generator's own CPU share
(on a 2-core machine the clients and the server share the CPU: ratios between targets are the figure).
Exit status 1 when any request failed, was lost or was duplicated.

Subprocess entry: ``python -m bench.load --serve-plain (--stdio | --http HOST:PORT) [--tools N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ERAS = (LEGACY, MODERN)
TARGETS = ("plain", "serve", "proxy")
REQUEST_TIMEOUT = 30.0
OPEN_TIMEOUT = 120.0
"""``initialize`` may take long: through the proxy it starts an upstream process, 50 at a time on 2 cores."""
OPENING = 4
"""Sessions opened at once, before the timed phase."""
STARTUP_TIMEOUT = 60.0
SAMPLE_EVERY = 0.5
FLAT_KIB = 8 * 1024
FLAT_FRACTION = 0.05
"""RSS is flat when it grows by at most 5% (or 8 MiB) from the end of the run's first quarter to its end."""
MIXES = {LEGACY: ("tools/list", "tools/call", "ping"), MODERN: ("tools/list", "tools/call", "server/discover")}
"""What each client loops over: a stock client's listing, a call, and the era's cheapest request."""
METHODS = ("tools/list", "tools/call", "ping", "server/discover")
ACCEPT = "application/json, text/event-stream"
PAGE_SIZE = 4096


# --- the plain server ---------------------------------------------------------------------------

TOPICS = ["issue", "project", "comment", "label", "user", "team", "cycle", "document", "attachment", "webhook"]
VERBS = ["create", "get", "list", "update", "delete", "archive", "search", "move", "link", "export"]


def load_server(tools: int) -> Any:
    """An ``MCPServer`` (no lazymcp) with an ``echo`` tool and ``tools - 1`` others of realistic size."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("load-plain", version="1", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back, exactly as it was given. Useful to check a connection end to end."""
        return text

    for number in range(tools - 1):
        verb, topic = VERBS[number % len(VERBS)], TOPICS[(number // len(VERBS)) % len(TOPICS)]
        name = f"{topic}s_{verb}_{number}"

        def tool(
            target_id: str,
            text: str = "",
            limit: int = 50,
            include_archived: bool = False,
            fields: list[str] | None = None,
        ) -> str:
            return target_id

        tool.__doc__ = (
            f"{verb.capitalize()} {topic}s in the workspace. Takes the {topic}'s ID and optional filters; returns "
            f"the matching {topic}s with every field the caller may see. Archived {topic}s are skipped unless "
            f"include_archived is set. At most `limit` results are returned, newest first."
        )
        server.add_tool(tool, name=name)
    return server


async def plain_catalog(tools: int) -> list[dict[str, Any]]:
    """The tools ``load_server(tools)`` lists, as JSON (what it sends on the wire)."""
    from mcp import Client

    async with Client(load_server(tools)) as client:
        result = await client.list_tools()
    return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in result.tools]


def serve_plain(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.load --serve-plain")
    parser.add_argument("--serve-plain", action="store_true")
    parser.add_argument("--tools", type=int, default=50)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", action="store_true")
    where.add_argument("--http", metavar="HOST:PORT")
    args = parser.parse_args(argv)
    server = load_server(args.tools)
    if args.stdio:
        server.run()
    else:
        host, port = args.http.rsplit(":", 1)
        server.run("streamable-http", host=host, port=int(port))


# --- processes and memory -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def rss_kib(pid: int) -> int:
    """Resident set size of one process, from /proc (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    """Every descendant of ``pid``."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            kids = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for kid in map(int, kids):
            found.append(kid)
            found.extend(children(kid))
    return found


@dataclass
class Target:
    name: str
    command: list[str]
    port: int
    process: subprocess.Popen[bytes] | None = None
    log: Any = None
    startup_timeout: float = STARTUP_TIMEOUT

    def start(self) -> None:
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, cwd=Path.cwd()
        )

    async def wait_listening(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}: {self.stderr()}")
            try:
                _, writer = await asyncio.open_connection(HOST, self.port)
            except OSError:
                await asyncio.sleep(0.05)  # bounded by the deadline: the server is starting
                continue
            writer.close()
            await writer.wait_closed()
            return
        raise RuntimeError(f"{self.name} did not listen within {self.startup_timeout:g} s: {self.stderr()}")

    def stderr(self) -> str:
        if self.log is None:
            return ""
        self.log.seek(0)
        return self.log.read()[-2000:].decode(errors="replace")

    def rss(self) -> tuple[int, int]:
        """(this process's RSS, with its descendants) in KiB."""
        assert self.process is not None
        own = rss_kib(self.process.pid)
        return own, own + sum(rss_kib(kid) for kid in children(self.process.pid))

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        if self.log is not None:
            self.log.close()


def make_target(name: str, tools: int, catalog: Path, clients: int = 50) -> Target:
    port = free_port()
    sessions = str(clients + 8)  # every client keeps its 2025 session (and process) for the whole run
    python = sys.executable
    plain_stdio = [python, "-m", "bench.load", "--serve-plain", "--stdio", "--tools", str(tools)]
    commands = {
        "plain": [python, "-m", "bench.load", "--serve-plain", "--http", f"{HOST}:{port}", "--tools", str(tools)],
        "serve": [python, "-m", "lazymcp", "serve", "--catalog", str(catalog), "--http", f"{HOST}:{port}"],
        "proxy": [python, "-m", "lazymcp", "proxy", "--http", f"{HOST}:{port}", "--max-sessions", sessions]
        + ["--", *plain_stdio],
    }
    return Target(name, commands[name], port)


# --- the clients --------------------------------------------------------------------------------


@dataclass
class Tally:
    """What one run of the load saw."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {method: [] for method in METHODS})
    ok: int = 0
    failed: int = 0
    lost: int = 0
    duplicated: int = 0
    wrong: int = 0
    problems: Counter[str] = field(default_factory=lambda: Counter())

    def problem(self, kind: str, detail: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        self.problems[f"{kind}: {detail[:200]}"] += 1


def messages_of(response: Any) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an HTTP answer: one JSON body, or the data of each SSE event."""
    kind = response.headers.get("content-type", "")
    text = response.text
    if kind.startswith("application/json"):
        value = json.loads(text) if text.strip() else None
        return value if isinstance(value, list) else [value] if isinstance(value, dict) else []
    found: list[dict[str, Any]] = []
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif not line.strip() and data:
            joined = "\n".join(data)
            if joined.strip():  # an event with empty data primes the stream for resumption: no message
                found.append(json.loads(joined))
            data = []
    return found


class LoadClient:
    """One client: a connection pool of its own, a session (2025-11-25), and its request loop."""

    def __init__(
        self,
        number: int,
        url: str,
        era: str,
        tally: Tally,
        *,
        transport: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """``headers``: sent with every request besides the protocol's (a front's bearer token)."""
        import httpx2

        self.number = number
        self.url = url
        self.era = era
        self.tally = tally
        limits = httpx2.Limits(max_connections=4)
        self.http = httpx2.AsyncClient(timeout=REQUEST_TIMEOUT, limits=limits, transport=transport, headers=headers)
        self.session: str | None = None
        self.next_id = 0

    def _envelope(self) -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": f"load-{self.number}", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }

    def _headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        if self.era == MODERN:
            headers["mcp-protocol-version"] = MODERN
            headers["mcp-method"] = method
            if method == "tools/call":
                headers["mcp-name"] = params["name"]
        elif method != "initialize":
            headers["mcp-protocol-version"] = LEGACY
        if self.session is not None:
            headers["mcp-session-id"] = self.session
        return headers

    async def post(
        self, method: str, params: dict[str, Any], *, request: bool = True, within: float = REQUEST_TIMEOUT
    ) -> tuple[Any, dict[str, Any]]:
        """One POST; returns (HTTP response, the one JSON-RPC answer carrying this request's id)."""
        if self.era == MODERN:
            params = {**params, "_meta": self._envelope()}
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        response = await self.http.post(self.url, json=message, headers=self._headers(method, params), timeout=within)
        if not request:
            return response, {}
        answers = [m for m in messages_of(response) if "method" not in m and m.get("id") == message["id"]]
        if response.status_code != 200:
            raise Problem("failed", f"{method}: HTTP {response.status_code} {response.text[:200]}")
        if not answers:
            raise Problem("lost", f"{method}: no answer with id {message['id']} in {response.text[:200]!r}")
        if len(answers) > 1:
            raise Problem("duplicated", f"{method}: {len(answers)} answers with id {message['id']}")
        return response, answers[0]

    async def open(self) -> None:
        if self.era == MODERN:
            return
        init = {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": f"load-{self.number}", "version": "1"},
        }
        response, answer = await self.post("initialize", init, within=OPEN_TIMEOUT)
        if "result" not in answer:
            raise Problem("failed", f"initialize: {answer}")
        self.session = response.headers.get("mcp-session-id")
        response, _ = await self.post("notifications/initialized", {}, request=False)
        if response.status_code not in (200, 202):
            raise Problem("failed", f"notifications/initialized: HTTP {response.status_code}")

    async def one(self, method: str, round_number: int) -> None:
        token = f"client-{self.number}-round-{round_number}"
        params: dict[str, Any] = {}
        if method == "tools/call":
            params = {"name": "echo", "arguments": {"text": token}}
        started = time.perf_counter()
        try:
            _, answer = await self.post(method, params)
        except Problem as problem:
            self.tally.problem(problem.kind, problem.detail)
            return
        except Exception as exc:  # a transport error or a timeout: the request failed
            self.tally.problem("failed", f"{method}: {type(exc).__name__}: {exc}")
            return
        elapsed = time.perf_counter() - started
        if "result" not in answer:
            self.tally.problem("failed", f"{method}: {json.dumps(answer)[:200]}")
            return
        result = answer["result"]
        if method == "tools/call":
            texts = [block.get("text", "") for block in result.get("content", [])]
            if result.get("isError") or not any(token in text for text in texts):
                self.tally.problem("wrong", f"tools/call echo {token!r} answered {json.dumps(result)[:200]}")
                return
        elif method == "tools/list":
            names = [tool.get("name") for tool in result.get("tools", [])]
            if not names or ("echo" not in names and "describe_tools" not in names):
                self.tally.problem("wrong", f"tools/list: {names[:5]}")
                return
        self.tally.ok += 1
        self.tally.latencies[method].append(elapsed)

    async def loop(self, deadline: float, max_requests: int) -> None:
        sent = 0
        round_number = 0
        while sent < max_requests and time.monotonic() < deadline:
            round_number += 1
            for method in MIXES[self.era]:
                if sent >= max_requests or time.monotonic() >= deadline:
                    break
                await self.one(method, round_number)
                sent += 1

    async def close(self) -> None:
        if self.session is not None:
            try:
                await self.http.delete(self.url, headers={"mcp-session-id": self.session})
            except Exception:  # the session ends with the run either way
                pass
        await self.http.aclose()


class Problem(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


# --- one run ------------------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(fraction * len(ordered)) - 1))]


async def run_target(target: Target, era: str, clients: int, seconds: float, max_requests: int) -> dict[str, Any]:
    tally = Tally()
    url = f"http://{HOST}:{target.port}/mcp"
    if target.process is not None and target.process.poll() is not None:
        raise RuntimeError(f"{target.name} exited with {target.process.returncode}: {target.stderr()}")
    pool = [LoadClient(number, url, era, tally) for number in range(clients)]
    gate = asyncio.Semaphore(OPENING)

    async def open_one(client: LoadClient) -> LoadClient | None:
        async with gate:
            try:
                await client.open()
            except Problem as problem:
                tally.problem(problem.kind, f"open: {problem.detail}")
            except Exception as exc:
                tally.problem("failed", f"open: {type(exc).__name__}: {exc}")
            else:
                return client
        await client.close()
        return None

    opened = [client for client in await asyncio.gather(*map(open_one, pool)) if client is not None]
    if not opened:
        raise RuntimeError(f"{target.name}: no client could open a session: {dict(tally.problems)}")
    pool = opened
    for method in MIXES[era]:
        await pool[0].one(method, 0)  # warm: first requests compile and cache
    tally.ok = 0
    tally.latencies = {method: [] for method in METHODS}
    samples: list[tuple[float, int, int]] = []
    stop = asyncio.Event()

    async def sample() -> None:
        started = time.monotonic()
        while not stop.is_set():
            own, total = target.rss()
            samples.append((round(time.monotonic() - started, 2), own, total))
            try:
                await asyncio.wait_for(stop.wait(), SAMPLE_EVERY)
            except TimeoutError:
                pass

    sampler = asyncio.create_task(sample())
    cpu_before = os.times()
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(*(client.loop(deadline, max_requests) for client in pool))
    elapsed = time.monotonic() - started
    cpu_after = os.times()
    stop.set()
    await sampler
    await asyncio.gather(*(client.close() for client in pool))
    every = [value for values in tally.latencies.values() for value in values]
    client_cpu = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    first, last = samples[0] if samples else (0, 0, 0), samples[-1] if samples else (0, 0, 0)
    settled = samples[len(samples) // 4] if samples else (0, 0, 0)  # past the warm-up of the run's first quarter
    growth = last[1] - settled[1]
    return {
        "target": target.name,
        "era": era,
        "clients": clients,
        "seconds": round(elapsed, 2),
        "requests": tally.ok,
        "rps": round(tally.ok / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(statistics.median(every) * 1000, 2) if every else 0.0,
        "p99_ms": round(percentile(every, 0.99) * 1000, 2),
        "p99_ms_by_method": {m: round(percentile(v, 0.99) * 1000, 2) for m, v in tally.latencies.items() if v},
        "failed": tally.failed,
        "lost": tally.lost,
        "duplicated": tally.duplicated,
        "wrong": tally.wrong,
        "problems": dict(tally.problems.most_common(5)),
        "rss_kib": {
            "start": first[1],
            "after_first_quarter": settled[1],
            "end": last[1],
            "peak": max((s[1] for s in samples), default=0),
        },
        "rss_flat": growth <= max(FLAT_KIB, settled[1] * FLAT_FRACTION),
        "rss_with_children_kib": {"start": first[2], "end": last[2], "peak": max((s[2] for s in samples), default=0)},
        "rss_samples": samples,
        "client_cpu_share": round(client_cpu / elapsed / (os.cpu_count() or 1), 2) if elapsed else 0.0,
    }


def table(results: list[dict[str, Any]]) -> str:
    header = (
        f"{'era':<11} {'target':<6} {'rps':>8} {'vs plain':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'fail':>5} {'lost':>5} {'dup':>4} {'wrong':>5} {'RSS MiB start→end (peak)':>26} "
        f"{'flat':>5} {'+children':>14}"
    )
    lines = [header, "-" * len(header)]
    plain = {r["era"]: r["rps"] for r in results if r["target"] == "plain"}
    for r in results:
        ratio = f"{r['rps'] / plain[r['era']]:.2f}x" if plain.get(r["era"]) else "-"
        rss, both = r["rss_kib"], r["rss_with_children_kib"]
        memory = f"{rss['start'] / 1024:.0f}→{rss['end'] / 1024:.0f} ({rss['peak'] / 1024:.0f})"
        with_children = f"{both['start'] / 1024:.0f}→{both['end'] / 1024:.0f}" if both["peak"] != rss["peak"] else ""
        lines.append(
            f"{r['era']:<11} {r['target']:<6} {r['rps']:>8.1f} {ratio:>8} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} "
            f"{r['failed']:>5} {r['lost']:>5} {r['duplicated']:>4} {r['wrong']:>5} {memory:>26} "
            f"{'yes' if r['rss_flat'] else 'NO':>5} {with_children:>14}"
        )
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        catalog = Path(scratch) / "catalog.json"
        catalog.write_text(json.dumps(await plain_catalog(args.tools)))
        results = []
        for name in args.targets:
            target = make_target(name, args.tools, catalog, args.clients)
            target.start()
            try:
                await target.wait_listening()
                for era in args.eras:
                    print(f"{era} {name}: {args.clients} clients for {args.seconds:g} s ...", flush=True)
                    result = await run_target(target, era, args.clients, args.seconds, args.max_requests)
                    results.append(result)
                    for problem, count in result["problems"].items():
                        print(f"    {count} x {problem}", flush=True)
            finally:
                target.stop()
        return sorted(results, key=lambda r: (args.eras.index(r["era"]), args.targets.index(r["target"])))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--serve-plain" in argv:
        serve_plain(argv)
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0, help="timed phase per target and era")
    parser.add_argument("--max-requests", type=int, default=100_000, help="per client; each loop also stops on time")
    parser.add_argument("--tools", type=int, default=50, help="tools the servers list (echo included)")
    parser.add_argument("--eras", default=",".join(ERAS))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    args.eras = [e.strip() for e in args.eras.split(",") if e.strip()]
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    results = asyncio.run(run(args))
    print()
    print(table(results))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"clients": args.clients, "seconds": args.seconds, "results": results}, indent=2)
        )
    bad = sum(r["failed"] + r["lost"] + r["duplicated"] + r["wrong"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
