"""Soak: ``python -m bench.soak [--minutes 10] [--json FILE]``.

Mixed hostile and normal traffic against two proxies at once, each a subprocess on 127.0.0.1 in front
of ``tests/servers/hostile_upstream.py`` (a raw 2025-11-25 stdio server):

- ``http``: ``lazymcp proxy --http`` (``--max-sessions 8``). Each round: a normal 2025-11-25 session
  (``initialize``, ``tools/list``, ``tools/call echo``, DELETE); 2026-07-28 calls from two clients with
  the same ids and progress tokens, plus cancellations naming them; POSTs with ids ``true``, ``1.5``,
  ``[1]`` and a numeric ``method``; a body declared past the limit; ``initialize`` past the session cap
  (503); a session flooded with notifications it never reads; a slow call whose POST is closed early;
  sessions left open for the idle reaper.
- ``stdio``: ``lazymcp proxy -- ...`` driven over its pipes: normal calls, a burst of requests whose
  answers are read only afterwards, notification floods, and unanswered server requests.

RSS is sampled from /proc every 5 s for each proxy with its upstream processes. Reported per target:
peak RSS, RSS after the first minute and at the end, and growth per minute (least squares over the
samples after the first minute). Every normal request's answer is checked; exit status 1 when one is
wrong, or when a proxy died.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = [sys.executable, str(ROOT / "tests" / "servers" / "hostile_upstream.py"), "plain"]
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SAMPLE_EVERY = 5.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tree_rss_kib(pid: int) -> int:
    """RSS of a process and its descendants, from /proc."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            for row in Path(f"/proc/{current}/status").read_text().splitlines():
                if row.startswith("VmRSS:"):
                    total += int(row.split()[1])
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return total


