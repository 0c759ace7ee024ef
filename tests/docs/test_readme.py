"""The README's code runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport

from ..conftest import ROOT

README = (ROOT / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
SH_BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.DOTALL)


def test_readme_has_the_two_commands_and_both_snippets() -> None:
    assert len(PYTHON_BLOCKS) == 2
    commands = [block.strip() for block in SH_BLOCKS if "pip install" in block]
    assert len(commands) == 2
    assert commands[0].endswith("lazymcp stats")
    assert commands[1].endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest" in ci and "lazymcp stats" in ci


@pytest.mark.anyio
async def test_server_author_snippet_makes_a_lazy_server() -> None:
    namespace: dict[str, Any] = {"__name__": "readme_snippet"}
    exec(compile(PYTHON_BLOCKS[0], "README.md", "exec"), namespace)
    async with Client(InMemoryTransport(namespace["server"]), mode="legacy") as client:
        listing = await client.list_tools()
        result = await client.call_tool("forecast", {"city": "Oslo"})
    assert [tool.name for tool in listing.tools] == ["describe_tools", "search_tools", "invoke_tool", "forecast"]
    assert listing.tools[3].description == "Weather forecast for a city."
    assert result.content[0].text == "Oslo: sunny for 3 days"  # type: ignore[union-attr]


def test_client_author_snippet_runs_against_the_sample_server() -> None:
    # Run as its own process, as a user would: it spawns `python -m lazymcp serve` over stdio.
    done = subprocess.run(
        [sys.executable, "-c", PYTHON_BLOCKS[1]], capture_output=True, text=True, timeout=60, cwd=ROOT, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["130", "issues_create", "False"]


def test_main_job_runs_from_the_installed_script(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("lazymcp")
    done = subprocess.run([str(script), "stats", "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '"mode": "stubs:summary"' in done.stdout


JSON_BLOCKS = re.findall(r"```json\n(.*?)```", README, re.DOTALL)


@pytest.mark.anyio
async def test_the_client_config_snippet_starts_a_lazy_github_server() -> None:
    import json

    import anyio
    from mcp import StdioServerParameters

    from lazymcp import LazyClient

    [config] = [json.loads(block) for block in JSON_BLOCKS if "mcpServers" in block]
    github = config["mcpServers"]["github"]
    command = str(Path(sys.executable).with_name(github["command"]))  # the installed console script
    env = {**os.environ, "GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"}  # listing tools needs no real account
    params = StdioServerParameters(command=command, args=github["args"], env=env)
    with anyio.fail_after(180):  # npx fetches the server from the npm registry on first use
        async with LazyClient(params, mode="auto") as client:
            stubs = await client.list_stubs()
            tool = await client.describe("create_issue")
    assert len(stubs) == 26
    assert all(set(stub) <= {"name", "description"} for stub in stubs)
    assert tool["inputSchema"]["required"] == ["owner", "repo", "title"]


def test_the_compatibility_table_is_the_one_the_client_suite_checks() -> None:
    from ..clients.matrix import readme_table, render

    assert readme_table(README) == render(), "run: python -m tests.clients.matrix"


def test_the_host_table_is_the_one_the_host_suite_checks() -> None:
    from ..hosts.matrix import readme_table, render

    assert readme_table(README) == render(), "run: python -m tests.hosts.matrix"
