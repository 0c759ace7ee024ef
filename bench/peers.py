"""Side by side with what a user would pick instead: ``python -m bench.peers [--quick] [--json FILE]``.

Each peer is installed, pinned, into its own environment under ``.cache/peers`` (PyPI) on first use,
and put in front of the same servers as ``lazymcp gateway``:

- five real servers: server-everything, server-memory and server-filesystem (npm), mcp-server-time and
  mcp-server-git (PyPI), pinned and given their arguments by ``tests/five_servers.py``, as the tests and
  docs/gateway.md's ``stats`` example have them (the time server in zone ``UTC``, so that its tool text is
  the same on every machine), installed under ``.cache``;
- thirty servers: the 30 captured catalogs of ``../shared/catalogs`` (954 tools), each served by
  ``lazymcp serve --catalog FILE --mode eager`` (its full tools to every client, as the real server
  would list them).

Measured in one run, each peer beside lazymcp and beside the servers themselves (``direct``):

- the tokens of what a stock client's model sees of the listing (cl100k, each tool's name,
  description and input schema; ``lazymcp.tools.tokens``): one list for a front, and for servers a
  client reaches one by one (``direct``, mcp-proxy) each server's list counted and added, as
  ``lazymcp stats --config`` counts them (``ListingSize.of_servers``);
- spawn to the first ``tools/list`` answer, raw JSON-RPC over stdio, cold (lazymcp: an empty manifest
  cache) and warm (lazymcp: the manifests of the cold run; the others keep nothing between runs);
- the resident memory of the front and every process under it after that listing;
- ``tools/call`` of server-everything's ``echo``, median and p99, interleaved round by round with a
  raw JSON-RPC client over stdio;
- 50 concurrent clients over streamable HTTP, each its own session calling ``echo`` in a loop:
  calls per second, p50 and p99 (one server behind each front; ``bench.load``'s client, which checks
  every answer);
- search Recall@5 and MRR on the dev set (``../shared/evals``) for each peer that offers search,
  through its own search tool over the 30 servers (20 names requested).

It writes ``bench/PEERS.md`` (versions, date, machine, and the machine's load at the start and end of each
run, since others may share it) and the table between the ``peers`` markers of
``docs/compatibility.md``; a peer that failed to install or run is named with the reason. Not part of the test
suite; ``tests/docs/test_bench.py`` checks that the docs' table is the one in ``PEERS.md``, and
``tests/docs/test_figures.py`` that its five servers come to the tokens of docs/gateway.md's ``stats`` example.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, cast

from bench.common import CATALOGS, ROOT, SHARED, machine
from bench.gateway import Raw
from bench.load import HOST, LoadClient, Problem, Tally, Target, children, free_port, percentile, rss_kib
from bench.proxy import CACHE as NPM_CACHE
from bench.proxy import everything_command
from lazymcp.tools.tokens import ListingSize
from lazymcp.version import __version__
from tests.five_servers import NPM_PACKAGES, PYPI_PACKAGES, Installs

PEERS_DIR = ROOT / ".cache" / "peers"
INSTALLS = Installs(NPM_CACHE, ROOT / ".cache" / "py-servers")
QUERIES = SHARED / "evals" / "authored" / "queries.json"
PEERS_MD = Path(__file__).with_name("PEERS.md")
PEERS_DOC = ROOT / "docs" / "compatibility.md"
"""The page that shows the table."""
START, END = "<!-- peers:start -->", "<!-- peers:end -->"
DEPTH = 20
"""Names requested of each search, as the dev set's metrics read them."""
STARTUP_S = 300.0
"""Bound on a front's start, its first listing, and a session's first call (which may start servers)."""
WARM_CALLS = 5
"""Untimed calls first, through each front."""
MIN_CALLS = 20
"""Timed calls through each front, whatever they cost."""
SECTIONS = ("listing", "calls", "http", "search")

INSTALLABLE = {"fastmcp": "fastmcp==4.2.3", "mcp-proxy": "mcp-proxy==0.13.0"}
"""Peers installed and measured: name -> pinned requirement."""
CONTEXTFORGE_SPEC = "mcp-contextforge-gateway==1.0.7.post20260921"
CONTEXTFORGE = f"ContextForge {CONTEXTFORGE_SPEC.partition('==')[2].partition('.post')[0]}"
"""IBM's gateway, brought up over HTTP as its documentation shows (``bench.peer_contextforge``)."""

NOT_MEASURED = {
    "1MCP (`@1mcp/agent`)": "the npm registry answers 404 for `@1mcp/agent`: it cannot be installed here",
    "mcpproxy-go": "published as Go binaries only, on neither PyPI nor npm",
    "LiteLLM's MCP gateway": "not attempted: its proxy server install is the whole LiteLLM stack",
}


# --- installing -----------------------------------------------------------------------------------


def peer_python(name: str) -> Path | str:
    """The interpreter of the peer's own environment, installed on first use; a reason when it cannot be."""
    spec = INSTALLABLE[name]
    home = PEERS_DIR / f"{name}-{spec.partition('==')[2]}"
    python = home / "bin" / "python"
    marker = home / ".installed"
    if marker.exists():
        return python
    try:
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, capture_output=True, timeout=300)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", spec], capture_output=True, text=True, timeout=900
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{spec}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        return f"{spec}: {last}"
    marker.write_text(spec)
    return python