def request(request_id: object, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def call(request_id: object, name: str, meta: dict[str, Any] | None = None, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return request(request_id, "tools/call", params)


class Tally:
    def __init__(self) -> None:
        self.ok = 0
        self.wrong: list[str] = []

    def check(self, condition: bool, what: str) -> None:
        if condition:
            self.ok += 1
        elif len(self.wrong) < 20:
            self.wrong.append(what)
        else:
            self.wrong.append("...")


async def http(
    port: int,
    method: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    close_after: float | None = None,
) -> tuple[int, dict[str, str], bytes]:
    fields = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json", "Connection": "close"}
    fields |= {"Accept": "application/json, text/event-stream", "Content-Length": str(len(body))}
    fields |= headers or {}
    head = f"{method} /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
    try:
        writer.write(head.encode() + body)
        await writer.drain()
        if close_after is not None:
            await asyncio.sleep(close_after)  # a client that gives up on its request
            return 0, {}, b""
        raw = await asyncio.wait_for(reader.read(-1), 60)
    finally:
        writer.close()
    top, _, content = raw.partition(b"\r\n\r\n")
    lines = top.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    parsed = {k.lower(): v.strip() for k, _, v in (row.partition(":") for row in lines[1:])}
    return status, parsed, content


async def post(port: int, message: object, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    status, _, content = await http(port, "POST", json.dumps(message).encode(), headers)
    try:
        return status, json.loads(content)
    except ValueError:
        return status, None


MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28"}


async def http_round(port: int, number: int, tally: Tally) -> None:
    init = json.dumps(request(1, "initialize", INIT)).encode()
    status, headers, _ = await http(port, "POST", init)
    if status == 200:  # a normal session
        session = {"Mcp-Session-Id": headers.get("mcp-session-id", "")}
        await post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        listed = await post(port, request(2, "tools/list"), session)
        tally.check(listed[0] == 200 and "result" in (listed[1] or {}), f"http tools/list: {listed}")
        echoed = await post(port, call(3, "echo", text=f"r{number}"), session)
        tally.check(f"r{number}" in json.dumps(echoed[1]), f"http echo: {echoed}")
        if number % 5 == 0:  # a flood nobody reads: the event buffer is bounded
            await post(port, call(4, "flood", count=3000, size=500), session)
        if number % 7 != 0:  # every seventh session is left for the idle reaper
            await http(port, "DELETE", b"", session)
    else:
        tally.check(status == 503, f"http initialize: {status}")
    modern = [
        post(port, call(1, "echo", {**MODERN, "progressToken": "t"}, text=f"m{number}-{who}"), MODERN_HEADERS)
        for who in "ab"
    ]
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    answers = await asyncio.gather(*modern, post(port, cancel, MODERN_HEADERS))
    for who, answer in zip("ab", answers[:2], strict=True):
        tally.check(f"m{number}-{who}" in json.dumps(answer[1]), f"http modern echo: {answer}")
    for bad in (
        request(True, "ping"),
        request(1.5, "ping"),
        request([1], "ping"),
        {"jsonrpc": "2.0", "id": 1, "method": 7},
    ):
        status, _, _ = await http(port, "POST", json.dumps(bad).encode(), MODERN_HEADERS)
        tally.check(status == 400, f"http bad id: {status}")
    status, _, _ = await http(port, "POST", b"", {"Content-Length": str(64 << 20)})
    tally.check(status == 413, f"http big body: {status}")
    await http(port, "POST", json.dumps(call(9, "slow", MODERN, seconds=2)).encode(), MODERN_HEADERS, close_after=0.2)


class StdioPeer:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next = 0

    async def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        await self.process.stdin.drain()

    async def answer(self, request_id: object) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), 60)
            if not line:
                raise EOFError("the proxy closed its stdout")
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message

    def fresh(self) -> int:
        self.next += 1
        return self.next


async def stdio_round(peer: StdioPeer, number: int, tally: Tally) -> None:
    first = peer.fresh()
    await peer.send(call(first, "echo", text=f"s{number}"))
    tally.check(f"s{number}" in json.dumps(await peer.answer(first)), "stdio echo")
    burst = [peer.fresh() for _ in range(200)]  # written before any is read
    await peer.send(*(request(rid, "tools/list") for rid in burst))
    for rid in burst:
        tally.check("result" in await peer.answer(rid), "stdio burst")
    flood = peer.fresh()
    await peer.send(call(flood, "flood", count=2000, size=200))
    tally.check("result" in await peer.answer(flood), "stdio flood")
    if number % 10 == 0:  # a server request the client never answers (bounded by --client-timeout)
        asked = peer.fresh()
        await peer.send(call(asked, "ask", cancel=number % 20 == 0))
    await peer.send({"jsonrpc": "2.0", "id": [1], "method": "ping"}, {"jsonrpc": "2.0", "method": 5})


def growth_per_minute(samples: list[tuple[float, int]]) -> float:
    """KiB per minute: the least-squares slope of RSS over time, after the first minute."""
    if len(samples) < 3:
        return 0.0
    start = samples[0][0]
    points = [(t - start, rss) for t, rss in samples if t - start >= 60] or samples
    if len(points) < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / len(points)
    mean_r = sum(r for _, r in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return 0.0 if spread == 0 else 60 * sum((t - mean_t) * (r - mean_r) for t, r in points) / spread


async def soak(seconds: float) -> dict[str, Any]:
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proxy = [sys.executable, "-m", "lazymcp", "proxy"]
    http_proc = await asyncio.create_subprocess_exec(
        *proxy,
        "--http",
        f"127.0.0.1:{port}",
        "--max-sessions",
        "8",
        "--",
        *UPSTREAM,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    stdio_proc = await asyncio.create_subprocess_exec(
        *proxy,
        "--client-timeout",
        "20",
        "--",
        *UPSTREAM,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        limit=1 << 24,
    )
    tally = Tally()
    samples: dict[str, list[tuple[float, int]]] = {"http": [], "stdio": []}
    deadline = time.monotonic() + seconds
    try:
        for _ in range(200):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        peer = StdioPeer(stdio_proc)
        await peer.send(request(0, "initialize", INIT), {"jsonrpc": "2.0", "method": "notifications/initialized"})
        await peer.answer(0)

        async def sampler() -> None:
            while time.monotonic() < deadline:
                now = time.monotonic()
                samples["http"].append((now, tree_rss_kib(http_proc.pid)))
                samples["stdio"].append((now, tree_rss_kib(stdio_proc.pid)))
                await asyncio.sleep(SAMPLE_EVERY)

        async def http_traffic() -> None:
            number = 0
            while time.monotonic() < deadline:
                number += 1
                await http_round(port, number, tally)

        async def stdio_traffic() -> None:
            number = 0
            while time.monotonic() < deadline:
                number += 1
                await stdio_round(peer, number, tally)

        await asyncio.gather(sampler(), http_traffic(), stdio_traffic())
        alive = {"http": http_proc.returncode is None, "stdio": stdio_proc.returncode is None}
    finally:
        for process in (http_proc, stdio_proc):
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 10)
                except TimeoutError:
                    process.kill()
    report: dict[str, Any] = {"seconds": seconds, "checked": tally.ok, "wrong": tally.wrong, "alive": alive}
    for name, series in samples.items():
        values = [rss for _, rss in series]
        after_minute = [rss for t, rss in series if t - series[0][0] >= 60] or values
        report[name] = {
            "peak_mib": round(max(values) / 1024, 1),
            "after_first_minute_mib": round(after_minute[0] / 1024, 1),
            "end_mib": round(values[-1] / 1024, 1),
            "growth_mib_per_minute": round(growth_per_minute(series) / 1024, 2),
            "samples": len(values),
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    report = asyncio.run(soak(args.minutes * 60))
    for name in ("http", "stdio"):
        row = report[name]
        print(
            f"{name:5}  peak {row['peak_mib']} MiB  after 1 min {row['after_first_minute_mib']} MiB  "
            f"end {row['end_mib']} MiB  growth {row['growth_mib_per_minute']} MiB/min  ({row['samples']} samples)"
        )
    print(f"checked answers: {report['checked']}, wrong: {len(report['wrong'])}, alive: {report['alive']}")
    for wrong in report["wrong"]:
        print(f"  wrong: {wrong}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 1 if report["wrong"] or not all(report["alive"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
