"""The compatibility suite's clients, each installed where it cannot disturb the project, and its servers.

Every third-party Python client gets a virtual environment of its own under ``clients/`` in the tests'
install cache (``conftest.TEST_CACHE``, outside the checkout), created by the tests on first use with exact
pins, so that a client's own ``mcp`` pin never meets the project's ``mcp==2.3.0``; the npm clients go
beside them as the interop tests install theirs. A failed install fails the test with pip's or npm's own
message.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ..conftest import install_lock
from ..interop.support import CACHE, node, npm_packages

HERE = Path(__file__).resolve().parent
CLIENT_VENVS = CACHE / "clients"
PIP_TIMEOUT = 600.0
DRIVE_TIMEOUT = 20.0
"""Seconds a client may wait for one answer; a whole run is bounded at three times this."""
RUN_TIMEOUT = DRIVE_TIMEOUT * 3 + 30
"""Bound on one run of a driver process, start-up and imports included."""

PYTHON_CLIENTS: dict[str, tuple[str, ...]] = {
    "fastmcp": ("fastmcp==4.1.2", "mcp==2.3.0"),
    "langchain": ("langchain-mcp-adapters==0.3.2", "langchain-core==1.7.2", "mcp==1.30.0"),
    "agents": ("openai-agents==0.24.0", "mcp==2.3.0"),
    "pydanticai": ("pydantic-ai-slim[mcp]==2.68.0", "mcp==2.3.0"),
    "mcpuse": ("mcp-use==1.7.1", "mcp==1.30.0"),
    "autogen": ("autogen-ext[mcp]==0.7.5", "autogen-agentchat==0.7.5", "mcp==1.30.0", "email-validator==2.4.0"),
    "smolagents": ("smolagents[mcp]==1.26.0", "mcp==1.30.0", "websockets==17.4"),
    "adk": ("google-adk[mcp]==2.13.0", "mcp==2.3.0"),
}
"""Each Python client's pins. langchain-mcp-adapters 0.3.2 resolves to the 1.x SDK (``mcp==1.30.0``).
AutoGen's schema converter maps ``format: email`` to pydantic's ``EmailStr``
(``autogen_core/utils/_json_to_pydantic.py:66``), which needs ``email-validator``, a package AutoGen does
not declare: without it ``mcp_server_tools`` fails on a listing with such a tool."""
SHARED_ENVIRONMENTS = {"autogentools": "autogen"}
"""Drivers of a second API of one library, run in that library's environment."""
PYTHON_DRIVERS = (*PYTHON_CLIENTS, *SHARED_ENVIRONMENTS)
"""Every driver run by ``drive.py``."""
INSPECTOR = ("@modelcontextprotocol/inspector", "2.12.0")

CLIENT_NAMES = {
    "fastmcp": "FastMCP client 4.1.2",
    "langchain": "langchain-mcp-adapters 0.3.2",
    "agents": "OpenAI Agents SDK 0.24.0",
    "pydanticai": "pydantic-ai 2.68.0",
    "mcpuse": "mcp-use 1.7.1",
    "autogen": "AutoGen 0.7.5 (McpWorkbench)",
    "autogentools": "AutoGen 0.7.5 (mcp_server_tools)",
    "smolagents": "smolagents 1.26.0",
    "adk": "Google ADK 2.13.0",
    "inspector": "MCP Inspector CLI 2.12.0",
    "ts": "TypeScript SDK client 1.32.2",
}
MODES = ("describe", "dynamic", "proxy", "core", "eager")
TRANSPORTS = ("stdio", "http")

CASE: dict[str, Any] = {
    "tool": "issues_get",
    "good": {"issue_id": "ISS-42"},
    "bad": {"issue_id": 42, "bogus": 1},
    "query": "fetch a single issue by its ID",
    "unlisted": "issues_get",
    "unlisted_args": {"issue_id": "ISS-1"},
    "timeout": DRIVE_TIMEOUT,
}
"""The sample catalog's ``issues_get``: arguments its schema takes, arguments with two violations, a
search that finds it, and the same tool called by its own name where the mode does not list it."""


def mode_flags(mode: str) -> list[str]:
    """``lazymcp serve`` flags of a mode (core mode lists ``issues_list`` in full, not ``issues_get``)."""
    return ["--mode", mode, *(["--core-tools", "issues_list"] if mode == "core" else [])]


def python_client(name: str) -> Path:
    """The Python of the client's own virtual environment, created and installed on first use."""
    name = SHARED_ENVIRONMENTS.get(name, name)
    pins = PYTHON_CLIENTS[name]
    venv = CLIENT_VENVS / name
    python = venv / "bin" / "python"
    marker = venv / "lazymcp-pins.json"
    with install_lock(venv):
        if python.exists() and marker.exists() and json.loads(marker.read_text()) == list(pins):
            return python
        _run([sys.executable, "-m", "venv", "--clear", str(venv)], f"python -m venv {venv}")
        _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins], "pip install")
        marker.write_text(json.dumps(list(pins)))
    return python


