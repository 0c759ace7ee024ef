"""Shared test fixtures: real catalogs, small tool sets, servers built the way users build them, and the
waits every test uses (on an event, or on a condition with a deadline)."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import inspect
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.client.stdio  # noqa: F401  # its errlog default binds sys.stderr at import: the real one, not a test's capture
import pytest
from anyio.abc import Process

from .five_servers import EVERYTHING_PACKAGE, Installs

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LAZYMCP_SHARED", ROOT.parent / "shared"))
CATALOGS = SHARED / "catalogs"
SPEC = ROOT / "spec"
SERVERS = ROOT / "tests" / "servers"
"""The small MCP servers the tests run as processes."""

# Tool embeddings (the semantic extra) are cached inside the checkout, not in the user's cache directory;
# servers the tests start inherit the setting.
os.environ.setdefault("LAZYMCP_CACHE_DIR", str(ROOT / ".cache" / "embeddings"))
# A gateway's first listing waits for servers longer than a user's default (10 s): on a loaded machine a Python
# server can take that long to start, and a test expects its tools. Tests of the wait itself pass the flag.
os.environ.setdefault("LAZYMCP_FIRST_LIST_WAIT", "30")

EXT_ID = "io.lazymcp/lazy-tools"
"""The extension's identifier, as the spec writes it (the tests check the package's against this one)."""

META_TOOL = "describe_tools"
SEARCH_TOOL = "search_tools"
"""The meta-tools listed ahead of a stock client's stubs in the default describe mode."""
DEFAULT_SETTINGS = {"describeBatchMax": 100, "summaryMaxChars": 80, "stockDefault": "lazy", "pageSize": None}
"""The extension's settings a server advertises when none is set."""

ERAS = ("legacy", "2026-07-28")
STOCK_METAS = ["describe_tools", "search_tools", "invoke_tool"]
"""The meta-tools ahead of a stock client's ``describe`` listing, by default."""
"""Client modes: the 2025-11-25 handshake era and the 2026-07-28 modern era."""

STOCK_STUB_KEYS = frozenset({"name", "description", "inputSchema", "title", "outputSchema", "annotations", "execution"})
"""What a stock stub may carry: what the model sees (name, description, input schema), and what clients
use outside the prompt."""


def initialize_request(client: str = "t", request_id: int = 1) -> dict[str, Any]:
    """A 2025-11-25 ``initialize`` request, as a raw JSON-RPC message."""
    info = {"name": client, "version": "1"}
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


# --- the run: slow tests first, and each xdist group on one worker ------------------------------------

SLOW_FIRST = (
    "tests/interop/test_conformance.py",
    "tests/clients/",
    "tests/hosts/",
    "tests/docs/test_bench.py",
    "tests/docs/test_install.py",
    "tests/run/test_cluster",
    "tests/gateway/test_gateway.py",
    "tests/core/test_proxy_everything.py",
    "tests/interop/",
    "tests/run/",
    "tests/gateway/",
    "tests/core/",
    "tests/access/",
)
"""Where the slowest tests are, slowest first: they are handed to the workers before the rest, which then
fill the gaps (a slow test left for the end would run while the other workers sit idle)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.partition("::")[0]
        return next((n for n, prefix in enumerate(SLOW_FIRST) if path.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: each place keeps its tests in their order
    worker: dict[str, Any] | None = getattr(config, "workerinput", None)
    if worker is not None and GROUPS_INPUT in worker:
        groups = {}
        for item in items:
            mark = item.get_closest_marker("xdist_group")
            if mark is not None:
                groups[item.nodeid] = str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        (Path(worker[GROUPS_INPUT]) / f"{worker['workerid']}.json").write_text(json.dumps(groups))


GROUPS_INPUT = "lazymcp_xdist_groups"
"""The key of the worker input naming the directory where each worker writes the groups it collected."""
_groups: list[Path] = []


def _groups_directory() -> Path:
    if not _groups:
        _groups.append(Path(tempfile.mkdtemp(prefix="lazymcp-test-groups-")))
    return _groups[0]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput[GROUPS_INPUT] = str(_groups_directory())


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``, its groups read from the ``xdist_group`` marks the workers collected: xdist's own
    finds them in node ids it rewrites, which pytest 9.2 no longer lets it do. A test without a group is a
    unit of its own; a group's tests all go to one worker, so that its module fixture is made once."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    directory = _groups_directory()

    class MarkedGroups(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):  # a node id xdist could rewrite
                return nodeid.rpartition("@")[2]
            if self.groups is None:  # the workers wrote them before they reported their collection
                self.groups = {}
                for path in sorted(directory.glob("*.json")):
                    self.groups.update(json.loads(path.read_text()))
            return self.groups.get(nodeid, nodeid)

    return MarkedGroups(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """Before any test: the bytecode of lazymcp (and of the harness the tests import), written where Python
    looks for it. The tests start hundreds of ``python -m lazymcp`` processes; where
    ``PYTHONDONTWRITEBYTECODE`` is set (or the sources changed since), none of them caches what it
    compiles, and each compiles the package anew. Once here, on the controller, before the workers start."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    for package in ("lazymcp", "bench", "tests"):
        compileall.compile_dir(ROOT / package, quiet=1, workers=1)
    _start_fork_server()


