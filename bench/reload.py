"""A team's gateway changed while it runs: ``python -m bench.reload [--rounds 5] [--clients 20] [--seconds 12]``.

Needs ``redis-server`` (the Debian package). Two parts, each against real ``lazymcp gateway --http``
processes over one small raw echo server (``bench.cluster``'s):

- **a token removed**: two instances sharing a Redis, each watching the same token file. A principal's
  token is removed (the file written whole and renamed over the old one, as an editor saves), and each
  instance is asked every 20 ms with that token (``GET /mcp``, which passes the same check as any request
  of its sessions: 405 while the token is good, 401 once it is gone) until it refuses it; the token is
  then put back, and the next round starts once both take it again. Per instance: the median and the
  worst time from the rename to the refusal, over ``--rounds`` (target: at most 2 s on every instance).
- **a configuration changed under load**: one instance, ``--clients`` clients each in its own session
  (one principal, by bearer token) calling ``a__echo`` and ``b__echo`` in turn for ``--seconds``, every
  answer checked. Meanwhile the configuration changes every 1.5 s, in turn: server ``c`` added, the policy
  widened to every tool, ``c`` removed, the policy narrowed back to ``a`` and ``b``; and in every edit
  ``b``'s entry changes (its process is restarted once its calls in flight are answered). Each edit is
  waited for until the gateway says it read the file again. Counted: calls, failed calls (an HTTP
  error, an error answer, a wrong echo), edits applied (target: zero failed calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2

from bench.cluster import ECHO, JSON, open_session, wait_listening
from bench.load import HOST, free_port

TOKEN = "tok-of-the-team-0123456789"
GONE = "tok-of-the-leaver-0123456789"
POLL_S = 0.02
WAIT_S = 10.0
"""Seconds an instance may take to refuse a removed token (or take it back) before the round fails."""
TARGET_S = 2.0
EDIT_EVERY_S = 1.5


def write_whole(path: Path, text: str) -> None:
    """As an editor saves: a new file renamed over the old one, so no reader sees half of it."""
    draft = path.with_suffix(".draft")
    draft.write_text(text)
    draft.chmod(0o600)
    draft.replace(path)


def tokens_text(*names: str) -> str:
    known = {"team": TOKEN, "leaver": GONE}
    return "".join(f"{name}: {known[name]}\n" for name in names)


def config_text(echo: Path, servers: tuple[str, ...], allow: list[str], edited: int = 0) -> str:
    entries: dict[str, Any] = {name: {"command": sys.executable, "args": [str(echo)]} for name in servers}
    entries["b"]["env"] = {"EDITED": str(edited)}
    return json.dumps({"mcpServers": entries, "lazymcp": {"access": {"*": {"allow": allow}}}})


class Gateways:
    """The processes of one part, stopped with it."""

    def __init__(self, stack: ExitStack, root: Path) -> None:
        self.stack = stack
        self.root = root

    def start(self, command: list[str], port: int, env: dict[str, str], log: Path | None = None) -> None:
        sink = self.stack.enter_context(log.open("wb")) if log is not None else subprocess.DEVNULL
        process = subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=sink)
        self.stack.callback(lambda: (process.terminate(), process.wait(10)))
        wait_listening(port, process)

    def gateway(self, config: Path, port: int, number: int, *flags: str, log: Path | None = None) -> None:
        command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"{HOST}:{port}"]
        env = {"LAZYMCP_CACHE_DIR": str(self.root / f"cache{number}"), "LAZYMCP_LOG_LEVEL": "info"}
        self.start([*command, *flags], port, env, log)


async def refused(client: httpx2.AsyncClient, port: int, token: str) -> bool:
    answer = await client.get(f"http://{HOST}:{port}/mcp", headers={"authorization": f"Bearer {token}"})
    if answer.status_code not in (401, 405):
        raise RuntimeError(f"instance at port {port} answered GET /mcp with HTTP {answer.status_code}")
    return answer.status_code == 401


async def until_each(client: httpx2.AsyncClient, ports: list[int], wanted: bool) -> list[float]:
    """Seconds until each instance refuses (``wanted``) or takes back the removed token."""
    start = time.perf_counter()
    took: dict[int, float] = {}
    while len(took) < len(ports):
        for port in ports:
            if port not in took and await refused(client, port, GONE) == wanted:
                took[port] = time.perf_counter() - start
        if time.perf_counter() - start > WAIT_S:
            late = [port for port in ports if port not in took]
            raise RuntimeError(f"instances at ports {late} did not {'refuse' if wanted else 'take'} it in {WAIT_S:g} s")
        await asyncio.sleep(POLL_S)
    return [took[port] for port in ports]


async def token_rounds(tokens: Path, ports: list[int], rounds: int) -> dict[str, Any]:
    seen: list[list[float]] = [[] for _ in ports]
    async with httpx2.AsyncClient(trust_env=False, timeout=10) as client:
        await until_each(client, ports, False)
        for _ in range(rounds):
            write_whole(tokens, tokens_text("team"))
            for index, seconds in enumerate(await until_each(client, ports, True)):
                seen[index].append(seconds)
            write_whole(tokens, tokens_text("team", "leaver"))
            await until_each(client, ports, False)
    per_instance = [
        {"median_s": statistics.median(times), "worst_s": max(times), "rounds": len(times)} for times in seen
    ]
    worst = max(entry["worst_s"] for entry in per_instance)
    return {"instances": per_instance, "worst_s": worst, "met": worst <= TARGET_S}


def token_part(stack: ExitStack, root: Path, config: Path, rounds: int) -> dict[str, Any]:
    redis_server = shutil.which("redis-server")
    assert redis_server is not None
    processes = Gateways(stack, root)
    redis_port = free_port()
    redis = [redis_server, "--port", str(redis_port), "--bind", HOST, "--save", "", "--loglevel", "warning"]
    processes.start(redis, redis_port, {})
    tokens = root / "tokens"
    write_whole(tokens, tokens_text("team", "leaver"))
    ports = [free_port(), free_port()]
    for number, port in enumerate(ports):
        flags = ["--token-file", str(tokens), "--redis", f"redis://{HOST}:{redis_port}/0"]
        processes.gateway(config, port, number, *flags)
    return asyncio.run(token_rounds(tokens, ports, rounds))


class Callers:
    """The clients of the load part, and what their calls came to."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.calls = 0
        self.failures: list[str] = []
        self.stop = asyncio.Event()

    async def one(self, index: int) -> None:
        auth = {**JSON, "authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(trust_env=False, headers=auth, timeout=60) as client:
            session = await open_session(client, self.url)
            number = index * 1_000_000
            while not self.stop.is_set():
                number += 1
                self.failures.extend(await self.call(client, session, number))
                self.calls += 1

    async def call(self, client: httpx2.AsyncClient, session: dict[str, str], number: int) -> list[str]:
        tool = "a__echo" if number % 2 else "b__echo"
        message = {"jsonrpc": "2.0", "id": number, "method": "tools/call"}
        message["params"] = {"name": tool, "arguments": {"n": number}}
        try:
            answer = await client.post(self.url, json=message, headers=session)
        except httpx2.HTTPError as exc:
            return [f"{tool}: {type(exc).__name__}"]
        if answer.status_code != 200:
            return [f"{tool}: HTTP {answer.status_code} {answer.text[:160]}"]
        body = answer.json()
        result = body.get("result") or {}
        texts = [block.get("text", "") for block in result.get("content", [])]
        if result.get("isError") or not any(f"{number}}}" in text for text in texts):
            return [f"{tool}: {json.dumps(body)[:400]}"]
        return []


READ_AGAIN = "was read again: "


def reads(log: Path) -> list[str]:
    """What the gateway has said of each reading of its files again, in order."""
    return [line.split(READ_AGAIN, 1)[1] for line in log_lines(log) if READ_AGAIN in line]


def log_lines(log: Path) -> list[str]:
    return log.read_text().splitlines()


async def edits_under_load(
    config: Path, echo: Path, log: Path, port: int, clients: int, seconds: float
) -> dict[str, Any]:
    callers = Callers(f"http://{HOST}:{port}/mcp")
    edits = [
        (("a", "b", "c"), ["a__*", "b__*"]),
        (("a", "b", "c"), ["*"]),
        (("a", "b"), ["*"]),
        (("a", "b"), ["a__*", "b__*"]),
    ]
    tasks = [asyncio.ensure_future(callers.one(index)) for index in range(clients)]
    applied = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        await asyncio.sleep(EDIT_EVERY_S)
        servers, allow = edits[applied % len(edits)]
        before = len(reads(log))
        write_whole(config, config_text(echo, servers, allow, edited=applied + 1))
        deadline = time.perf_counter() + WAIT_S
        while len(reads(log)) == before:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the gateway did not read edit {applied + 1} in {WAIT_S:g} s")
            await asyncio.sleep(0.05)
        applied += 1
    callers.stop.set()
    await asyncio.gather(*tasks)
    problems = sorted(set(callers.failures))[:5]
    failed = len(callers.failures)
    return {
        "clients": clients,
        "calls": callers.calls,
        "failed": failed,
        "edits": applied,
        "applied": reads(log),
        "said": [line for line in log_lines(log) if READ_AGAIN not in line][:40],
        "problems": problems,
    }


def load_part(stack: ExitStack, root: Path, echo: Path, clients: int, seconds: float) -> dict[str, Any]:
    config, tokens, log = root / "load.json", root / "load-tokens", root / "load.log"
    write_whole(config, config_text(echo, ("a", "b"), ["a__*", "b__*"]))
    write_whole(tokens, tokens_text("team"))
    port = free_port()
    flags = ["--token-file", str(tokens), "--max-sessions", str(clients * 2)]
    Gateways(stack, root).gateway(config, port, 9, *flags, log=log)
    result = asyncio.run(edits_under_load(config, echo, log, port, clients, seconds))
    result["met"] = result["failed"] == 0 and result["edits"] > 0
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reload", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="token removals per instance")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=12.0, help="of calls while the configuration changes")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    if shutil.which("redis-server") is None:
        print("bench.reload: needs redis-server (the Debian package redis-server)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        echo = root / "echo.py"
        echo.write_text(ECHO)
        config = root / "mcp.json"
        write_whole(config, config_text(echo, ("a", "b"), ["*"]))
        with ExitStack() as stack:
            removed = token_part(stack, root, config, args.rounds)
        with ExitStack() as stack:
            under_load = load_part(stack, root, echo, args.clients, args.seconds)
    for number, entry in enumerate(removed["instances"], 1):
        print(
            f"a token removed: instance {number} refused it after {entry['median_s']:.2f} s (median of "
            f"{entry['rounds']}), {entry['worst_s']:.2f} s at worst (target: at most {TARGET_S:g} s)"
        )
    print(
        f"the configuration edited {under_load['edits']} times under {under_load['clients']} clients: "
        f"{under_load['calls']} calls, {under_load['failed']} failed (target: 0)"
    )
    print(f"  the edits as the gateway applied them: {' | '.join(under_load['applied'])}")
    for problem in under_load["problems"]:
        print(f"  failed: {problem}")
    for line in under_load["said"] if under_load["failed"] else ():
        print(f"  the gateway said: {line}")
    if args.json:
        Path(args.json).write_text(json.dumps({"token_removed": removed, "under_load": under_load}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
