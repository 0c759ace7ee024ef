"""``lazymcp check --config FILE``: every problem of a configuration, one a line, without starting a server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lazymcp.cli import main
from lazymcp.gateway.config import load_config
from lazymcp.run.manifests import ManifestStore

STARTED = "started.txt"
SERVER = f"import pathlib, sys; pathlib.Path(sys.argv[1], {STARTED!r}).write_text('started')"
"""A server that, were it started, would leave a file behind."""

VSCODE_WITH_PROBLEMS = """{
\t// servers of the team
\t"servers": {
\t\t"files": {
\t\t\t"type": "stdio",
\t\t\t"command": "no-such-server-program",
\t\t\t"args": ["--root", "${workspaceFolder}"],
\t\t\t"env": {"TOKEN": "${env:UNSET_IN_THIS_TEST}"},
\t\t},
\t\t"notes": {"command": "python3", "cwd": "/no/such/folder", "agrs": [],},
\t\t"remote": {"url": "https://:8080/mcp", "headers": {"Authorization": "Bearer ${input:token}"}},
\t\t"other": {"url": "ftp://example.com", "headers": {"A": "${input:other-key}"}},
\t\t"fine": {"command": "python3"},
\t},
\t"lazymcp": {"mode": "describe", "budget": "many"},
}
"""


def checked(capsys: pytest.CaptureFixture[str], config: Path, *flags: str) -> tuple[int, list[str]]:
    status = main(["check", "--config", str(config), *flags])
    return status, capsys.readouterr().out.splitlines()


def test_every_problem_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UNSET_IN_THIS_TEST", raising=False)
    config = tmp_path / ".vscode" / "mcp.json"
    config.parent.mkdir()
    config.write_text(VSCODE_WITH_PROBLEMS)
    status, lines = checked(capsys, config)
    assert status == 1
    where = f"{config}: server"
    assert sorted(lines) == sorted(
        [
            f"{where} 'files', field 'env': environment variable 'UNSET_IN_THIS_TEST' is not set; set it, or give a "
            "default as ${UNSET_IN_THIS_TEST:-default}",
            f"{where} 'files', field 'command': 'no-such-server-program' is not on PATH",
            f"{where} 'notes': unknown field 'agrs'; did you mean 'args'?",
            f"{where} 'notes', field 'cwd': '/no/such/folder' is not a directory",
            f"{where} 'remote': field 'url' must be an http:// or https:// URL",
            f"{where} 'other': field 'url' must be an http:// or https:// URL",
            f"{config}: field 'lazymcp.budget' must be a int",
            f"{config}: ${{input:token}} (server 'remote', field 'headers'), ${{input:other-key}} (server 'other', "
            "field 'headers') are asked of the user by VS Code; set the environment variables LAZYMCP_INPUT_TOKEN, "
            "LAZYMCP_INPUT_OTHER_KEY to give them to the gateway",
        ]
    )


def test_a_sound_configuration_is_one_ok_line_and_starts_no_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / ".mcp.json"
    servers = {f"s{n}": {"command": sys.executable, "args": ["-c", SERVER, str(tmp_path)]} for n in range(3)}
    config.write_text(json.dumps({"mcpServers": {**servers, "web": {"url": "https://example.com/mcp"}}}, indent=2))
    started: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        raise AssertionError("check started a process")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setenv("LAZYMCP_CACHE_DIR", str(tmp_path / "cache"))
    status, lines = checked(capsys, config)
    assert (status, started) == (0, [])
    assert lines == [f"{config}: ok: 4 servers (4 enabled), 0 with a manifest whose tools were checked too"]
    assert not (tmp_path / STARTED).exists()
    assert not (tmp_path / "cache").exists()  # nothing written either


def test_policy_patterns_are_checked_against_the_manifests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAZYMCP_CACHE_DIR", str(tmp_path / "cache"))
    config = tmp_path / ".mcp.json"
    access = {"alice": {"allow": ["files__read*", "files__delete", "mail__*"]}, "bob": {"allow": ["files__*"]}}
    servers = {"files": {"command": sys.executable}, "later": {"command": sys.executable}}
    config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": access}}))
    entry = load_config(config, {}).servers[0]
    tool = {"name": "read_file", "inputSchema": {"type": "object"}}
    ManifestStore(tmp_path / "cache").save(entry.identity(), [tool])
    status, lines = checked(capsys, config)
    assert status == 1
    pattern = f"{config}: 'lazymcp.access' key 'alice': pattern"
    assert lines == [
        f"{pattern} 'files__delete' matches no tool of the configuration's servers",
        f"{pattern} 'mail__*' names the server 'mail', which the configuration does not have",
    ]


def test_a_file_that_is_not_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text('{"mcpServers": {"a": {"command": "x"},}}')
    status, lines = checked(capsys, config)
    assert status == 1 and len(lines) == 1 and lines[0].startswith(f"configuration file {str(config)!r} is not JSON")