_fork_servers: list[Any] = []
if "|" in os.environ.get("LAZYMCP_TEST_FORKSERVER", ""):  # a worker of a run with a fork server
    from .forkserver import carry

    carry()


def _start_fork_server() -> None:
    """Python processes the tests start take their imports from one fork server (``tests/forkserver.py``),
    unless ``LAZYMCP_TEST_FORKSERVER=off`` (or a run inside a run, which has its own run's)."""
    from .forkserver import VARIABLE, ForkServer, carry

    if os.environ.get(VARIABLE, "on").strip().lower() != "on" or sys.platform != "linux":
        return
    server = ForkServer()
    if server.ready():
        server.export()
        carry()
        _fork_servers.append(server)
    else:
        server.close()
        sys.stderr.write("tests: the fork server did not start; every process starts the ordinary way\n")


_warmed: set[str] = set()


def warm_environment(python: Path, *preload: str) -> None:
    """Processes of the Python environment of ``python`` (another than the run's) start warm too, from a fork
    server of their own started here at the first call, with ``preload`` imported: where the run has a fork
    server, and only for this process and what it starts."""
    from .forkserver import ForkServer, addresses

    if not addresses() or str(python) in _warmed or not python.exists():
        return
    _warmed.add(str(python))
    server = ForkServer(str(python), preload)
    if server.ready():
        server.export()
        _fork_servers.append(server)
    else:
        server.close()


def pytest_unconfigure(config: pytest.Config) -> None:
    while _fork_servers:
        _fork_servers.pop().close()
    if _groups and not hasattr(config, "workerinput"):
        import shutil

        shutil.rmtree(_groups.pop(), ignore_errors=True)


LOGS = pytest.StashKey[list[Path]]()
LOG_TAIL = 6000
"""Characters of a long-lived process's log shown under a failed test."""


