"""What a signed-in remote server costs per call (``python -m bench.signin [--rounds N]``).

One remote MCP server that is its own OAuth authorization server (the SDK's ``mcp.server.auth``, the
test suite's ``tests/servers/oauth_server.py``, tokens lasting an hour), reached through two stdio
gateways side by side, round by round (the order turned every round):

- ``static header``: the entry sends ``Authorization: Bearer TOKEN`` from its ``headers``;
- ``signed in``: the entry has no header; a ``lazymcp login`` made before the run (its URL followed as a
  browser would, the server consenting at once) keeps the tokens, and the gateway's connection signs each
  request with them through the SDK's OAuth client.

Both send the same token, so the server's work is the same; what differs is the client side's. Each
round is one ``tools/call`` of ``whoami`` from a raw JSON-RPC client; the medians and their difference
are reported (target: at most 1 ms more for the signed-in call).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.gateway import Raw

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "tests" / "servers" / "oauth_server.py"
EXPIRY = 3600
WAIT = 60.0
"""Seconds the server may take to listen, and the login to end."""
TARGET_US = 1000.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the OAuth server exited with status {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"the OAuth server did not listen within {WAIT:g} s")


def _login(config: Path, env: dict[str, str]) -> None:
    """``lazymcp login signed --no-browser``, its URL followed as a browser would."""
    import httpx2

    command = [sys.executable, "-m", "lazymcp", "login", "signed", "--config", str(config), "--no-browser"]
    with subprocess.Popen(
        [*command, "--wait", str(int(WAIT))], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as login:
        assert login.stdout is not None
        url = ""
        while not url.startswith("http"):
            line = login.stdout.readline()
            if not line:
                raise RuntimeError("lazymcp login printed no URL")
            url = line.decode().strip()
        with httpx2.Client(trust_env=False, follow_redirects=True, timeout=WAIT) as browser:
            page = browser.get(url)
        if page.status_code != 200:
            raise RuntimeError(f"the sign-in page answered {page.status_code}")
        _, said = login.communicate(timeout=WAIT)
        if login.returncode != 0:
            raise RuntimeError(f"lazymcp login failed: {said.decode()[-500:]}")


def measure(rounds: int) -> dict[str, Any]:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with (
        tempfile.TemporaryDirectory(prefix="lazymcp-bench-signin-") as scratch,
        subprocess.Popen(
            [sys.executable, str(SERVER), str(port), str(EXPIRY)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ) as server,
    ):
        home = Path(scratch)
        env = {
            **os.environ,
            "XDG_CONFIG_HOME": str(home / "xdg"),
            "LAZYMCP_TOKEN_STORE": "file",
            "LAZYMCP_CACHE_DIR": str(home / "cache"),
        }
        try:
            _listening(port, server)
            signed = home / "signed.json"
            signed.write_text(json.dumps({"mcpServers": {"signed": {"url": f"{base}/mcp"}}}))
            _login(signed, env)
            (kept,) = json.loads((home / "xdg" / "lazymcp" / "tokens.json").read_text()).values()
            header = {"Authorization": f"Bearer {kept['tokens']['access_token']}"}
            static = home / "static.json"
            static.write_text(json.dumps({"mcpServers": {"static": {"url": f"{base}/mcp", "headers": header}}}))
            return _rounds({"static header": static, "signed in": signed}, env, rounds)
        finally:
            server.terminate()
            server.wait(timeout=10)


def _rounds(configs: dict[str, Path], env: dict[str, str], rounds: int) -> dict[str, Any]:
    tools = {"static header": "static__whoami", "signed in": "signed__whoami"}
    clients = {
        name: Raw([sys.executable, "-m", "lazymcp", "gateway", "--config", str(path), "--mode", "eager"], env)
        for name, path in configs.items()
    }
    samples: dict[str, list[float]] = {name: [] for name in clients}
    try:
        for name, client in clients.items():
            client.handshake()
            for _ in range(20):  # the connection made and warm
                answer = client.request("tools/call", {"name": tools[name], "arguments": {}})
                if answer.get("error") or answer["result"].get("isError"):
                    raise RuntimeError(f"{name}: {json.dumps(answer)[:300]}")
        for index in range(rounds):
            names = list(clients) if index % 2 == 0 else list(reversed(clients))  # neither always goes first
            for name in names:
                started = time.perf_counter()
                clients[name].request("tools/call", {"name": tools[name], "arguments": {}})
                samples[name].append(time.perf_counter() - started)
    finally:
        for client in clients.values():
            client.close()
    medians = {name: round(statistics.median(values) * 1e6, 1) for name, values in samples.items()}
    more = round(medians["signed in"] - medians["static header"], 1)
    paired = [signed - static for signed, static in zip(samples["signed in"], samples["static header"], strict=True)]
    return {
        "median_us": medians,
        "signed_in_over_static_us": more,
        "paired_difference_median_us": round(statistics.median(paired) * 1e6, 1),
        "met": more <= TARGET_US,
        "rounds": rounds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.signin", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=500, help="interleaved calls of each kind (default: 500)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    result = measure(args.rounds)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    medians = result["median_us"]
    print(f"tools/call through a stdio gateway to a remote server, {result['rounds']} interleaved rounds (median):")
    for name, value in medians.items():
        print(f"  {name:14} {value / 1000:8.3f} ms")
    verdict = "met" if result["met"] else "NOT met"
    more = result["signed_in_over_static_us"]
    print(f"  signed in over static header: {more / 1000:+.3f} ms (target: at most +1 ms, {verdict})")
    print(f"  median of the rounds' differences: {result['paired_difference_median_us'] / 1000:+.3f} ms")


if __name__ == "__main__":
    main()
