"""Code mode against tool-by-tool calls, side by side in one run (``python -m bench.codemode [--rounds N]``).

- A scripted task over two real servers (server-filesystem and server-memory, from npm) behind
  ``lazymcp gateway``: read a 500-line file and store its first ten lines as an observation in memory.
  Tool by tool (``--mode eager``: every definition listed, each result read by the model) against one
  ``run_code`` (``--mode code``). For each: the tokens the model's context gets (cl100k_base: the
  listing, each call's arguments, each result), the wall time of the calls, and the calls the model makes.
- What a call from code adds: the median of ``--rounds`` direct ``tools/call`` of a cheap tool, against a
  run that makes ``--rounds`` calls of it, less an empty run, per call (the sandbox's pool warm).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.gateway import Raw
from bench.peers import NPM_PACKAGES
from bench.proxy import CACHE as NPM_CACHE
from lazymcp.tools.tokens import count_tokens

LINES = 500


def _servers(root: Path) -> dict[str, Any] | str:
    import shutil
    import subprocess

    node, npm = shutil.which("node"), shutil.which("npm")
    scope = NPM_CACHE / "node_modules" / "@modelcontextprotocol"
    entries = {name: scope / f"server-{name}" / "dist" / "index.js" for name in ("memory", "filesystem")}
    if node is None or npm is None:
        return "node/npm is not available"
    if not all(entry.exists() for entry in entries.values()):
        command = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(NPM_CACHE)]
        if subprocess.run([*command, *NPM_PACKAGES], capture_output=True, timeout=600).returncode != 0:
            return f"npm install {' '.join(NPM_PACKAGES)} failed"
    return {
        "files": {"command": node, "args": [str(entries["filesystem"]), str(root)]},
        "memory": {
            "command": node,
            "args": [str(entries["memory"])],
            "env": {"MEMORY_FILE_PATH": str(root / "m.json")},
        },
    }


def _gateway(config: Path, cache: Path, mode: str) -> Raw:
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(cache)}
    raw = Raw([sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--mode", mode], env)
    raw.handshake()
    return raw


def _tokens(value: object) -> int:
    return count_tokens(json.dumps(value, separators=(",", ":")))


def _call(raw: Raw, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    answer = raw.request("tools/call", {"name": name, "arguments": arguments})
    took = time.perf_counter() - start
    assert "result" in answer and not answer["result"].get("isError"), answer
    return answer["result"], took


def tool_by_tool(raw: Raw, path: Path) -> dict[str, Any]:
    listing = raw.request("tools/list", {})["result"]["tools"]
    context = _tokens(listing)
    read_args = {"path": str(path)}
    read, first = _call(raw, "files__read_text_file", read_args)
    head = read["content"][0]["text"].splitlines()[:10]
    store_args = {"entities": [{"name": "sample", "entityType": "file", "observations": head}]}
    stored, second = _call(raw, "memory__create_entities", store_args)
    context += sum(_tokens(part) for part in (read_args, read, store_args, stored))
    return {"context_tokens": context, "listing_tokens": _tokens(listing), "ms": (first + second) * 1e3, "calls": 2}


CODE = """text = (await files.read_text_file(path=PATH))["content"]
head = text.splitlines()[:10]
await memory.create_entities(entities=[{"name": "sample", "entityType": "file", "observations": head}])
print(f"stored {len(head)} lines")
"""


def in_code(raw: Raw, path: Path) -> dict[str, Any]:
    listing = raw.request("tools/list", {})["result"]["tools"]
    arguments = {"code": CODE.replace("PATH", repr(str(path)))}
    result, took = _call(raw, "run_code", arguments)
    assert result["content"][0]["text"] == "stored 10 lines", result
    context = _tokens(listing) + _tokens(arguments) + _tokens(result)
    return {"context_tokens": context, "listing_tokens": _tokens(listing), "ms": took * 1e3, "calls": 1}


def overhead(direct: Raw, code: Raw, rounds: int) -> dict[str, float]:
    """Per call, median: a direct call of a cheap tool, and one made from code (a run of ``rounds``
    calls less an empty run, divided by ``rounds``; five runs each, the pool warm)."""
    singles = [_call(direct, "memory__read_graph", {})[1] for _ in range(rounds)]
    loop = f"for i in range({rounds}):\n    await memory.read_graph()\n"
    empty = [_call(code, "run_code", {"code": "1"})[1] for _ in range(5)]
    runs = [_call(code, "run_code", {"code": loop})[1] for _ in range(5)]
    per_call = (statistics.median(runs) - statistics.median(empty)) / rounds
    direct_ms = statistics.median(singles) * 1e3
    return {"direct_ms": direct_ms, "from_code_ms": per_call * 1e3, "added_ms": per_call * 1e3 - direct_ms}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.codemode", description=__doc__)
    parser.add_argument("--rounds", type=int, default=100, help="calls per overhead sample (100)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        servers = _servers(root)
        if isinstance(servers, str):
            print(f"skipped: {servers}")
            return 0
        path = root / "sample.txt"
        path.write_text("".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(LINES)))
        config = root / "mcp.json"
        config.write_text(json.dumps({"mcpServers": servers}))
        eager, code = _gateway(config, root / "cache", "eager"), _gateway(config, root / "cache", "code")
        try:
            tool_by_tool(eager, path)  # servers started, pools warm
            in_code(code, path)
            one, other = tool_by_tool(eager, path), in_code(code, path)
            cost = overhead(eager, code, args.rounds)
        finally:
            eager.close()
            code.close()
    print("| task: read a 500-line file, store its first ten lines | tool by tool (eager) | run_code | ratio |")
    print("|---|---:|---:|---:|")
    for key in ("context_tokens", "listing_tokens", "ms", "calls"):
        ratio = one[key] / other[key] if other[key] else float("nan")
        print(f"| {key} | {one[key]:.0f} | {other[key]:.0f} | {ratio:.1f}x |")
    print(
        f"\nper call (median, {args.rounds} calls): direct {cost['direct_ms']:.2f} ms, from code "
        f"{cost['from_code_ms']:.2f} ms, added {cost['added_ms']:+.2f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
