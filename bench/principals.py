"""Server processes per principal: ``python -m bench.principals [--sessions 50] [--people 5]``.

One ``lazymcp gateway --http`` with a token file of ``--people`` named tokens, over one small raw echo
server (``bench.cluster.ECHO``); ``--sessions`` 2025-11-25 sessions spread over the people, each
calling ``echo`` once (every answer checked). While every session is still open: the server processes
running under the gateway and the memory of the whole tree. Run twice side by side, in one run: the
entry with ``"share": "session"`` (one set per session, as every session had before) and by default
(one set per principal).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.cluster import ECHO, wait_listening
from bench.load import HOST, LoadClient, Tally, children, free_port, rss_kib

SHARES = ("session", "principal")


async def sessions_of(port: int, sessions: int, people: int, pid: int) -> dict[str, Any]:
    """Open the sessions, one call each; the processes and memory while they are open."""
    url = f"http://{HOST}:{port}/mcp"
    tally = Tally()
    pool = [
        LoadClient(n, url, "2025-11-25", tally, headers={"Authorization": f"Bearer token-{n % people}"})
        for n in range(sessions)
    ]
    gate = asyncio.Semaphore(4)
    wrong = 0

    async def one(client: LoadClient) -> None:
        nonlocal wrong
        async with gate:
            await client.open()
            text = f"session-{client.number}"
            _, answer = await client.post("tools/call", {"name": "e__echo", "arguments": {"text": text}}, within=60.0)
            if text not in json.dumps(answer.get("result")):
                wrong += 1

    try:
        await asyncio.gather(*map(one, pool))
        kids = children(pid)
        rss = rss_kib(pid) + sum(rss_kib(kid) for kid in kids)
    finally:
        await asyncio.gather(*(client.close() for client in pool))
    return {"sessions": sessions, "wrong": wrong, "server_processes": len(kids), "rss_kib": rss}


def run(share: str, root: Path, sessions: int, people: int) -> dict[str, Any]:
    (root / "echo.py").write_text(ECHO)
    config = root / f"{share}.json"
    entry = {"command": sys.executable, "args": [str(root / "echo.py")], "share": share}
    config.write_text(json.dumps({"mcpServers": {"e": entry}}))
    tokens = root / "tokens"
    tokens.write_text("".join(f"person{n}: token-{n}\n" for n in range(people)))
    tokens.chmod(0o600)
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"{HOST}:{port}"]
    command += ["--token-file", str(tokens), "--max-sessions", str(sessions + 8)]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(root / f"cache-{share}"), "LAZYMCP_LOG_LEVEL": "warning"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    try:
        wait_listening(port, process)
        return asyncio.run(sessions_of(port, sessions, people, process.pid))
    finally:
        process.terminate()
        process.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.principals")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--people", type=int, default=5)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        results = {share: run(share, Path(scratch), args.sessions, args.people) for share in SHARES}
    before, after = results["session"], results["principal"]
    print(f"{args.sessions} HTTP sessions of {args.people} people, one echo server each calls once")
    print("| share | server processes | memory (MiB, gateway and servers) | wrong answers |")
    print("|---|---|---|---|")
    for share in SHARES:
        r = results[share]
        print(f"| {share} | {r['server_processes']} | {r['rss_kib'] / 1024:.0f} | {r['wrong']} |")
    print(
        f"per principal / per session: processes {after['server_processes'] / max(before['server_processes'], 1):.2f},"
        f" memory {after['rss_kib'] / max(before['rss_kib'], 1):.2f}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
