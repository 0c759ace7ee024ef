"""The hosts of the matrix: each one's pinned npm package, how it is run headless against the fake model API,
and what a run measured.

Each host is installed by the tests into the tests' install cache (``npm_packages`` of the interop tests,
under a lock), runs in a temporary home of its own, and starts ``lazymcp serve`` over stdio behind
``tap.py``, so that the test reads what the server received.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lazymcp.tools.tokens import count_tokens

from ..forkserver import passed_on
from ..interop.support import CACHE, lazymcp, node, npm_packages
from .agent import TARGET
from .fake import Recording, fake_model

HERE = Path(__file__).resolve().parent
MODES = ("default", "describe", "eager", "proxy")
"""The modes measured: ``default`` is no ``--mode`` at all, what lazymcp picks for the host itself."""
RUN_TIMEOUT = 150.0
"""Bound on one headless run of a host, its MCP server's start included."""
PROMPT = "Fetch issue ISS-42 from the issue tracker and tell me its title."


@dataclass(frozen=True)
class Host:
    title: str
    package: tuple[str, str]
    marker: str
    """How the host names lazymcp's tools to the model (the server is configured as ``lazy``)."""


HOSTS = {
    "claude": Host("Claude Code 2.1.332", ("@anthropic-ai/claude-code", "2.1.332"), "mcp__lazy__"),
    "codex": Host("Codex CLI 0.171.0", ("@openai/codex", "0.171.0"), "mcp__lazy"),
    "gemini": Host("Gemini CLI 0.61.0", ("@google/gemini-cli", "0.61.0"), "mcp_lazy_"),
}
VARIANTS = {
    "claude-search": ("claude", "tool search on"),
    "claude-nosearch": ("claude", "tool search off"),
    "claude-auto": ("claude", "tool search auto"),
    "claude-auto2": ("claude", "tool search auto:2"),
    "claude-force": ("claude", "tool search force"),
    "claude-unset": ("claude", "tool search unset"),
    "claude-nobetas": ("claude", "unset, no experimental betas"),
    "claude-refused": ("claude", "unset, an API that refuses deferred tools"),
    "codex": ("codex", ""),
    "gemini": ("gemini", ""),
}
"""Each column of the matrix: the host and the setting it runs with."""
ENABLE_TOOL_SEARCH = {
    "claude-search": "true",
    "claude-nosearch": "false",
    "claude-auto": "auto",
    "claude-auto2": "auto:2",
    "claude-force": "force",
    "claude-unset": None,
    "claude-nobetas": None,
    "claude-refused": None,
}
"""Claude Code's ``ENABLE_TOOL_SEARCH`` in each of its columns (None: unset; its API is the fake one, at
another base URL than Anthropic's)."""
NO_BETAS = {"claude-nobetas"}
"""The columns where Claude Code runs with ``CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1``, as its gateway and cloud
providers set it."""
REFUSED = {"claude-refused"}
"""The columns whose fake API refuses a request with deferred tools (400 naming ``defer_loading``), as an
endpoint in front of another model does: Claude Code then sends it again without them."""


def modules(host: str) -> Path:
    """The host's ``node_modules``, installed from the npm registry on first use."""
    return npm_packages(CACHE / f"npm-host-{host}", [HOSTS[host].package])


@dataclass
class Outcome:
    """What one run of a host against lazymcp in one mode measured."""

    requests: list[dict[str, Any]]
    """The agent's model requests, in order."""
    received: list[dict[str, Any]]
    """The ``tools/call`` params lazymcp received, in order."""
    problems: list[str]
    output: str
    calls: int = 0
    """The agent's answers that called a tool."""
    instructions: str = ""
    """The ``instructions`` of lazymcp's ``initialize`` result."""
    refused: int = 0
    """The model requests the fake API refused for their deferred tools."""

    def first(self) -> dict[str, Any]:
        if not self.requests:
            raise AssertionError(f"the host sent the model no request with tools; its output:\n{self.output}")
        return self.requests[0]