def log_on_failure(node: pytest.Item | pytest.Collector, path: Path) -> None:
    """Show the end of ``path`` (a process's stderr, written there by a fixture of ``node``'s scope) under
    every test of ``node`` that fails: a module's gateway says what it was doing when a request hung."""
    node.stash.setdefault(LOGS, []).append(path)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.failed:
        return
    for node in item.listchain():
        for path in node.stash.get(LOGS, []):
            with contextlib.suppress(OSError):
                report.sections.append((f"log {path.name}", path.read_text(errors="replace")[-LOG_TAIL:]))


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Every async test runs on asyncio, the loop the SDK and lazymcp run on."""
    return "asyncio"


# --- waits: on an event where there is one, else on a condition with a deadline ----------------------

CHECK_EVERY = 0.02
"""Seconds between two checks of an ``until`` condition."""


async def until(condition: Callable[[], bool | Awaitable[bool]], *, within: float = 10.0, what: str) -> None:
    """Return once ``condition()`` (a bool, or an awaitable of one) holds; fail the test, naming ``what``,
    when it has not within ``within`` seconds.

    For facts that nothing announces: a process table, a file's content, a port that accepts
    connections, a server out of its backoff. It checks again every ``CHECK_EVERY`` seconds: the one
    place in the tests that waits on an interval. Wherever an event tells of the fact (a line read, an
    answer, a process's exit: see ``exited``), wait on the event instead."""
    with anyio.move_on_after(within):
        while True:
            held = condition()
            if inspect.isawaitable(held):
                held = await held
            if held:
                return
            await anyio.sleep(CHECK_EVERY)
    pytest.fail(f"{what}: not within {within:g} s")


async def exited(pid: int, *, within: float = 10.0) -> None:
    """Return once process ``pid`` has exited (a zombie counts: its parent may reap it later); fail the
    test when it has not within ``within`` seconds. Waits on the process's pidfd, readable from its exit."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # exited and reaped already
    try:
        with anyio.move_on_after(within):
            await anyio.wait_readable(pidfd)
            return
    finally:
        os.close(pidfd)
    pytest.fail(f"process {pid} was still running {within:g} s on")


async def accepts(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port`` now."""
    try:
        await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
    except OSError:
        return False
    return True


async def until_listening(port: int, process: Process | None = None, *, within: float = 30.0) -> None:
    """Return once something accepts connections on 127.0.0.1:``port``; the test fails at once if
    ``process`` (the server) exits first, and when nothing listens within ``within`` seconds."""

    async def ready() -> bool:
        if process is not None and process.returncode is not None:
            pytest.fail(f"the server exited with status {process.returncode} before listening on port {port}")
        return await accepts(port)

    await until(ready, within=within, what=f"a server listening on port {port}")


@asynccontextmanager
async def serving(app: Any, port: int, within: float = 30) -> AsyncGenerator[str]:
    """``app`` (ASGI) served by uvicorn on 127.0.0.1:``port``, up within ``within`` seconds; yields the URL
    of its ``/mcp``."""
    import uvicorn

    started = anyio.Event()

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            started.set()

    server = Announcing(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))

    async def serve() -> None:
        try:
            await server.serve()
        finally:
            started.set()  # a server that could not start ends here

    async with anyio.create_task_group() as group:
        group.start_soon(serve)
        with anyio.fail_after(within):
            await started.wait()
        if not server.started:
            pytest.fail(f"uvicorn did not start on port {port}")
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True