def real_servers(root: Path) -> dict[str, dict[str, Any]] | str:
    """The five real servers as ``mcpServers`` entries (installed on first use), or why not."""
    if everything_command() is None:
        return "node/npm or the npm registry is not available"
    if not all(INSTALLS.node_entry(name).exists() for name in ("memory", "filesystem")):
        command = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(INSTALLS.npm)]
        if subprocess.run([*command, *NPM_PACKAGES], capture_output=True, timeout=600).returncode != 0:
            return f"npm install {' '.join(NPM_PACKAGES)} failed"
    marker = INSTALLS.python / "lazymcp-pins.json"
    if not (marker.exists() and json.loads(marker.read_text()) == list(PYPI_PACKAGES)):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(INSTALLS.python)], check=True, timeout=300)
        pip = [str(INSTALLS.python / "bin" / "python"), "-m", "pip", "install", "-q", *PYPI_PACKAGES]
        if subprocess.run(pip, capture_output=True, timeout=900).returncode != 0:
            return f"pip install {' '.join(PYPI_PACKAGES)} failed"
        marker.write_text(json.dumps(list(PYPI_PACKAGES)))
    files = root / "files"
    files.mkdir(exist_ok=True)
    return INSTALLS.entries(files, root / "m.json", ROOT)


def catalog_servers() -> dict[str, dict[str, Any]]:
    """The 30 captured catalogs, each served in full by ``lazymcp serve``."""
    files = sorted(path for path in CATALOGS.glob("*.json") if path.stem != "combined")
    python = sys.executable
    return {
        path.stem: {"command": python, "args": ["-m", "lazymcp", "serve", "--catalog", str(path), "--mode", "eager"]}
        for path in files
    }


# --- the fronts -----------------------------------------------------------------------------------


@dataclass
class Front:
    """One way of putting servers in front of a client: how to run it and how its names look."""

    name: str
    stdio: Callable[[Path], list[str]]
    """config file -> the command serving them over stdio."""
    http: Callable[[Path, int], list[str]] | None
    """config file, port -> the command serving them over streamable HTTP."""
    tool: Callable[[str, str], str]
    """server, tool -> the name a client calls."""
    server_of: Callable[[str, list[str]], tuple[str, str]] | None = None
    """a listed name, the servers -> (server, tool)."""
    call_through: str | None = None
    """the tool every call goes through (a search transform's ``call_tool``), if any."""
    search: Callable[[str], tuple[str, dict[str, Any]]] | None = None
    """query -> (search tool, its arguments) asking for ``DEPTH`` names."""
    path: str = "/mcp"
    reused: Callable[[Path], list[str]] | None = None
    """config file -> the command searching with its servers kept running, where that differs (the
    search ranks the same; it spares the dev set's 150 queries 30 server starts each)."""


def _lazymcp_front() -> Front:
    # Every listing waits for every server's first list, as the peers' do (lazymcp's default answers
    # after 10 s without the servers still starting, and announces their tools when they come).
    gateway = [sys.executable, "-m", "lazymcp", "gateway", "--log-level", "error", "--first-list-wait", "600"]
    return Front(
        name=f"lazymcp {__version__} gateway",
        stdio=lambda config: [*gateway, "--config", str(config)],
        http=lambda config, port: [
            *[*gateway, "--config", str(config)],
            *["--http", f"{HOST}:{port}", "--max-sessions", "80"],
        ],
        tool=lambda server, tool: f"{server}__{tool}",
        server_of=lambda name, _servers: (name.partition("__")[0], name.partition("__")[2]),
        search=lambda query: ("search_tools", {"query": query, "limit": DEPTH}),
    )


def _fastmcp_fronts(python: Path) -> list[Front]:
    script = str(Path(__file__).with_name("peer_fastmcp.py"))

    def server_of(name: str, servers: list[str]) -> tuple[str, str]:
        owner = max((s for s in servers if name.startswith(f"{s}_")), key=len, default="")
        return owner, name[len(owner) + 1 :]

    proxy = Front(
        name=f"FastMCP {INSTALLABLE['fastmcp'].partition('==')[2]} proxy",
        stdio=lambda config: [str(python), script, str(config)],
        http=lambda config, port: [str(python), script, str(config), "--http", str(port)],
        tool=lambda server, tool: f"{server}_{tool}",
        server_of=server_of,
    )
    searching = Front(
        name=f"FastMCP {INSTALLABLE['fastmcp'].partition('==')[2]} proxy + BM25 search",
        stdio=lambda config: [str(python), script, str(config), "--search"],
        reused=lambda config: [str(python), script, str(config), "--search", "--reuse"],
        http=None,
        tool=lambda server, tool: f"{server}_{tool}",
        server_of=server_of,
        call_through="call_tool",
        search=lambda query: ("search_tools", {"query": query}),
    )
    return [proxy, searching]