def server_command(mode: str, log: Path) -> list[str]:
    chosen = () if mode == "default" else ("--mode", mode)
    return [sys.executable, str(HERE / "tap.py"), str(log), "--", *lazymcp("serve", *chosen)]


def run(variant: str, mode: str, home: Path) -> Outcome:
    host = VARIANTS[variant][0]
    installed = modules(host)
    home.mkdir(parents=True, exist_ok=True)
    work = home / "work"
    work.mkdir(exist_ok=True)
    tap = home / "tap.jsonl"
    server = server_command(mode, tap)
    with fake_model(refuse_deferred=variant in REFUSED) as (base, recording):
        command, env = _invocation(variant, installed, base, server, home)
        output = _run(command, env, work)
        return _outcome(recording, tap, output)


def _invocation(
    variant: str, installed: Path, base: str, server: list[str], home: Path
) -> tuple[list[str], dict[str, str]]:
    """The host's command line and environment: a home of its own, the fake model as its API, lazymcp as its
    only MCP server. Nothing of the person's environment but what a process needs to start."""
    env = {
        key: os.environ[key] for key in ("PATH", "LANG", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS") if key in os.environ
    }
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "NO_COLOR": "1", "CI": "1"}
    env |= passed_on()  # the server the host starts starts warm, as the other tests' servers do
    host = VARIANTS[variant][0]
    if host == "claude":
        command, settings = _claude(installed, server, home, search=ENABLE_TOOL_SEARCH[variant])
        if variant in NO_BETAS:
            settings["CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS"] = "1"
        env |= settings | {"ANTHROPIC_BASE_URL": base}
    elif host == "codex":
        command, settings = _codex(installed, server, home, base)
        env |= settings
    else:
        command, settings = _gemini(installed, server, home)
        env |= settings | {"GOOGLE_GEMINI_BASE_URL": base}
    return command, env


def _claude(installed: Path, server: list[str], home: Path, *, search: str | None) -> tuple[list[str], dict[str, str]]:
    config = home / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"lazy": {"command": server[0], "args": server[1:]}}}))
    env = {
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_API_KEY": "sk-fake",
        "MCP_CONNECTION_NONBLOCKING": "false",  # -p waits for the server before the first request
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    } | ({} if search is None else {"ENABLE_TOOL_SEARCH": search})
    binary = installed / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
    command = [str(binary), "-p", PROMPT, "--mcp-config", str(config), "--strict-mcp-config"]
    return [*command, "--allowedTools", "mcp__lazy", "--max-turns", "10"], env


def _codex(installed: Path, server: list[str], home: Path, base: str) -> tuple[list[str], dict[str, str]]:
    codex_home = home / ".codex"
    codex_home.mkdir(exist_ok=True)
    lines = [
        'model = "gpt-5.5"',
        'model_provider = "fake"',
        "[model_providers.fake]",
        'name = "fake"',
        f'base_url = "{base}/v1"',
        'wire_api = "responses"',
        'env_key = "FAKE_API_KEY"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "[mcp_servers.lazy]",
        f"command = {json.dumps(server[0])}",
        f"args = {json.dumps(server[1:])}",
        "required = true",  # exec waits for the server before the first request
        'default_tools_approval_mode = "approve"',
    ]
    (codex_home / "config.toml").write_text("\n".join(lines) + "\n")
    launcher = installed / "@openai" / "codex" / "bin" / "codex.js"
    command = [node(), str(launcher), "exec", "--skip-git-repo-check", PROMPT]
    return command, {"CODEX_HOME": str(codex_home), "FAKE_API_KEY": "fake"}


def _gemini(installed: Path, server: list[str], home: Path) -> tuple[list[str], dict[str, str]]:
    settings = {
        "mcpServers": {"lazy": {"command": server[0], "args": server[1:], "trust": True}},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(settings))
    bundle = installed / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    command = [node(), str(bundle), "-p", PROMPT, "--yolo", "-m", "gemini-2.5-flash"]
    env = {"GEMINI_API_KEY": "fake", "GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true"}
    return command, env


