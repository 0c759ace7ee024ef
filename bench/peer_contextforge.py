"""IBM's ContextForge (``mcp-contextforge-gateway``) in front of an ``mcpServers`` configuration.

``python -m bench.peer_contextforge CONFIG --port N [--workdir DIR] [--python PATH] [--rate-limits]
[--check]`` brings it up and prints the URL and the header a client sends, then serves until interrupted
(``--check``: lists the tools and calls echo with an SDK client instead, then stops). ``start()`` does the same
for ``bench.peers``. Everything runs in ContextForge's own environment (installed, pinned, under
``.cache/peers`` on first use); this module only starts processes and speaks its REST API.

The steps are the ones its documentation gives a user with stdio servers:

1. ``mcpgateway`` on loopback with a SQLite database in the work directory, fresh secrets and a
   platform admin (its ``.env`` settings, given as environment variables);
2. an admin bearer token from ``python -m mcpgateway.utils.create_jwt_token``;
3. one ``python -m mcpgateway.translate --stdio CMD --expose-sse`` bridge per server;
4. ``POST /gateways`` for each bridge (ContextForge connects, lists and stores its tools);
5. ``POST /servers``: one virtual server holding every tool, which clients reach at
   ``/servers/<id>/mcp`` (streamable HTTP) with the bearer token, or over stdio through
   ``python -m mcpgateway.wrapper`` (``Running.stdio``).

Only loopback is used: the bridges and the gateway bind 127.0.0.1, and loopback registrations need
``SSRF_ALLOW_LOCALHOST=true`` (ContextForge blocks them by default). It comes up without any network
but loopback (checked in a network namespace holding only ``lo``).

What a client meets (1.0.7.post20260921): tools named ``<server>-<tool>`` with ``_`` turned into ``-``
(``everything-echo``, ``time-get-current-time``), a per-user limit of 100 MCP requests a minute by
default (off here unless ``rate_limits``), and one translate bridge per server that shares its one
stdio process among all the gateway's upstream sessions: it sends every line the server writes to
every session and matches answers by JSON-RPC id alone (``mcpgateway/translate.py``, ``_PubSub`` and
the ``/message`` handler, which ignores ``session_id``). Concurrent clients' calls carry the same ids,
so they receive each other's answers: ``bench.load``'s checked echo loop sees it with four clients.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import anyio
import httpx2

from bench.common import ROOT
from bench.load import HOST, free_port

SPEC = "mcp-contextforge-gateway==1.0.7.post20260921"
HOME = ROOT / ".cache" / "peers" / f"mcp-contextforge-gateway-{SPEC.partition('==')[2]}"
ADMIN = "admin@example.com"
UP_S = 180.0
"""Bound on the gateway's start, each bridge's start and each registration."""
TAIL = 20
"""Log lines quoted when something does not come up."""


class ContextForgeError(RuntimeError):
    """ContextForge did not come up; the message ends with the last lines of the log concerned."""


def ensure_python(home: Path = HOME) -> Path:
    """ContextForge's interpreter, its environment installed on first use."""
    python = home / "bin" / "python"
    marker = home / ".installed"
    if marker.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, capture_output=True, timeout=300)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", SPEC], capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise ContextForgeError(f"{SPEC}: {last}")
    marker.write_text(SPEC)
    return python


def tail(path: Path, lines: int = TAIL) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class Running:
    """ContextForge serving: where a client connects, what it sends, and every process started."""

    url: str
    """The virtual server's streamable HTTP endpoint."""
    headers: dict[str, str]
    """What a client sends with every request (the admin bearer token)."""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=lambda: [])
    workdir: Path = Path()
    timings: dict[str, float] = field(default_factory=lambda: {})
    """Seconds from the start to: ``gateway`` (healthy), ``bridges`` (all answering), ``registered``
    (every server's tools stored), ``ready`` (the virtual server created)."""
    tools: list[str] = field(default_factory=lambda: [])
    """The tool names ContextForge stored (as its REST API lists them)."""
    logs: list[IO[bytes]] = field(default_factory=lambda: [], repr=False)
    """The open log files, closed by ``stop``."""
    python: Path = Path()
    env: dict[str, str] = field(default_factory=lambda: {}, repr=False)
    """The settings the gateway runs with (its secrets too): ContextForge's tools read them."""

    def stdio(self) -> tuple[list[str], dict[str, str]]:
        """(command, environment) of ``mcpgateway.wrapper``, the stdio server ContextForge's documentation
        gives stdio clients: it forwards to the virtual server with the bearer token."""
        command = [str(self.python), "-m", "mcpgateway.wrapper", "--url", self.url]
        return [*command, "--auth", self.headers["Authorization"]], {**self.env, "MCP_WRAPPER_LOG_LEVEL": "ERROR"}

    @property
    def pids(self) -> list[int]:
        """The gateway and the bridges; each server is a child of its bridge."""
        return [proc.pid for proc in self.procs]

    def stop(self) -> None:
        """Ends the gateway and the bridges (and the servers under them), waiting a bounded time."""
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        for file in self.logs:
            file.close()

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def gateway_env(workdir: Path, port: int, rate_limits: bool = False) -> dict[str, str]:
    """The settings a user would put in ContextForge's ``.env`` for a local, single-user gateway, with
    fresh secrets where its ``init_secrets`` script would make them.

    ``rate_limits``: keep its default per-user limits (100 MCP requests a minute, then a 15-minute
    lockout after 5 violations), which a load test meets at once; off, ``RATE_LIMITING_ENABLED=false``."""
    password = secrets.token_urlsafe(18) + "aA1!"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MCPGATEWAY_", "DATABASE_"))}
    env.update(
        {
            "HOST": HOST,
            "PORT": str(port),
            "DATABASE_URL": f"sqlite:///{workdir / 'mcp.db'}",
            "JWT_SECRET_KEY": secrets.token_urlsafe(32),
            "AUTH_ENCRYPTION_SECRET": secrets.token_urlsafe(32),
            "BASIC_AUTH_PASSWORD": secrets.token_urlsafe(18),
            "PLATFORM_ADMIN_EMAIL": ADMIN,
            "PLATFORM_ADMIN_PASSWORD": password,
            "AUTH_REQUIRED": "true",
            "MCPGATEWAY_UI_ENABLED": "false",
            "MCPGATEWAY_ADMIN_API_ENABLED": "true",
            "CACHE_TYPE": "database",
            "SSRF_ALLOW_LOCALHOST": "true",
            "LOG_LEVEL": "WARNING",
        }
    )
    if not rate_limits:
        env["RATE_LIMITING_ENABLED"] = "false"
    return env