def _mcp_proxy_front(python: Path) -> Front:
    binary = str(python.parent / "mcp-proxy")
    return Front(
        name=f"mcp-proxy {INSTALLABLE['mcp-proxy'].partition('==')[2]}",
        stdio=lambda config: [],  # it serves stdio servers over HTTP only, each at its own path
        http=lambda config, port: [binary, "--port", str(port), "--named-server-config", str(config)],
        tool=lambda server, tool: tool,
        path="/servers/{server}/mcp",
    )


# --- measuring ------------------------------------------------------------------------------------


def write_config(root: Path, name: str, servers: dict[str, dict[str, Any]]) -> Path:
    path = root / f"{name}.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def tree_rss_kib(pid: int) -> tuple[int, int]:
    """(resident KiB of ``pid`` and every process under it, how many processes that is)."""
    kids = children(pid)
    return rss_kib(pid) + sum(rss_kib(kid) for kid in kids), 1 + len(kids)


def list_all(client: Raw, within: float) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    for _ in range(1000):
        answer = client.request("tools/list", params, within)
        if "result" not in answer:
            raise RuntimeError(f"tools/list: {json.dumps(answer)[:200]}")
        tools += answer["result"].get("tools", [])
        cursor = answer["result"].get("nextCursor")
        if not cursor:
            return tools
        params = {"cursor": cursor}
    raise RuntimeError("tools/list: more than 1000 pages")


def visible_tokens(tools: list[dict[str, Any]]) -> int:
    return ListingSize.of(tools).visible.tokens


def servers_listed(listings: list[list[dict[str, Any]]]) -> dict[str, int]:
    """The tools of servers a client lists one by one, and their tokens counted server by server."""
    return {
        "tools": sum(map(len, listings)),
        "tokens": ListingSize.of_servers(listings).visible.tokens,
    }


class spawned:
    """A raw client of a spawned command, closed (and killed if need be) on leaving."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.client = Raw(command, env)

    def __enter__(self) -> Raw:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        if self.client.process.poll() is None:
            self.client.process.kill()


def listed(seconds: float, tools: list[dict[str, Any]], tree: tuple[int, int]) -> dict[str, Any]:
    """A first listing's figures: its time, its tools and their tokens, the memory of the processes then."""
    return {
        "ms": round(seconds * 1000),
        "tools": len(tools),
        "tokens": visible_tokens(tools),
        "rss_kib": tree[0],
        "processes": tree[1],
    }


def first_listing(command: list[str], env: dict[str, str], within: float) -> dict[str, Any]:
    """Spawn to the first ``tools/list`` answer; the listing's tokens; the tree's memory after it."""
    started = time.perf_counter()
    with spawned(command, env) as client:
        client.handshake(within)
        tools = list_all(client, within)
        seconds = time.perf_counter() - started
        time.sleep(0.5)  # children that were still starting have their memory
        tree = tree_rss_kib(client.process.pid)
    return listed(seconds, tools, tree)


def direct_listing(servers: dict[str, dict[str, Any]], env: dict[str, str], within: float) -> dict[str, Any]:
    """Each server on its own: the tools a client connected to every one of them lists."""
    listings: list[list[dict[str, Any]]] = []
    rss = 0
    for entry in servers.values():
        with spawned([entry["command"], *entry.get("args", [])], {**env, **entry.get("env", {})}) as client:
            client.handshake(within)
            listings.append(list_all(client, within))
            rss += tree_rss_kib(client.process.pid)[0]
    return {**servers_listed(listings), "rss_kib": rss, "processes": len(servers)}


def startup(front: Front, config: Path, env: dict[str, str], repeats: int, within: float) -> dict[str, Any]:
    """Cold and warm first listings (lazymcp's cold runs each get an empty manifest cache)."""
    cold: list[dict[str, Any]] = []
    warm: list[dict[str, Any]] = []
    for repeat in range(repeats):
        cache = config.parent / f"cache-{config.stem}-{front.name.split()[0]}-{repeat}"
        run_env = {**env, "LAZYMCP_CACHE_DIR": str(cache)}
        cold.append(first_listing(front.stdio(config), run_env, within))
        warm.append(first_listing(front.stdio(config), run_env, within))

    def pick(runs: list[dict[str, Any]], key: str) -> int:
        return round(statistics.median(run[key] for run in runs))

    return {
        "cold_ms": pick(cold, "ms"),
        "warm_ms": pick(warm, "ms"),
        "tools": warm[-1]["tools"],
        "tokens": warm[-1]["tokens"],
        "cold_rss_kib": pick(cold, "rss_kib"),
        "warm_rss_kib": pick(warm, "rss_kib"),
        "cold_processes": cold[-1]["processes"],
        "warm_processes": warm[-1]["processes"],
    }


def call_params(front: Front | None, message: str) -> dict[str, Any]:
    arguments = {"message": message}
    if front is None:
        return {"name": "echo", "arguments": arguments}
    name = front.tool("everything", "echo")
    if front.call_through is not None:
        return {"name": front.call_through, "arguments": {"name": name, "arguments": arguments}}
    return {"name": name, "arguments": arguments}