@asynccontextmanager
async def lazy_http_server(lazy: Any, *, stateless: bool, within: float = 15.0) -> AsyncGenerator[str]:
    """``lazymcp.run.serve.serve_http(lazy, ...)`` (``lazy``: a ``LazyTools``) in this task group, up within
    ``within`` seconds; yields the ``/mcp`` URL.

    ``serve_http`` keeps its ``uvicorn.Server`` to itself, so the class is swapped for a subclass that
    records its instance: the server is then stopped with ``should_exit`` (a clean shutdown; a cancel
    would skip uvicorn's and the session manager's teardown and leak the listening socket), and its
    ``startup`` is what tells that it listens.
    """
    from unittest import mock

    import uvicorn

    from lazymcp.run.serve import serve_http

    port = free_port()
    servers: list[uvicorn.Server] = []
    started, stopped = anyio.Event(), anyio.Event()

    class RecordedServer(uvicorn.Server):
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            servers.append(self)

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            started.set()

    async def run() -> None:
        try:
            await serve_http(lazy, "127.0.0.1", port, stateless=stateless)
        finally:
            started.set()  # a server that could not start ends here
            stopped.set()

    with mock.patch.object(uvicorn, "Server", RecordedServer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                with anyio.fail_after(within):
                    await started.wait()
                assert servers and servers[0].started, f"uvicorn did not start on port {port}"
                yield f"http://127.0.0.1:{port}/mcp"
            finally:
                for server in servers:
                    server.should_exit = True
                with anyio.fail_after(10):
                    await stopped.wait()


PORT_MARKS = Path(tempfile.gettempdir()) / "lazymcp-test-ports"
"""One lock file per port handed out by ``free_port``, shared by every test process on the machine."""
PORT_HOLD = 120.0
"""Seconds a port handed out stays reserved: its server has bound it long before."""
_held_ports: collections.deque[tuple[float, int]] = collections.deque()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (loopback only), and that no other test process
    (another xdist worker, another checkout's run) is handed before this one's server has bound it.

    The port is one the kernel never picks by itself (``_unpicked_ports``): not as the port of an outgoing
    connection, which would make the server's bind fail, nor for a socket bound to port 0 (a test's socket
    that listens and never answers), which would take the connections meant for the server. A lock on the
    port's file in ``PORT_MARKS``, held by this process for ``PORT_HOLD`` seconds, keeps other processes'
    ``free_port`` from handing it out meanwhile (and this process's own: a test may take several ports
    before starting what binds them)."""
    import socket

    now = time.monotonic()
    while _held_ports and now - _held_ports[0][0] > PORT_HOLD:
        os.close(_held_ports.popleft()[1])  # closing the file releases its lock
    PORT_MARKS.mkdir(exist_ok=True)
    ours = _unpicked_ports()
    pick = random.SystemRandom()  # not the test's seeded one: each worker, each test, would pick the same ports
    for _ in range(200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", pick.choice(ours) if ours else 0))
            except OSError:
                continue  # taken
            port = sock.getsockname()[1]
        mark = os.open(PORT_MARKS / str(port), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(mark, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(mark)  # held: handed to another process (or this one) a moment ago
            continue
        _held_ports.append((now, mark))
        return port
    raise RuntimeError(f"no free port that {PORT_MARKS} does not hold")


LOCAL_PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
"""Where Linux says which ports it picks by itself (outgoing connections' ports, binds to port 0)."""
FIRST_TEST_PORT = 20000


def _unpicked_ports() -> range:
    """The ports ``free_port`` hands out: from ``FIRST_TEST_PORT`` up to the kernel's local port range;
    none (the kernel then picks) where that range is not known, or leaves too few below it."""
    try:
        low = int(LOCAL_PORT_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return range(0)
    return range(FIRST_TEST_PORT, low) if low - FIRST_TEST_PORT >= 4096 else range(0)


def shared_catalog(name: str) -> list[dict[str, Any]]:
    """A real captured catalog from ../shared/catalogs (the test is skipped where it is absent)."""
    path = CATALOGS / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path} is not here (it sits beside the project in CI)")
    return json.loads(path.read_text())["tools"]


SMALL_TOOLS: list[dict[str, Any]] = [
    {
        "name": "issues_create",
        "title": "Create issue",
        "description": (
            "Create an issue in a project. The issue starts in the project's default state.\n\nNeeds write access."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "project": {"type": "string", "description": "Project key."},
                "title": {"type": "string", "minLength": 1},
                "priority": {"type": "integer", "minimum": 0, "maximum": 4},
            },
            "required": ["project", "title"],
            "additionalProperties": False,
        },
        "annotations": {"destructiveHint": False},
    },
    {
        # Off-spec on purpose (no "type"), as some real servers publish: relayed untouched.
        "name": "issues_search",
        "description": "Search issues with a query string, e.g. 'state:open label:bug'. Returns at most 50 issues.",
        "inputSchema": {"properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "_meta": {"io.lazymcp/lazy-tools": {"summary": "Say it again."}},
    },
    {
        "name": "legacy_draft7",
        "description": "A tool whose schema is written in draft-07.",
        "inputSchema": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    },
]


def tool(name: str, description: str = "", *, args: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """A tool definition. Its input schema is an object: of the ``args`` given (name: JSON type, each
    required), or open when none are; ``extra`` members are set on top (``inputSchema``, ``_meta``...)."""
    schema: dict[str, Any] = {"type": "object"}
    if args is not None:
        schema |= {"properties": {key: {"type": kind} for key, kind in args.items()}, "required": list(args)}
    return {"name": name, "description": description, "inputSchema": schema, **extra}


def payload(result: Any) -> dict[str, Any]:
    """The JSON a tool answered with in its one text block: of a ``CallToolResult``, or of a raw result."""
    import mcp_types as types

    if isinstance(result, types.CallToolResult):
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        return json.loads(block.text)
    return json.loads(result["content"][0]["text"])


@pytest.fixture
def small_tools() -> list[dict[str, Any]]:
    return json.loads(json.dumps(SMALL_TOOLS))


# --- servers built the way users build them ----------------------------------------------------------

CALLS: list[tuple[str, dict[str, Any]]] = []
"""The calls ``build_plain``'s tools ran, in order (a test that reads it clears it first)."""


def build_plain(**kwargs: Any) -> Any:
    """The same SDK server (an ``MCPServer``) every SDK test builds: with lazify() on top it is the lazy one.
    Its tools note their calls in ``CALLS``."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("demo", version="1.0", log_level="WARNING", **kwargs)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers. Returns their sum as an integer, which is handy for arithmetic."""
        CALLS.append(("add", {"a": a, "b": b}))
        return a + b

    @server.tool(title="Echo")
    def echo(text: str, times: int = 1) -> str:
        """Echo the text back, repeated.

        Long explanation that a lazy listing leaves out.
        """
        CALLS.append(("echo", {"text": text}))
        return text * times

    @server.tool()
    def forecast(city: str, days: int = 3) -> dict[str, Any]:
        """Weather forecast for a city, e.g. Paris. Up to 10 days ahead."""
        return {"city": city, "days": days}

    return server


def build_lazy(**settings: Any) -> Any:
    """``build_plain()`` lazified with ``settings``."""
    from lazymcp import lazify

    server = build_plain()
    lazify(server, **settings)
    return server


# --- what the tests install from the registries ------------------------------------------------------

TEST_CACHE = Path(
    os.environ.get("LAZYMCP_TEST_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lazymcp-tests"
)
"""Where the tests keep what they install from the registries (npm packages, the virtual environments of
third-party clients and servers): outside the checkout, so that every clone on the machine, CI's included,
installs each pinned package once. Each install is checked against its pins on use, and made under
``install_lock``."""


@contextmanager
def install_lock(target: Path) -> Iterator[None]:
    """Hold the lock of the install at ``target`` (a file beside it) for the block: one test process
    installs while the others (xdist workers, other checkouts' runs) wait, then find it done. Check
    whether the install is there inside the block."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


NPM_CACHE = Path(os.environ.get("LAZYMCP_NPM_DIR", TEST_CACHE / "npm-servers"))
FIVE_SERVERS = Installs(NPM_CACHE, Path(os.environ.get("LAZYMCP_PY_SERVERS_DIR", TEST_CACHE / "py-servers")))
"""The five real servers (``tests/five_servers.py``) in the tests' install cache."""


@pytest.fixture(scope="session")
def everything_command() -> list[str]:
    """The command that runs server-everything over stdio, installed from the npm registry on first use."""
    import shutil

    entry = NPM_CACHE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are needed to install server-everything (Debian packages nodejs and npm)")
    with install_lock(NPM_CACHE):
        if not entry.exists():
            npm_install(EVERYTHING_PACKAGE)
    return [node, str(entry), "stdio"]


def npm_install(*packages: str) -> None:
    """Install pinned npm packages into ``NPM_CACHE`` (the test fails when npm cannot); the caller holds
    ``install_lock(NPM_CACHE)``."""
    import subprocess

    NPM_CACHE.mkdir(parents=True, exist_ok=True)
    command = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(NPM_CACHE), *packages]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Once, at the end of the run: what the tests skipped for a missing program or extra need."""
    from .skips import summary

    reasons = [
        str(report.longrepr[-1])
        for report in terminalreporter.stats.get("skipped", ())
        if isinstance(report.longrepr, tuple)
    ]
    lines = summary(reasons)
    if lines:
        terminalreporter.write_sep("=", "what the skipped tests need")
        for line in lines:
            terminalreporter.write_line(line)