def _run(command: Sequence[str], what: str) -> None:
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} took over {PIP_TIMEOUT:.0f} s: is the package index reachable?")
    if done.returncode != 0:
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")


def inspector_cli() -> list[str]:
    """The Inspector's launcher in CLI mode."""
    modules = npm_packages(CACHE / "npm-inspector", [INSPECTOR])
    launcher = modules / INSPECTOR[0] / "clients" / "launcher" / "build" / "index.js"
    return [node(), str(launcher), "--cli"]


def last_json_line(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise ValueError(f"no JSON line in the output: {stdout[-1500:]!r}")
    return json.loads(lines[-1])


def drive(command: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Run a driver (drive.py or drive_ts.mjs); its steps by name."""
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the client did not finish within {RUN_TIMEOUT:.0f} s; stderr:\n{exc.stderr!r}")
    assert done.returncode == 0, f"the driver exited with {done.returncode}:\n{done.stderr[-3000:]}"
    return last_json_line(done.stdout)["steps"]


def drive_all(command: Sequence[str], count: int) -> list[dict[str, dict[str, Any]]]:
    """Run drive.py on a list of ``count`` configs; the steps of each run, in order. A run the driver did
    not finish (it exited, or the bound of ``RUN_TIMEOUT`` a run passed) has a failed ``connect`` step
    saying so, with the driver's stderr."""
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=RUN_TIMEOUT * count)
        stdout, problem = done.stdout, f"the driver exited with {done.returncode}:\n{done.stderr[-3000:]}"
    except subprocess.TimeoutExpired as exc:
        output, errors = exc.stdout or "", exc.stderr or ""
        stdout = output.decode(errors="replace") if isinstance(output, bytes) else output
        errors = errors.decode(errors="replace") if isinstance(errors, bytes) else errors
        problem = f"the client did not finish within {RUN_TIMEOUT * count:.0f} s; stderr:\n{errors[-3000:]}"
    runs: dict[int, dict[str, dict[str, Any]]] = {}
    for line in stdout.splitlines():
        if line.startswith('{"cell": '):
            parsed = json.loads(line)
            runs[parsed["cell"]] = parsed["steps"]
    missing = {"connect": {"ok": False, "error": f"not run: {problem}"}}
    return [runs.get(cell, missing) for cell in range(count)]


# --- the Inspector CLI: one process per request, as it is used ------------------------------------


def inspector_steps(target: list[str], mode: str) -> dict[str, dict[str, Any]]:
    """The steps of drive.py, each one ``inspector --cli`` run (a new session each time)."""
    # A stdio server's start (the semantic model's load) on a loaded machine can take past the CLI's 15 s.
    base = [*inspector_cli(), "--connect-timeout", str(int(RUN_TIMEOUT * 1000)), *target]

    def run(*method: str) -> Any:
        try:
            done = subprocess.run([*base, *method], capture_output=True, text=True, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(f"no answer within {RUN_TIMEOUT:.0f} s") from exc
        out = done.stdout.strip()
        try:
            parsed = json.loads(out)
        except ValueError:
            raise RuntimeError(f"exit {done.returncode}: {(out or done.stderr)[-400:]}") from None
        if isinstance(parsed, dict) and "error" in parsed:
            raise RuntimeError(json.dumps(parsed["error"]))
        return parsed

    def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        pairs = [
            f"{key}={json.dumps(value) if not isinstance(value, str) else value}" for key, value in arguments.items()
        ]
        result = run("--method", "tools/call", "--tool-name", name, "--tool-arg", *pairs)
        text = "\n".join(block.get("text", "") for block in result.get("content", []) if block.get("type") == "text")
        return {"isError": result.get("isError") is True, "text": text}

    listed: list[str] = []

    def how(arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if mode in ("proxy", "core") or "invoke_tool" in listed:
            return "invoke_tool", {"name": CASE["tool"], "arguments": arguments}
        return CASE["tool"], arguments

    def describe() -> dict[str, Any]:
        [described] = json.loads(tool_call("describe_tools", {"names": [CASE["tool"]]})["text"])["tools"]
        return {"name": described["name"], "required": described["inputSchema"].get("required", [])}

    def call() -> dict[str, Any]:
        if mode == "dynamic" and "invoke_tool" not in listed:
            tool_call("search_tools", {"query": CASE["query"]})  # enables it, in a session that then ends
        return tool_call(*how(CASE["good"]))

    def listing() -> list[str]:
        listed[:] = [tool["name"] for tool in run("--method", "tools/list")["tools"]]
        return list(listed)

    actions: dict[str, Callable[[], Any]] = {"list": listing}
    if mode != "eager":  # an eager listing has every schema already, and no describe_tools
        actions["describe"] = describe
    actions |= {"call": call, "invalid": lambda: tool_call(*how(CASE["bad"]))}
    if mode in ("proxy", "core", "dynamic"):
        actions["unlisted"] = lambda: tool_call(CASE["unlisted"], CASE["unlisted_args"])
    steps: dict[str, dict[str, Any]] = {}
    for name, action in actions.items():
        try:
            steps[name] = {"ok": True, "value": action()}
        except Exception as exc:
            steps[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:600]}
    return steps