def calls(
    fronts: list[Front], config: Path, direct: list[str], env: dict[str, str], rounds: int, budget_s: float
) -> dict[str, Any]:
    """``tools/call echo`` round trips, interleaved: direct and through each front. A front whose calls have
    taken ``budget_s`` in all stops there (a proxy that starts a server per call takes seconds a call)."""
    targets: dict[str, tuple[list[str], Front | None]] = {"direct": (direct, None)}
    targets |= {front.name: (front.stdio(config), front) for front in fronts}
    clients: dict[str, Raw] = {}
    samples: dict[str, list[float]] = {name: [] for name in targets}
    spent: dict[str, float] = dict.fromkeys(targets, 0.0)
    failures: dict[str, str] = {}
    try:
        for name, (command, _) in targets.items():
            clients[name] = Raw(command, env)
            clients[name].handshake(120.0)
        for number in range(rounds + WARM_CALLS):
            for name, client in clients.items():
                if name in failures or (spent[name] > budget_s and len(samples[name]) >= MIN_CALLS):
                    continue
                text = f"{name}-{number}"
                started = time.perf_counter()
                answer = client.request("tools/call", call_params(targets[name][1], text), 60.0)
                elapsed = time.perf_counter() - started
                if number >= WARM_CALLS:
                    spent[name] += elapsed
                result = answer.get("result", {})
                if text not in json.dumps(result) or result.get("isError"):
                    failures[name] = json.dumps(answer)[:300]
                elif number >= WARM_CALLS:
                    samples[name].append(elapsed)
    finally:
        for client in clients.values():
            client.close()
    found: dict[str, Any] = {}
    for name, values in samples.items():
        if not values:
            found[name] = {"failed": failures.get(name, "no sample")}
            continue
        found[name] = {
            "median_us": round(statistics.median(values) * 1e6),
            "p99_us": round(percentile(values, 0.99) * 1e6),
            "calls": len(values),
        }
    base = found["direct"].get("median_us")
    for value in found.values():
        if base and "median_us" in value:
            value["x_direct"] = round(value["median_us"] / base, 2)
    return found