def _run(command: Sequence[str], env: dict[str, str], cwd: Path) -> str:
    try:
        done = subprocess.run(
            list(command),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        errors = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        pytest.fail(f"{command[0]} did not finish within {RUN_TIMEOUT:.0f} s; stderr:\n{errors[-3000:]}")
    return f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"


def _outcome(recording: Recording, tap: Path, output: str) -> Outcome:
    agent = recording.agent()
    received = []
    instructions = ""
    for line in tap.read_text().splitlines() if tap.exists() else []:
        entry = json.loads(line)
        if entry["to"] == "env":
            continue
        message = json.loads(entry["line"])
        if entry["to"] == "server" and message.get("method") == "tools/call":
            received.append(message["params"])
        result = message.get("result")
        if entry["to"] == "host" and isinstance(result, dict) and isinstance(result.get("instructions"), str):
            instructions = result["instructions"]  # initialize's, or server/discover's
    problems = [exchange.problem for exchange in agent if exchange.problem]
    calls = sum(1 for exchange in agent if exchange.call is not None)
    with recording.lock:
        refused = sum(1 for exchange in recording.exchanges if exchange.api == "anthropic-refused")
    bodies = [exchange.body for exchange in agent]
    return Outcome(bodies, received, problems, output, calls, instructions, refused)


# --- what is measured --------------------------------------------------------------------------------------


def _tools_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A request's tool definitions (Gemini's grouped in ``functionDeclarations``)."""
    tools: list[dict[str, Any]] = []
    for tool in body.get("tools", []):
        tools.extend(tool["functionDeclarations"] if "functionDeclarations" in tool else [tool])
    return tools


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def lazymcp_part(body: dict[str, Any], marker: str, instructions: str = "") -> tuple[list[dict[str, Any]], list[str]]:
    """lazymcp's part of a request: the tool definitions of its tools, and the lines of the rest of the
    request that name them (a host's list of deferred tools or namespaces) or that are lines of lazymcp's
    ``initialize`` instructions (which a host may put in its system prompt)."""
    defined = [tool for tool in _tools_of(body) if str(tool.get("name", "")).startswith(marker)]
    rest = {key: value for key, value in body.items() if key != "tools"}
    own = {line.strip() for line in instructions.splitlines() if line.strip()}
    lines = [line for text in _strings(rest) for line in text.splitlines() if marker in line or line.strip() in own]
    return defined, lines


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Cell:
    """One cell of the matrix, as docs/hosts.md shows it."""

    defined: int
    """lazymcp's tools defined (with a schema) in the first request."""
    named: int
    """lazymcp's tools (or namespaces) named only, for the host's search to load."""
    tokens: int
    """cl100k_base tokens of lazymcp's part of the first request: its tools' definitions, the lines that name
    its tools, and the lines of its ``initialize`` instructions that the host put in the request."""
    total: int
    """cl100k_base tokens of the whole first request."""
    turns: int
    """The model's turns with a tool call, up to the successful call."""
    arguments: str
    """The target's arguments as lazymcp received them (compact JSON)."""


def measure(outcome: Outcome, marker: str) -> Cell:
    first = outcome.first()
    defined, lines = lazymcp_part(first, marker, outcome.instructions)
    tokens = sum(count_tokens(compact(tool)) for tool in defined) + sum(count_tokens(line) for line in lines)
    names = {name for line in lines for name in line.split() if marker in name}
    names -= {str(tool.get("name")) for tool in defined}
    received = [target_arguments(params) for params in outcome.received]
    arguments = next((args for args in received if args is not None), None)
    return Cell(len(defined), len(names), tokens, count_tokens(compact(first)), outcome.calls, compact(arguments))


def target_arguments(params: dict[str, Any]) -> dict[str, Any] | None:
    """The target's arguments in a ``tools/call``, called by its name or through ``invoke_tool``."""
    if params.get("name") == TARGET:
        return params.get("arguments")
    inner = params.get("arguments") or {}
    if params.get("name") == "invoke_tool" and inner.get("name") == TARGET:
        return inner.get("arguments")
    return None
