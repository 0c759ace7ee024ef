"""The compatibility suite: the clients people build agents on, against lazymcp in every mode.

Each client (FastMCP's, langchain-mcp-adapters, the OpenAI Agents SDK, the agent frameworks, the Inspector
CLI, the official TypeScript SDK's) lists the tools of ``lazymcp serve`` (the built-in sample catalog), gets a schema
through ``describe_tools``, calls a tool it knows only from a stub, sends arguments that break its
schema, and, where the mode does not list the tool, calls it by its own name; in each of the five modes,
over stdio (the client spawns the server) and streamable HTTP. Which steps fail is checked against
``matrix.EXPECTED``, from which ``python -m tests.clients.matrix`` writes the table of docs/compatibility.md.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Generator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, free_port
from ..forkserver import passed_on
from ..interop.support import HOST, lazymcp, serving, ts_sdk_package
from .matrix import EXPECTED, judge
from .support import (
    CASE,
    HERE,
    MODES,
    PIP_TIMEOUT,
    PYTHON_CLIENTS,
    PYTHON_DRIVERS,
    RUN_TIMEOUT,
    TRANSPORTS,
    drive,
    drive_all,
    inspector_cli,
    inspector_steps,
    mode_flags,
    node,
    python_client,
)

CLIENTS = (*PYTHON_DRIVERS, "inspector", "ts")
RESULTS = ROOT / ".cache" / "clients" / "results"
"""What each cell saw, in the checkout (git-ignored)."""


@pytest.fixture(scope="module")
def http_servers(tmp_path_factory: pytest.TempPathFactory) -> Generator[dict[str, str]]:
    """One ``lazymcp serve --http`` per mode, started on first use and shared by the module's tests."""
    urls: dict[str, str] = {}
    logs = tmp_path_factory.mktemp("serve-logs")

    class Lazy(dict[str, str]):
        def __missing__(self, mode: str) -> str:
            port = free_port()
            command = lazymcp("serve", "--http", f"{HOST}:{port}", *mode_flags(mode))
            served = stack.enter_context(serving(command, port, logs / f"{mode}.log"))
            self[mode] = served.url
            return served.url

    with ExitStack() as stack:
        urls = Lazy()
        yield urls


def target_of(transport: str, mode: str, http_servers: dict[str, str]) -> dict[str, Any]:
    if transport == "http":
        return {"url": http_servers[mode]}
    return {"command": lazymcp("serve", *mode_flags(mode))}


def run_client(client: str, mode: str, target: dict[str, Any]) -> dict[str, dict[str, Any]]:
    config = {**CASE, "client": client, "mode": mode, "target": target}
    if client in PYTHON_DRIVERS:
        return drive([str(python_client(client)), str(HERE / "drive.py"), json.dumps(config)])
    if client == "ts":
        if "command" in target:
            config["target"] = {**target, "env": passed_on()}
        return drive([node(), str(HERE / "drive_ts.mjs"), json.dumps({**config, "sdk": str(ts_sdk_package())})])
    if "url" in target:
        inspector_target = [target["url"], "--transport", "http"]
    else:
        inspector_target = [*(f"-e{name}={value}" for name, value in passed_on().items()), *target["command"]]
    return inspector_steps(inspector_target, mode)


CELLS = [(mode, transport) for mode in MODES for transport in TRANSPORTS]


class Runs:
    """The steps of every cell. A Python client's cells are run together on first use: one process of the
    client's own Python goes through every mode and transport in turn (``drive.py`` given the list), new
    client objects and a new event loop for each, so that its library is loaded once rather than ten
    times. A run that cannot be made fails that client's tests at once (no second attempt)."""

    def __init__(self, http_servers: dict[str, str]) -> None:
        self.http_servers = http_servers
        self._done: dict[str, dict[tuple[str, str], dict[str, dict[str, Any]]]] = {}
        self._broken: dict[str, str] = {}

    def steps(self, client: str, mode: str, transport: str) -> dict[str, dict[str, Any]]:
        if client not in PYTHON_DRIVERS:
            return run_client(client, mode, target_of(transport, mode, self.http_servers))
        if client not in self._done:
            if client in self._broken:
                pytest.fail(f"the run of {client} could not be made: {self._broken[client]}")
            try:
                self._done[client] = self._run(client)
            except (Exception, pytest.fail.Exception) as exc:
                self._broken[client] = str(exc)[-3000:]
                raise
        return self._done[client][(mode, transport)]

    def _run(self, client: str) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
        configs = [
            {**CASE, "client": client, "mode": mode, "target": target_of(transport, mode, self.http_servers)}
            for mode, transport in CELLS
        ]
        runs = drive_all([str(python_client(client)), str(HERE / "drive.py"), json.dumps(configs)], len(configs))
        return dict(zip(CELLS, runs, strict=True))


@pytest.fixture(scope="module")
def runs(http_servers: dict[str, str]) -> Runs:
    return Runs(http_servers)


def grouped(client: str) -> Any:
    """A Python client's tests share one run (``Runs``): under xdist, one worker takes them all."""
    if client not in PYTHON_DRIVERS:
        return client
    return pytest.param(client, marks=pytest.mark.xdist_group(f"client-{client}"))


@pytest.mark.timeout(PIP_TIMEOUT + RUN_TIMEOUT * len(CELLS) + 60)  # the first test of a client installs and runs it
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("client", [grouped(client) for client in CLIENTS])
def test_client_against_lazymcp(client: str, mode: str, transport: str, runs: Runs) -> None:
    steps = runs.steps(client, mode, transport)
    failed = judge(mode, steps)
    RESULTS.mkdir(parents=True, exist_ok=True)  # what was seen, for whoever updates matrix.EXPECTED
    (RESULTS / f"{client}-{mode}-{transport}.json").write_text(json.dumps({"failed": failed, "steps": steps}))
    expected = EXPECTED.get((client, mode, transport), {})
    assert set(failed) == set(expected), f"{client} {mode} {transport}: failing steps {failed}, expected {expected}"


def test_the_inspector_cli_runs_the_proxy_although_it_swallows_the_double_dash() -> None:
    # `inspector --cli lazymcp proxy -- CMD` reaches lazymcp as `proxy CMD`: the proxy takes it either way.
    upstream = lazymcp("serve")
    command = [*inspector_cli(), *lazymcp("proxy", "--", *upstream), "--method", "tools/list"]
    import subprocess

    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    names = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    assert names[:3] == ["describe_tools", "search_tools", "invoke_tool"] and "issues_get" in names


def test_the_python_clients_run_in_their_own_environments() -> None:
    for client in PYTHON_CLIENTS:
        python = python_client(client)
        assert Path(python).parent.parent.parent.name == "clients"
        assert str(python) != sys.executable