async def http_load(
    url: str,
    tools: list[str],
    clients: int,
    seconds: float,
    tree: Callable[[], tuple[int, int]],
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``clients`` sessions calling echo for ``seconds``, each after one untimed call (which starts what
    the front starts on a session's first call); every answer checked. ``tools``: the names echo may
    have there, the first one listed is called."""
    tally = Tally()
    pool = [LoadClient(number, url, "2025-11-25", tally, headers=headers) for number in range(clients)]
    gate = asyncio.Semaphore(4)

    async def open_one(client: LoadClient) -> LoadClient | None:
        async with gate:
            try:
                await client.open()
                return client
            except Exception as exc:  # a refused or failed session counts, and the run goes on
                tally.problem("failed", f"open: {type(exc).__name__}: {exc}")
        await client.close()
        return None

    opened = [client for client in await asyncio.gather(*map(open_one, pool)) if client is not None]
    if not opened:
        raise RuntimeError(f"no session opened: {dict(tally.problems.most_common(2))}")
    _, listing = await opened[0].post("tools/list", {}, within=STARTUP_S)
    listed = {tool.get("name") for tool in listing.get("result", {}).get("tools", [])}
    tool = next((name for name in tools if name in listed), tools[0])
    latencies: list[float] = []

    async def loop(client: LoadClient, deadline: float | None) -> None:
        number = 0
        while (time.monotonic() < deadline) if deadline is not None else number == 0:
            number += 1
            text = f"c{client.number}-{number}"
            started = time.perf_counter()
            try:
                call = {"name": tool, "arguments": {"message": text}}
                _, answer = await client.post("tools/call", call, within=STARTUP_S if deadline is None else 30.0)
            except Problem as problem:
                tally.problem(problem.kind, problem.detail)
                continue
            except Exception as exc:  # a transport error or a timeout
                tally.problem("failed", f"{type(exc).__name__}: {exc}")
                continue
            result = answer.get("result", {})
            if text not in json.dumps(result) or result.get("isError"):
                tally.problem("wrong", json.dumps(answer)[:200])
                continue
            if deadline is not None:
                latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(loop(client, None) for client in opened))
    started = time.monotonic()
    await asyncio.gather(*(loop(client, started + seconds) for client in opened))
    elapsed = time.monotonic() - started
    rss, processes = tree()  # while every session is still open
    await asyncio.gather(*(client.close() for client in opened))
    return {
        "sessions": len(opened),
        "calls_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 1) if latencies else None,
        "failed": tally.failed + tally.lost + tally.duplicated + tally.wrong,
        "problems": dict(tally.problems.most_common(3)),
        "rss_kib": rss,
        "processes": processes,
    }


def http_section(
    fronts: list[Front],
    root: Path,
    everything: dict[str, Any],
    clients: int,
    seconds: float,
    *,
    direct: bool = True,
    contextforge: bool = False,
) -> dict[str, Any]:
    config = write_config(root, "http", {"everything": everything})
    results: dict[str, Any] = {}
    port = free_port()
    plans: list[tuple[str, Target, str, list[str]]] = []
    if direct:
        target = Target("direct", [everything["command"], *everything["args"][:-1], "streamableHttp"], port)
        plans.append(("direct", target, f"http://{HOST}:{port}/mcp", ["echo"]))
    for front in fronts:
        if front.http is None:
            continue
        port = free_port()
        path = front.path.format(server="everything")
        plans.append(
            (
                front.name,
                Target(front.name, front.http(config, port), port),
                f"http://{HOST}:{port}{path}",
                [front.tool("everything", "echo"), "echo"],
            )
        )
    for name, target, url, tool in plans:
        saved = os.environ.get("PORT")
        os.environ["PORT"] = str(target.port)  # server-everything's own HTTP mode reads its port from PORT
        try:
            target.start()
        finally:
            if saved is None:
                os.environ.pop("PORT", None)
            else:
                os.environ["PORT"] = saved
        try:
            results[name] = asyncio.run(_loaded(target, url, tool, clients, seconds))
        except Exception as exc:  # a peer that fails is named with its reason, and the run goes on
            results[name] = {"failed_to_run": f"{type(exc).__name__}: {str(exc)[:300]}"}
        finally:
            target.stop()
    if contextforge:
        try:
            results[CONTEXTFORGE] = contextforge_load(config, root, clients, seconds)
        except Exception as exc:  # named with its reason, and the run goes on
            results[CONTEXTFORGE] = {"failed_to_run": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return results


async def _loaded(target: Target, url: str, tools: list[str], clients: int, seconds: float) -> dict[str, Any]:
    await target.wait_listening()
    process = target.process
    assert process is not None
    return await http_load(url, tools, clients, seconds, lambda: tree_rss_kib(process.pid))


def pids_rss_kib(pids: list[int]) -> tuple[int, int]:
    """(resident KiB of ``pids`` and every process under them, how many processes that is)."""
    trees = [tree_rss_kib(pid) for pid in pids]
    return sum(rss for rss, _ in trees), sum(count for _, count in trees)


def contextforge_load(config: Path, root: Path, clients: int, seconds: float) -> dict[str, Any]:
    from bench.peer_contextforge import start

    with start(config, free_port(), root / "contextforge-http") as running:
        tree = partial(pids_rss_kib, running.pids)
        return asyncio.run(http_load(running.url, ["everything-echo", "echo"], clients, seconds, tree, running.headers))


def contextforge_listing(root: Path, servers: dict[str, dict[str, Any]], within: float) -> dict[str, Any]:
    """ContextForge from spawn to its virtual server's first listing over HTTP, and its whole tree then."""
    from bench.peer_contextforge import start

    config = write_config(root, f"contextforge-{len(servers)}", servers)
    started = time.perf_counter()
    with start(config, free_port(), root / f"contextforge-{len(servers)}") as running:

        async def listing() -> list[dict[str, Any]]:
            client = LoadClient(0, running.url, "2025-11-25", Tally(), headers=running.headers)
            try:
                await client.open()
                tools: list[dict[str, Any]] = []
                params: dict[str, Any] = {}
                for _ in range(1000):
                    _, answer = await client.post("tools/list", params, within=within)
                    tools += answer["result"]["tools"]
                    cursor = answer["result"].get("nextCursor")
                    if not cursor:
                        return tools
                    params = {"cursor": cursor}
                raise RuntimeError("tools/list: more than 1000 pages")
            finally:
                await client.close()

        tools = asyncio.run(listing())
        seconds = time.perf_counter() - started
        tree = pids_rss_kib(running.pids)
    return listed(seconds, tools, tree)


def mcp_proxy_listing(front: Front, root: Path, servers: dict[str, dict[str, Any]], within: float) -> dict[str, Any]:
    """What a client of mcp-proxy lists: each server at its own path, over HTTP."""
    assert front.http is not None
    named = {
        name: {
            "command": entry["command"],
            "args": entry.get("args", []),
            **({"env": entry["env"]} if "env" in entry else {}),
        }
        for name, entry in servers.items()
    }
    config = write_config(root, f"named-{len(servers)}", named)
    port = free_port()
    target = Target(front.name, front.http(config, port), port, startup_timeout=within)
    started = time.perf_counter()
    target.start()

    async def go() -> dict[str, Any]:
        await target.wait_listening()
        listings: list[list[dict[str, Any]]] = []
        tally = Tally()
        for number, server in enumerate(servers):
            client = LoadClient(number, f"http://{HOST}:{port}{front.path.format(server=server)}", "2025-11-25", tally)
            try:
                await client.open()
                _, answer = await client.post("tools/list", {}, within=within)
                listings.append(answer["result"]["tools"])
            finally:
                await client.close()
        return {"ms": round((time.perf_counter() - started) * 1000), **servers_listed(listings)}

    try:
        found = asyncio.run(go())
        assert target.process is not None
        found["rss_kib"], found["processes"] = tree_rss_kib(target.process.pid)
        return found
    finally:
        target.stop()


def search_quality(front: Front, config: Path, env: dict[str, str], servers: list[str], quick: bool) -> dict[str, Any]:
    """Recall@5 and MRR of the front's own search over the 30 servers, on the dev set."""
    assert front.search is not None and front.server_of is not None
    queries = json.loads(QUERIES.read_text())
    if quick:
        queries = queries[::10]
    recalls: list[float] = []
    ranks: list[float] = []
    with spawned((front.reused or front.stdio)(config), env) as client:
        client.handshake(STARTUP_S)
        list_all(client, STARTUP_S)  # as a client would: its first listing, which waits for every server
        for query in queries:
            tool, arguments = front.search(query["query"])
            answer = client.request("tools/call", {"name": tool, "arguments": arguments}, 120.0)
            names = found_names(answer, front, servers)[:DEPTH]
            relevant = set(query["relevant"])
            recalls.append(len(relevant & set(names[:5])) / len(relevant))
            ranks.append(next((1 / (i + 1) for i, name in enumerate(names) if name in relevant), 0.0))
    return {
        "queries": len(queries),
        "recall_at_5": round(statistics.mean(recalls), 3),
        "mrr": round(statistics.mean(ranks), 3),
    }


def found_names(answer: dict[str, Any], front: Front, servers: list[str]) -> list[str]:
    """The ``<catalog>__<tool>`` names a search answer ranks, best first, each once."""
    assert front.server_of is not None
    result = answer.get("result", {})
    text = "".join(block.get("text", "") for block in result.get("content", []) if block.get("type") == "text")
    value: Any = result.get("structuredContent")
    if text:
        value = json.loads(text)
    if isinstance(value, dict) and isinstance(cast(dict[str, Any], value).get("result"), list):
        value = cast(dict[str, Any], value)["result"]  # a list result FastMCP wraps for structured content
    listed = cast(list[dict[str, Any]], value["tools"] if isinstance(value, dict) else value)
    names: dict[str, None] = {}
    for entry in listed or []:
        server, tool = front.server_of(entry["name"], servers)
        names[f"{server}__{tool}"] = None
    return list(names)


# --- the run --------------------------------------------------------------------------------------


@dataclass
class Run:
    quick: bool
    only: tuple[str, ...] = SECTIONS
    sections: dict[str, Any] = field(default_factory=dict[str, Any])
    failures: dict[str, str] = field(default_factory=dict[str, str])
    versions: dict[str, str] = field(default_factory=dict[str, str])
    save: Path | None = None
    """Where every figure goes as soon as it is measured (a long run stopped keeps what it had)."""
    host: dict[str, Any] = field(default_factory=machine)
    """The machine as the run started (its load then)."""
    started: datetime = field(default_factory=partial(datetime.now, UTC))

    def summary(self) -> str:
        """When the run measured what, and the machine's load at its start and now (others share it)."""
        now = datetime.now(UTC)
        return (
            f"{', '.join(self.only)}: {self.started:%Y-%m-%d %H:%M}-{now:%H:%M} UTC, load average (1, 5, 15 min) "
            f"{self.host['loadavg_at_start']} at the start, {load_average()} at the end"
        )

    def results(self) -> dict[str, Any]:
        return {
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": self.host,
            "loadavg_at_end": load_average(),
            "runs": [self.summary()],
            "quick": self.quick,
            "versions": {"lazymcp": __version__, **self.versions},
            "not_measured": NOT_MEASURED,
            "failures": self.failures,
            **self.sections,
        }

    def checkpoint(self) -> None:
        if self.save is not None:
            self.save.write_text(json.dumps(self.results(), indent=2))


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def attempt(run: Run, label: str, action: Callable[[], Any], into: dict[str, Any], key: str) -> None:
    """``into[key]``: what ``action`` measures (None if it failed, the reason in the run's failures), saved
    at once with the run's other figures."""
    try:
        into[key] = action()
    except Exception as exc:  # a peer that fails is named with its reason, and the run goes on
        run.failures[label] = f"{type(exc).__name__}: {str(exc)[:300]}"
        print(f"  {label}: failed: {run.failures[label]}", file=sys.stderr)
        into[key] = None
    finally:
        run.checkpoint()


def measure(
    quick: bool, only: tuple[str, ...] = SECTIONS, save: Path | None = None, fronts_wanted: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Every figure of ``only``, for the fronts whose names contain one of ``fronts_wanted`` (all: empty)."""
    run = Run(quick, only, save=save)

    def wanted(name: str) -> bool:
        return not fronts_wanted or any(part.lower() in name.lower() for part in fronts_wanted)

    fronts = [_lazymcp_front()]
    mcp_proxy: Front | None = None
    for name in INSTALLABLE:
        python = peer_python(name)
        if isinstance(python, str):
            run.failures[name] = f"did not install: {python}"
            continue
        run.versions[name] = INSTALLABLE[name]
        if name == "fastmcp":
            fronts += _fastmcp_fronts(python)
        else:
            mcp_proxy = _mcp_proxy_front(python)
    if mcp_proxy is not None and not wanted(mcp_proxy.name):
        mcp_proxy = None
    contextforge = wanted(CONTEXTFORGE)
    if contextforge:
        run.versions["mcp-contextforge-gateway"] = CONTEXTFORGE_SPEC
    fronts = [front for front in fronts if wanted(front.name)]
    stdio_fronts = [front for front in fronts if front.stdio(Path("x"))]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        env = {**os.environ, "LAZYMCP_LOG_LEVEL": "error", "FASTMCP_LOG_LEVEL": "WARNING"}
        real = real_servers(root)
        if isinstance(real, str):
            raise SystemExit(f"bench.peers: the real servers are not available: {real}")
        catalogs = catalog_servers()
        configs = {"5": write_config(root, "real-5", real), "30": write_config(root, "catalogs-30", catalogs)}
        repeats = {"5": 1 if quick else 3, "30": 1 if quick else 2}  # FastMCP takes minutes over 30
        for size, servers in (("5", real), ("30", catalogs)) if "listing" in only else ():
            print(f"first listings, {size} servers", file=sys.stderr)
            section: dict[str, Any] = {}
            run.sections[f"listing_{size}"] = section
            if wanted("direct"):
                listing = partial(direct_listing, servers, env, STARTUP_S)
                attempt(run, f"direct, {size} servers", listing, section, "direct")
            for front in stdio_fronts:
                starts = partial(startup, front, configs[size], env, repeats[size], STARTUP_S)
                attempt(run, f"{front.name}, {size} servers", starts, section, front.name)
            if mcp_proxy is not None:
                lists = partial(mcp_proxy_listing, mcp_proxy, root, servers, STARTUP_S)
                attempt(run, f"{mcp_proxy.name}, {size} servers", lists, section, mcp_proxy.name)
            if contextforge:
                lists = partial(contextforge_listing, root, servers, STARTUP_S)
                attempt(run, f"{CONTEXTFORGE}, {size} servers", lists, section, CONTEXTFORGE)
        everything = real["everything"]
        direct = [everything["command"], *everything["args"]]
        if "calls" in only:
            print("tools/call over stdio", file=sys.stderr)
            rounds, budget = (50, 20.0) if quick else (500, 90.0)
            timed = partial(calls, stdio_fronts, configs["5"], direct, env, rounds, budget)
            attempt(run, "tools/call", timed, run.sections, "calls")
        if "http" in only:
            print("50 clients over HTTP", file=sys.stderr)
            http_fronts = [*fronts, *([mcp_proxy] if mcp_proxy else [])]
            load = partial(
                http_section,
                http_fronts,
                root,
                everything,
                50,
                3.0 if quick else 15.0,
                direct=wanted("direct"),
                contextforge=contextforge,
            )
            attempt(run, "HTTP load", load, run.sections, "http")
        searching: dict[str, Any] = {}
        if "search" in only:
            run.sections["search"] = searching
        for front in fronts if "search" in only else ():
            print(f"search on the dev set: {front.name}", file=sys.stderr)
            if front.search is not None and QUERIES.exists():
                search_env = {**env, "LAZYMCP_CACHE_DIR": str(root / "search")}
                ranked = partial(search_quality, front, configs["30"], search_env, list(catalogs), quick)
                attempt(run, f"{front.name} search", ranked, searching, front.name)
    return run.results()


# --- the table ------------------------------------------------------------------------------------


def _cell(value: Any, show: Callable[[dict[str, Any]], str]) -> str:
    if value is None:
        return "failed"
    found = cast(dict[str, Any], value)
    if ("failed" in found or "failed_to_run" in found) and len(found) == 1:
        return "failed"
    return show(found)


def _tokens(value: dict[str, Any]) -> str:
    return f"{value['tokens']:,} ({value['tools']:,})"


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f}"


def table(results: dict[str, Any]) -> str:
    """The side-by-side table: a row per figure, a column per front."""
    names: dict[str, None] = {"direct": None}
    for section in ("listing_5", "listing_30", "calls", "http", "search"):
        names.update(dict.fromkeys(results.get(section) or {}))
    columns = list(names)
    rows: list[tuple[str, str, Callable[[dict[str, Any]], str]]] = [
        ("tokens a stock client's model sees (tools listed), 5 servers", "listing_5", _tokens),
        ("the same, 30 servers (954 tools)", "listing_30", _tokens),
        (
            "first `tools/list`, 5 servers, cold / warm (ms)",
            "listing_5",
            lambda v: (
                f"{v['cold_ms']:,} / {v['warm_ms']:,}" if "cold_ms" in v else (f"{v['ms']:,}" if "ms" in v else "—")
            ),
        ),
        (
            "first `tools/list`, 30 servers, cold / warm (ms)",
            "listing_30",
            lambda v: (
                f"{v['cold_ms']:,} / {v['warm_ms']:,}" if "cold_ms" in v else (f"{v['ms']:,}" if "ms" in v else "—")
            ),
        ),
        (
            "memory after it, 5 servers, cold / warm (MiB, with children)",
            "listing_5",
            lambda v: (
                f"{_mib(v['cold_rss_kib'])} / {_mib(v['warm_rss_kib'])}" if "cold_rss_kib" in v else _mib(v["rss_kib"])
            ),
        ),
        (
            "processes after it, 5 servers, cold / warm",
            "listing_5",
            lambda v: (
                f"{v['cold_processes']} / {v['warm_processes']}" if "cold_processes" in v else str(v["processes"])
            ),
        ),
        ("`tools/call` over stdio, median / p99 (µs)", "calls", lambda v: f"{v['median_us']:,} / {v['p99_us']:,}"),
        (
            "50 HTTP sessions: calls/s, p99 (ms)",
            "http",
            lambda v: f"{v['calls_per_s']:,.0f}, {v['p99_ms']}" + (f" ({v['failed']} failed)" if v["failed"] else ""),
        ),
        (
            "the same: memory (MiB, with children), processes",
            "http",
            lambda v: f"{_mib(v['rss_kib'])}, {v['processes']}",
        ),
        ("search on the dev set: Recall@5 / MRR", "search", lambda v: f"{v['recall_at_5']:.3f} / {v['mrr']:.3f}"),
    ]
    lines = ["| | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for label, section, show in rows:
        found = cast(dict[str, Any], results.get(section) or {})
        cells = [(_cell(found[name], show) if name in found else "—") for name in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    versions = ", ".join(f"{name} {spec.partition('==')[2] or spec}" for name, spec in results["versions"].items())
    lines = [
        "# lazymcp beside the peers a user would pick instead",
        "",
        f"Written by `python -m bench.peers{' --quick' if results['quick'] else ''}` on {results['date']}, "
        f"{m.get('nproc', '?')} cores ({m.get('cpu', '?')}, load {m.get('loadavg_at_start', '?')} at the start, "
        f"{results.get('loadavg_at_end', '?')} at the end), "
        f"Python {m.get('python', '?')}, mcp {m.get('mcp', '?')}. Versions: {versions}.",
        "How each figure is taken is in the module's docstring ([`peers.py`](peers.py)).",
        "",
        START,
        table(results),
        END,
        "",
        "`direct` is the servers themselves, a client connected to each; `—` is a figure that does not apply. "
        "Where a client lists servers one by one (`direct`, mcp-proxy), each server's list is counted and the "
        "counts added, as `lazymcp stats --config` counts them (docs/gateway.md). "
        "mcp-proxy serves stdio servers over HTTP only, each at its own path, so a stdio client cannot spawn it; "
        "its first-listing figure is from spawn to the last of its listings over HTTP. ContextForge is measured "
        "over HTTP (its virtual server's endpoint, with the admin bearer token), from spawn to its first listing "
        "there; its stdio wrapper is not measured. A failed HTTP call is a wrong answer or an error, every answer "
        "being checked: ContextForge's bridge hands one server's output to every session and matches answers by "
        "JSON-RPC id alone, so concurrent sessions get each other's answers (`bench/peer_contextforge.py`).",
        "",
        *(["## Runs", "", *[f"- {line}" for line in results["runs"]], ""] if results.get("runs") else []),
        "## Not measured",
        "",
        *[f"- {name}: {why}." for name, why in results["not_measured"].items()],
    ]
    if results["failures"]:
        lines += ["", "## Failed in this run", ""]
        lines += [f"- {label}: {why}" for label, why in results["failures"].items()]
    return "\n".join(lines) + "\n"


def marked_table(text: str) -> str | None:
    """The table between the peers markers of a Markdown text."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        return None
    return text[start + len(START) : end].strip()


def write(results: dict[str, Any]) -> None:
    PEERS_MD.write_text(markdown(results))
    page = PEERS_DOC.read_text()
    start, end = page.find(START), page.find(END)
    if start >= 0 and end > start:
        PEERS_DOC.write_text(page[: start + len(START)] + "\n" + table(results) + "\n" + page[end:])
    else:
        print(
            f"bench.peers: {PEERS_DOC.name} has no {START} ... {END} markers; the table is in {PEERS_MD.name}",
            file=sys.stderr,
        )


def updated(earlier: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """``earlier``'s figures with this run's in their place, front by front."""
    merged = dict(earlier)
    for key, value in now.items():
        before = earlier.get(key)
        if isinstance(value, dict) and isinstance(before, dict) and key not in ("machine", "not_measured"):
            merged[key] = {**cast(dict[str, Any], before), **cast(dict[str, Any], value)}
        elif key == "runs" and isinstance(before, list):
            merged[key] = [*cast(list[str], before), *cast(list[str], value)]
        else:
            merged[key] = value
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, 50 call rounds, 3 s of load, 15 queries")
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    parser.add_argument("--no-write", action="store_true", help="print the table; leave PEERS.md and the docs alone")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), help="measure only these")
    parser.add_argument("--fronts", nargs="+", default=[], metavar="NAME", help="measure only the fronts named so")
    parser.add_argument("--update", metavar="FILE", help="keep FILE's figures where this run measures none")
    args = parser.parse_args(argv)
    results = measure(args.quick, tuple(args.only), Path(args.json) if args.json else None, tuple(args.fronts))
    if args.update:
        results = updated(json.loads(Path(args.update).read_text()), results)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
    print(table(results))
    if not args.no_write:
        write(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
