"""The code of the README and of the pages of docs/ runs as written."""

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
AUTHORS = (ROOT / "docs" / "authors.md").read_text()
PROXY = (ROOT / "docs" / "proxy.md").read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", AUTHORS, re.DOTALL)
"""The server author's snippet and the client author's, in docs/authors.md."""
SH_BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.DOTALL)


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def test_readme_has_the_two_commands_and_both_snippets() -> None:
    assert len(PYTHON_BLOCKS) == 2
    assert blocks(README, "python") == []  # the snippets live in docs/authors.md, which the README links
    assert "(docs/authors.md)" in README
    commands = [block.strip() for block in SH_BLOCKS if "pip install" in block]
    assert len(commands) == 2
    assert commands[0].endswith("lazymcp stats")
    assert commands[1].endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest" in ci and "lazymcp stats" in ci


@pytest.mark.anyio
async def test_server_author_snippet_makes_a_lazy_server() -> None:
    namespace: dict[str, Any] = {"__name__": "readme_snippet"}
    exec(compile(PYTHON_BLOCKS[0], "docs/authors.md", "exec"), namespace)
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


JSON_BLOCKS = blocks(PROXY, "json")
"""docs/proxy.md's client configuration, with ``lazymcp proxy --`` in front of a server."""


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
    from ..clients.matrix import TABLE, doc_table, render

    assert TABLE.file == ROOT / "docs" / "compatibility.md"
    assert doc_table() == render(), "run: python -m tests.clients.matrix"


def test_the_host_table_is_the_one_the_host_suite_checks() -> None:
    from ..hosts.matrix import TABLE, doc_table, render

    assert TABLE.file == ROOT / "docs" / "hosts.md"
    assert doc_table() == render(), "run: python -m tests.hosts.matrix"


def test_the_matrices_check_their_page_and_say_when_it_differs(tmp_path: Path) -> None:
    """``python -m tests.<suite>.matrix --check`` passes on the page as it is, and fails once its copy of the
    table differs (on a copy of the page: the real one is never written)."""
    from ..clients import matrix as clients
    from ..doc_tables import DocTable
    from ..hosts import matrix as hosts

    for module in (clients, hosts):
        assert module.TABLE.main(module.render, ["--check"]) == 0
        copy = tmp_path / module.TABLE.file.name
        copy.write_text(module.TABLE.file.read_text().replace(" | ✓ |", " | ✗ |").replace("| 2 |", "| 9 |"))
        changed = DocTable(copy, module.TABLE.begin, module.TABLE.end)
        assert changed.main(module.render, ["--check"]) == 1
        assert changed.main(module.render, []) == 0 and changed.of() == module.render()
        assert copy.read_text() == module.TABLE.file.read_text()


@pytest.mark.anyio
async def test_the_readme_client_entry_starts_the_gateway_over_the_servers_of_a_configuration(tmp_path: Path) -> None:
    """The README's one entry, as a client runs it: ``lazymcp gateway --config FILE`` (the file the README
    names, put in a temporary folder) lists the describe meta-tools and every tool as ``<server>__<tool>``,
    and calls one."""
    import json

    import anyio
    from mcp import StdioServerParameters

    [entry] = [json.loads(block) for block in blocks(README, "json")]
    [(name, server)] = entry["mcpServers"].items()
    assert (name, server["command"]) == ("all", "lazymcp")
    config = tmp_path / Path(server["args"][-1]).name
    plain = [sys.executable, str(ROOT / "tests" / "servers" / "plain_server.py")]
    config.write_text(json.dumps({"mcpServers": {"plain": {"command": plain[0], "args": plain[1:]}}}))
    args = [*server["args"][:-1], str(config)]
    command = str(Path(sys.executable).with_name(server["command"]))  # the installed console script
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    with anyio.fail_after(120):
        async with Client(StdioServerParameters(command=command, args=args, env=env), mode="legacy") as client:
            listing = await client.list_tools()
            result = await client.call_tool("plain__add", {"a": 2, "b": 3})
    names = [tool.name for tool in listing.tools]
    assert names[:3] == ["describe_tools", "search_tools", "invoke_tool"]
    assert sorted(names[3:]) == ["plain__add", "plain__echo", "plain__upper"]
    assert result.content[0].text == "5"  # type: ignore[union-attr]
