"""Configuration files as the clients write them: VS Code's and Cursor's ``mcp.json`` with comments and
trailing commas, Claude Code's ``~/.claude.json`` with its user and per-project servers, and every
``${input:...}`` that has no value named at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from lazymcp.gateway.config import load_config, parse_config
from lazymcp.protocol.errors import ConfigError

from .test_config_forms import TIMEOUT, environment, gateway_refusing, project

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

VSCODE_MCP_JSON = """{
\t// 💡 Inputs are prompted on first server start, then stored securely by VS Code.
\t"inputs": [
\t\t{
\t\t\t"type": "promptString",
\t\t\t"id": "api-key",
\t\t\t"description": "The API key",
\t\t\t"password": true
\t\t},
\t],
\t"servers": {
\t\t"s": {
\t\t\t"type": "stdio",
\t\t\t"command": "${env:PY}", /* the project's interpreter */
\t\t\t"args": ["${workspaceFolder}/server.py", "http://not-a-comment//here",],
\t\t\t"env": {"API_KEY": "${input:api-key}",},
\t\t},
\t},
}
"""


def claude_json(folder: Path, server: Path) -> dict[str, Any]:
    """``~/.claude.json`` as Claude Code keeps it: its own settings, a user server, and projects."""
    stdio = {"type": "stdio", "command": sys.executable, "args": [str(server)], "env": {}}
    return {
        "numStartups": 12,
        "installMethod": "native",
        "autoUpdates": False,
        "mcpServers": {"u": {**stdio, "env": {"WHO": "user"}}, "s": {**stdio, "env": {"WHO": "user"}}},
        "projects": {
            str(folder): {
                "allowedTools": [],
                "history": [],
                "mcpContextUris": [],
                "mcpServers": {"s": {**stdio, "env": {"WHO": "project"}}},
                "enabledMcpjsonServers": [],
                "disabledMcpjsonServers": [],
                "hasTrustDialogAccepted": True,
                "projectOnboardingSeenCount": 1,
            },
            "/somewhere/else": {"allowedTools": [], "mcpServers": {"other": {**stdio}}},
        },
    }


async def given(config: Path, env: dict[str, str], *flags: str) -> dict[str, Any]:
    """How the configuration's server ``s`` was started, asked through a real gateway over ``config``."""
    args = ["-m", "lazymcp", "gateway", "--config", str(config), *flags]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    with anyio.fail_after(TIMEOUT):
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("s__given", {})
    assert not result.is_error, result
    return json.loads("".join(getattr(block, "text", "") for block in result.content))


@pytest.mark.anyio
async def test_vscodes_mcp_json_with_comments_and_trailing_commas_reaches_its_server(tmp_path: Path) -> None:
    folder = project(tmp_path)
    config = folder / ".vscode" / "mcp.json"
    config.parent.mkdir()
    config.write_text(VSCODE_MCP_JSON)
    started = await given(config, environment(tmp_path, LAZYMCP_INPUT_API_KEY="k3y"))
    assert started["argv"] == ["http://not-a-comment//here"]
    assert started["env"]["API_KEY"] == "k3y"


def test_cursors_mcp_json_reads_comments_too(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{\n  // my servers\n  "mcpServers": {\n    "a": {"command": "x", "args": ["/*y*/"]},\n  },\n}\n')
    assert load_config(config, {}).servers[0].command == ("x", "/*y*/")


def test_claudes_plain_json_files_are_refused_with_comments_saying_why(tmp_path: Path) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text('{\n  // my servers\n  "mcpServers": {"a": {"command": "x"}}\n}\n')
    with pytest.raises(ConfigError) as raised:
        load_config(config, {})
    assert "is not JSON (comments are read in an mcp.json only)" in raised.value.message


@pytest.mark.anyio
async def test_claude_codes_project_servers_are_chosen_with_project_and_win_over_the_users(tmp_path: Path) -> None:
    folder = project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    config = home / ".claude.json"
    config.write_text(json.dumps(claude_json(folder, folder / "server.py"), indent=2))
    started = await given(config, environment(tmp_path), "--project", str(folder))
    assert started["env"]["WHO"] == "project"


def test_the_current_directorys_project_is_read_by_default_and_the_user_servers_always(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = (tmp_path / "work").resolve()
    folder.mkdir()
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps(claude_json(folder, tmp_path / "server.py"), indent=2))
    assert [e.name for e in load_config(config, {}).servers] == ["u", "s"]  # not in a project: the user's
    monkeypatch.chdir(folder)
    servers = load_config(config, {}).servers
    assert [(e.name, e.env["WHO"]) for e in servers] == [("u", "user"), ("s", "project")]
    elsewhere = load_config(config, {}, project="/somewhere/else").servers
    assert [e.name for e in elsewhere] == ["u", "s", "other"]


def test_a_project_the_file_does_not_have_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps(claude_json(tmp_path, tmp_path / "server.py")))
    with pytest.raises(ConfigError) as raised:
        load_config(config, {}, project=tmp_path / "nope")
    assert raised.value.message == f"{config}: no project {str(tmp_path / 'nope')!r} under 'projects'"
    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {}}, source="f.json", project=tmp_path)
    assert "--project applies to Claude Code's ~/.claude.json" in raised.value.message


def test_every_missing_input_is_named_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / ".vscode" / "mcp.json"
    config.parent.mkdir()
    servers = {
        "a": {"command": "x", "env": {"KEY": "${input:api-key}", "AGAIN": "${input:api-key}"}},
        "b": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${input:token}"}},
        "c": {"command": "x", "args": ["${input:memory-file}"]},
    }
    config.write_text(json.dumps({"servers": servers}, indent="\t"))
    done = gateway_refusing(config, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    for variable in ("LAZYMCP_INPUT_API_KEY", "LAZYMCP_INPUT_TOKEN", "LAZYMCP_INPUT_MEMORY_FILE"):
        assert variable in done.stderr
    assert "(server 'b', field 'headers')" in done.stderr


def test_check_takes_project_too(tmp_path: Path) -> None:
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps(claude_json(tmp_path, tmp_path / "server.py")))
    done = subprocess.run(
        [sys.executable, "-m", "lazymcp", "check", "--config", str(config), "--project", "/somewhere/else"],
        capture_output=True,
        text=True,
        env=environment(tmp_path),
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout
    assert done.stdout == f"{config}: ok: 3 servers (3 enabled), 0 with a manifest whose tools were checked too\n"
