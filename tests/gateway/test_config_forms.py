"""The clients' own configuration files, written as each client documents them, read by the gateway:
each file's variable forms reach a real server expanded, and what cannot be expanded stops the gateway
with one line before any server starts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from ..conftest import SERVERS

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

TIMEOUT = 60.0
"""Bound on one conversation with a gateway and its server, on a loaded machine."""
GIVEN = SERVERS / "given_server.py"


def write(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def environment(tmp_path: Path, **more: str) -> dict[str, str]:
    """The gateway's environment: this one, with a home of the test's own, and ``more``."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(home), "LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "PY": sys.executable, **more}


async def given(config: Path, env: dict[str, str]) -> dict[str, Any]:
    """What the configuration's one server ``s`` was started with, asked through a gateway over ``config``."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lazymcp", "gateway", "--config", str(config)], env=env
    )
    with anyio.fail_after(TIMEOUT):
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("s__given", {})
    assert not result.is_error, result
    return json.loads("".join(getattr(block, "text", "") for block in result.content))


def project(tmp_path: Path) -> Path:
    """A project folder holding the server as its own script (its path resolved, as the gateway's is), with
    the module it imports beside it."""
    folder = (tmp_path / "project").resolve()
    folder.mkdir()
    shutil.copy(GIVEN, folder / "server.py")
    shutil.copy(GIVEN.with_name("given_env.py"), folder)
    return folder


@pytest.mark.anyio
async def test_claude_codes_mcp_json_expands_variables_and_defaults_in_every_field(tmp_path: Path) -> None:
    folder = project(tmp_path)
    config = write(
        folder / ".mcp.json",
        {
            "mcpServers": {
                "s": {
                    "command": "${PY}",
                    "args": ["${PROJECT}/server.py", "--root=${ROOT_DIR:-/srv/files}", "--token=${TOKEN}"],
                    "env": {"TOKEN": "${TOKEN}", "LEVEL": "${LEVEL:-info}", "PLAIN": "a $TOKEN stays"},
                }
            }
        },
    )
    started = await given(config, environment(tmp_path, PROJECT=str(folder), TOKEN="t0k"))
    assert started["argv"] == ["--root=/srv/files", "--token=t0k"]
    env = started["env"]
    assert (env["TOKEN"], env["LEVEL"], env["PLAIN"]) == ("t0k", "info", "a $TOKEN stays")


@pytest.mark.anyio
async def test_vscodes_mcp_json_expands_env_workspace_home_and_inputs_given_in_the_environment(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    config = write(
        folder / ".vscode" / "mcp.json",
        {
            "inputs": [{"type": "promptString", "id": "api-key", "description": "The API key", "password": True}],
            "servers": {
                "s": {
                    "type": "stdio",
                    "command": "${env:PY}",
                    "args": ["${workspaceFolder}/server.py", "${userHome}/notes"],
                    "cwd": "${workspaceFolder}",
                    "env": {"API_KEY": "${input:api-key}"},
                }
            },
        },
    )
    env = environment(tmp_path, LAZYMCP_INPUT_API_KEY="s3cret")
    started = await given(config, env)
    assert started["argv"] == [f"{env['HOME']}/notes"]
    assert started["cwd"] == str(folder)
    assert started["env"]["API_KEY"] == "s3cret"


@pytest.mark.anyio
async def test_cursors_mcp_json_expands_env_home_and_workspace(tmp_path: Path) -> None:
    folder = project(tmp_path)
    config = write(
        folder / ".cursor" / "mcp.json",
        {
            "mcpServers": {
                "s": {
                    "command": "${env:PY}",
                    "args": ["${workspaceFolder}/server.py", "${userHome}", "${workspaceFolder}"],
                    "env": {"TOKEN": "${env:TOKEN}"},
                }
            }
        },
    )
    env = environment(tmp_path, TOKEN="t0k")
    started = await given(config, env)
    assert started["argv"] == [env["HOME"], str(folder)]
    assert started["env"]["TOKEN"] == "t0k"


def gateway_refusing(config: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``lazymcp gateway --config CONFIG`` run to its end (a configuration it refuses ends it at once)."""
    return subprocess.run(
        [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=environment(tmp_path),
        timeout=TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize(
    ("relative", "data", "said"),
    [
        (
            ".vscode/mcp.json",
            {"servers": {"s": {"command": "${env:PY}", "env": {"KEY": "${input:api-key}"}}}},
            "server 's', field 'env': ${input:api-key} is asked of the user by VS Code; set the environment "
            "variable LAZYMCP_INPUT_API_KEY to give it to the gateway",
        ),
        (
            ".mcp.json",
            {"mcpServers": {"s": {"command": "${PY}", "args": ["${NEWCOMER_DIR}/work/files"]}}},
            "server 's', field 'args': environment variable 'NEWCOMER_DIR' is not set; set it, or give a "
            "default as ${NEWCOMER_DIR:-default}",
        ),
        (
            ".mcp.json",
            {"mcpServers": {"s": {"command": "npx", "agrs": ["-y", "@modelcontextprotocol/server-memory"]}}},
            "server 's': unknown field 'agrs'; did you mean 'args'?",
        ),
    ],
    ids=["input", "unset", "misspelled"],
)
def test_what_cannot_be_expanded_stops_the_gateway_in_one_line(
    tmp_path: Path, relative: str, data: dict[str, Any], said: str
) -> None:
    config = write(tmp_path / relative, data)
    done = gateway_refusing(config, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr and str(config) in done.stderr
    assert done.stdout == ""


@pytest.mark.anyio
async def test_an_env_file_is_read_as_vscode_reads_it_and_the_entrys_own_env_wins(tmp_path: Path) -> None:
    folder = project(tmp_path)
    (folder / ".env").write_text(
        "# the team's keys\n"
        "API_KEY=from-file\n"
        'QUOTED="two words"\n'
        "SINGLE='kept $AS \\n is'\n"
        'LINES="a\\nb"\n'
        "export EXPORTED = yes \n"
        "HASH=a#b\n"
        "not a variable line\n"
        "\n"
        "LEVEL=debug\n"
    )
    config = write(
        folder / ".vscode" / "mcp.json",
        {
            "servers": {
                "s": {
                    "command": "${env:PY}",
                    "args": ["${workspaceFolder}/server.py"],
                    "envFile": "${workspaceFolder}/.env",
                    "env": {"LEVEL": "info"},
                }
            }
        },
    )
    env = (await given(config, environment(tmp_path)))["env"]
    assert (env["API_KEY"], env["QUOTED"], env["SINGLE"], env["LINES"]) == (
        "from-file",
        "two words",
        "kept $AS \\n is",
        "a\nb",
    )
    assert (env["EXPORTED"], env["HASH"], env["LEVEL"]) == ("yes", "a#b", "info")
    assert "not a variable line" not in " ".join(env)
    relative = write(
        folder / ".cursor" / "mcp.json",
        {"mcpServers": {"s": {"command": "${env:PY}", "args": ["${workspaceFolder}/server.py"], "envFile": ".env"}}},
    )  # relative to the workspace folder
    assert (await given(relative, environment(tmp_path)))["env"]["LEVEL"] == "debug"


@pytest.mark.parametrize(
    ("env_file", "said"),
    [("${workspaceFolder}/missing.env", "No such file or directory"), ("${workspaceFolder}", "Is a directory")],
    ids=["missing", "directory"],
)
def test_an_env_file_that_cannot_be_read_stops_the_gateway_in_one_line(
    tmp_path: Path, env_file: str, said: str
) -> None:
    config = write(tmp_path / ".vscode" / "mcp.json", {"servers": {"s": {"command": "${env:PY}", "envFile": env_file}}})
    done = gateway_refusing(config, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert str(config) in done.stderr and "server 's'" in done.stderr and said in done.stderr
    assert str(tmp_path) in done.stderr.split("field 'envFile'")[1]  # the path it tried