def wait_for(what: str, check: Callable[[], bool], deadline: float, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Polls ``check`` until it holds; raises with the log's tail if ``proc`` ends or time runs out."""
    while True:
        if proc.poll() is not None:
            raise ContextForgeError(f"{what}: exited with {proc.returncode}; last lines of {log}:\n{tail(log)}")
        try:
            if check():
                return
        except httpx2.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise ContextForgeError(f"{what}: not up after {UP_S:.0f} s; last lines of {log}:\n{tail(log)}")
        time.sleep(0.2)


def start(
    config: Path, port: int, workdir: Path | None = None, python: Path | None = None, *, rate_limits: bool = False
) -> Running:
    """Brings ContextForge up on ``127.0.0.1:port`` in front of the config's stdio servers.

    ``workdir`` holds the database and the logs (default: a new temporary directory, left in place);
    ``python`` is ContextForge's interpreter (default: its environment, installed on first use);
    ``rate_limits`` keeps its default request limits (see ``gateway_env``).

    Every wait is bounded by ``UP_S``; on failure everything started is stopped and
    ``ContextForgeError`` names the step and quotes its log."""
    servers = read_config(config)
    python = python or ensure_python()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="contextforge-"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = gateway_env(workdir, port, rate_limits)
    running = Running(url="", headers={}, workdir=workdir, python=python, env=env)
    t0 = time.monotonic()

    def spawn(name: str, command: list[str], extra: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = workdir / f"{name}.log"
        file = log.open("wb")
        running.logs.append(file)
        proc = subprocess.Popen(
            command,
            cwd=workdir,
            env={**env, **extra},
            stdin=subprocess.DEVNULL,
            stdout=file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        running.procs.append(proc)
        return proc, log

    try:
        base = f"http://{HOST}:{port}"
        gateway_command = [str(python), "-m", "mcpgateway.cli", "--host", HOST, "--port", str(port)]
        gateway, gateway_log = spawn("gateway", gateway_command, {})
        bridges: dict[str, tuple[int, subprocess.Popen[bytes], Path]] = {}
        for name, entry in servers.items():
            bridge_port = free_port()
            stdio = shlex.join([entry["command"], *entry.get("args", [])])
            command = [str(python), "-m", "mcpgateway.translate", "--stdio", stdio, "--expose-sse"]
            command += ["--host", HOST, "--port", str(bridge_port), "--logLevel", "warning"]
            proc, log = spawn(f"bridge-{name}", command, dict(entry.get("env") or {}))
            bridges[name] = (bridge_port, proc, log)
        running.headers = {"Authorization": f"Bearer {admin_token(python, workdir, env)}"}
        with httpx2.Client(base_url=base, headers=running.headers, timeout=UP_S) as http:
            deadline = time.monotonic() + UP_S
            wait_for("gateway", lambda: http.get("/health").status_code == 200, deadline, gateway, gateway_log)
            running.timings["gateway"] = time.monotonic() - t0
            for name, (bridge_port, proc, log) in bridges.items():
                wait_for(f"bridge {name}", lambda p=bridge_port: healthy(p), deadline, proc, log)
            running.timings["bridges"] = time.monotonic() - t0
            for name, (bridge_port, _proc, _log) in bridges.items():
                url = f"http://{HOST}:{bridge_port}/sse"
                register(http, name, url, time.monotonic() + UP_S, gateway, gateway_log)
            tools: list[dict[str, Any]] = http.get("/tools", params={"limit": 0}).json()
            running.tools = [str(tool["name"]) for tool in tools]
            running.timings["registered"] = time.monotonic() - t0
            server = {"name": "all-servers", "associated_tools": [str(tool["id"]) for tool in tools]}
            answer = http.post("/servers", json={"server": server, "visibility": "public"})
            if answer.status_code >= 300:
                raise ContextForgeError(f"POST /servers: {answer.status_code} {answer.text[:500]}")
            running.url = f"{base}/servers/{answer.json()['id']}/mcp"
            running.timings["ready"] = time.monotonic() - t0
    except BaseException:
        running.stop()
        raise
    return running


def read_config(config: Path) -> dict[str, dict[str, Any]]:
    """The stdio servers of an ``{"mcpServers": {name: {command, args, env}}}`` file."""
    try:
        servers = json.loads(config.read_text()).get("mcpServers")
    except (OSError, ValueError, AttributeError) as exc:
        raise ContextForgeError(f"{config}: {exc}") from None
    if not isinstance(servers, dict) or not servers:
        raise ContextForgeError(f"{config}: no servers under mcpServers")
    for name, entry in cast(dict[str, Any], servers).items():
        if not isinstance(entry, dict) or not isinstance(cast(dict[str, Any], entry).get("command"), str):
            raise ContextForgeError(f"{config}: server {name!r} has no command (only stdio servers are bridged)")
    return cast(dict[str, dict[str, Any]], servers)


def admin_token(python: Path, workdir: Path, env: dict[str, str]) -> str:
    """The admin bearer token, made with ContextForge's own tool and the gateway's secret."""
    command = [str(python), "-m", "mcpgateway.utils.create_jwt_token", "--username", ADMIN, "--exp", "10080"]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=UP_S)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ContextForgeError(f"create_jwt_token: exited with {done.returncode}: {last}")
    return lines[-1]


def register(
    http: httpx2.Client, name: str, url: str, deadline: float, gateway: subprocess.Popen[bytes], log: Path
) -> None:
    """``POST /gateways`` for one bridge; when ContextForge accepts it for later (202, ``pending``),
    waits until it is no longer pending."""
    answer = http.post("/gateways", json={"name": name, "url": url, "transport": "SSE"})
    if answer.status_code >= 300:
        raise ContextForgeError(
            f"POST /gateways {name}: {answer.status_code} {answer.text[:500]}; last lines of {log}:\n{tail(log)}"
        )
    if answer.status_code == 202:
        ident = answer.json()["id"]

        def settled() -> bool:
            return http.get(f"/gateways/{ident}").json().get("status") != "pending"

        wait_for(f"gateway {name} registration", settled, deadline, gateway, log)


def healthy(port: int) -> bool:
    """A translate bridge answers (its ``/healthz``)."""
    return httpx2.get(f"http://{HOST}:{port}/healthz", timeout=5).status_code == 200


async def check(
    running: Running, tool: str | None = None, arguments: dict[str, Any] | None = None
) -> tuple[list[str], str]:
    """Lists the tools with an SDK client over streamable HTTP and calls ``tool`` (by default the first
    listed ``*echo`` with a ``message``): the names listed and the call's text."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=running.headers, timeout=UP_S) as http:
        async with streamable_http_client(running.url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = [listed.name for listed in (await session.list_tools()).tools]
                if tool is None:
                    tool = next((name for name in names if name.endswith("echo")), None)
                    arguments = {"message": "hello"}
                if tool is None:
                    return names, ""
                result = await session.call_tool(tool, arguments or {})
                return names, "".join(getattr(block, "text", "") for block in result.content)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peer_contextforge", description="ContextForge in front of an mcpServers configuration."
    )
    parser.add_argument("config", type=Path, help="an mcpServers configuration of stdio servers")
    parser.add_argument("--port", type=int, required=True, help="the gateway's port on 127.0.0.1")
    parser.add_argument("--workdir", type=Path, help="database and logs (default: a new temporary directory)")
    parser.add_argument("--python", type=Path, help="ContextForge's interpreter (default: installed on first use)")
    parser.add_argument("--rate-limits", action="store_true", help="keep ContextForge's default request limits")
    parser.add_argument(
        "--check", action="store_true", help="list the tools and call echo with an SDK client, then stop"
    )
    args = parser.parse_args()
    try:
        running = start(args.config, args.port, args.workdir, args.python, rate_limits=args.rate_limits)
    except (ContextForgeError, OSError, subprocess.SubprocessError) as exc:
        sys.exit(f"contextforge: {exc}")
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    with running:
        print(running.url, flush=True)
        print(f"Authorization: {running.headers['Authorization']}", flush=True)
        print(json.dumps({"timings": running.timings, "tools": running.tools, "pids": running.pids}), flush=True)
        if args.check:
            names, echoed = anyio.run(check, running)
            print(json.dumps({"listed": names, "echo": echoed}), flush=True)
            return
        signal.sigwait({signal.SIGINT, signal.SIGTERM})


if __name__ == "__main__":
    main()
