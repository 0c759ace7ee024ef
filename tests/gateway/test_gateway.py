"""``lazymcp gateway`` in front of real servers from the registries, two Node and two Python, side by side.

The servers are installed by the fixtures on first use, at pinned versions, in the tests' install cache
(``conftest.TEST_CACHE``): the npm packages under ``npm-servers`` (beside server-everything), the PyPI ones
in their own venv under ``py-servers``. Clients are the SDK's stock ``Client`` and ``LazyClient``, over stdio.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from lazymcp.cli import main
from lazymcp.client import LazyClient, raw_request
from lazymcp.protocol.errors import ErrorCode

from ..conftest import FIVE_SERVERS, NPM_CACHE, ROOT, STOCK_METAS, install_lock, npm_install, warm_environment
from ..five_servers import NPM_PACKAGES, PYPI_IMPORTS, PYPI_PACKAGES
from ..raw import hostile

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

TIMEOUT = 60.0
"""Bound on one test's conversation, with up to five servers starting on a loaded machine."""


@pytest.fixture(scope="session")
def node_servers(everything_command: list[str]) -> dict[str, list[str]]:
    """server-memory and server-filesystem from npm (installed once), and server-everything."""
    scripts = {name: FIVE_SERVERS.node_entry(name) for name in ("memory", "filesystem")}
    with install_lock(NPM_CACHE):
        if not all(script.exists() for script in scripts.values()):
            npm_install(*NPM_PACKAGES)
    node = everything_command[0]
    return {"everything": everything_command, **{name: [node, str(script)] for name, script in scripts.items()}}


@pytest.fixture(scope="session")
def python_servers() -> dict[str, list[str]]:
    """mcp-server-time and mcp-server-git from PyPI, in their own venv (created once)."""
    venv = FIVE_SERVERS.python
    bin_dir = venv / "bin"
    marker = venv / "lazymcp-pins.json"
    with install_lock(venv):
        if not (marker.exists() and json.loads(marker.read_text()) == list(PYPI_PACKAGES)):
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
            done = subprocess.run(
                [str(bin_dir / "python"), "-m", "pip", "install", "-q", *PYPI_PACKAGES],
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr
            marker.write_text(json.dumps(list(PYPI_PACKAGES)))
    warm_environment(bin_dir / "python", *PYPI_IMPORTS)
    return {"time": [str(bin_dir / "mcp-server-time")], "git": [str(bin_dir / "mcp-server-git")]}


def entry(command: Sequence[str], *args: str, **more: Any) -> dict[str, Any]:
    return {"command": command[0], "args": [*command[1:], *args], **more}


def watched(command: Sequence[str], pidfile: Path) -> list[str]:
    """The command run through ``sh``, which first writes its process id (the server's, after exec) to a file."""
    return ["sh", "-c", 'echo $$ > "$0"; exec "$@"', str(pidfile), *command]


@pytest.fixture
def config(tmp_path: Path, node_servers: dict[str, list[str]], python_servers: dict[str, list[str]]) -> Path:
    """A client configuration of the four registry servers and server-everything (``tests/five_servers.py``,
    installed by the fixtures); memory is watched."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello from the gateway\n")
    servers = FIVE_SERVERS.entries(files, tmp_path / "m.jsonl", ROOT)
    memory = servers["memory"]
    servers["memory"] = entry(watched([memory["command"], *memory["args"]], tmp_path / "memory.pid"), env=memory["env"])
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"mode": "describe"}}))
    return path


def gateway(config: Path, cache: Path, *options: str) -> StdioServerParameters:
    """The gateway of ``config``. Its first listing waits for every server (``--first-list-wait 0``): on a
    loaded machine five servers can take past the default 10 s to start, and these tests list them all."""
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(cache)}
    args = ["-m", "lazymcp", "gateway", "--config", str(config), "--first-list-wait", "0", *options]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.anyio
async def test_a_stock_client_lists_and_calls_every_server_through_one_endpoint(config: Path, tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with Client(gateway(config, tmp_path / "cache"), mode="legacy") as client:
            listing = await client.list_tools()
            names = [tool.name for tool in listing.tools]
            echo = await client.call_tool("everything__echo", {"message": "hi"})
            stored = await client.call_tool(
                "memory__create_entities",
                {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]},
            )
            graph = await client.call_tool("memory__read_graph", {})
            listed = await client.call_tool("filesystem__list_directory", {"path": str(tmp_path / "files")})
            now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
            status = await client.call_tool("git__git_status", {"repo_path": str(ROOT)})
            found = await client.call_tool("search_tools", {"query": "current time in a timezone"})
    metas = len(STOCK_METAS)
    assert names[:metas] == STOCK_METAS
    assert {name.partition("__")[0] for name in names[metas:]} == {"everything", "memory", "filesystem", "time", "git"}
    assert all(tool.input_schema == {"type": "object", "properties": {}} for tool in listing.tools[metas:])
    assert "hi" in text(echo)
    assert not stored.is_error and "Ada" in text(graph)
    assert "hello.txt" in text(listed)
    assert not now.is_error and "UTC" in text(now)
    assert not status.is_error and "status" in text(status).lower()  # "Repository status: ..." (any branch state)
    assert "time__get_current_time" in text(found)


@pytest.mark.anyio
async def test_an_aware_client_describes_tools_of_several_servers_in_one_batch(config: Path, tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with LazyClient(gateway(config, tmp_path / "cache"), mode="legacy") as client:
            stubs = await client.list_stubs()
            tools, unknown = await client.describe_batch(["git__git_log", "time__convert_time", "nope__x"])
            moved = await client.call_tool(
                "time__convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            )
    assert all(set(stub) <= {"name", "description"} for stub in stubs)
    assert [tool["name"] for tool in tools] == ["git__git_log", "time__convert_time"]
    assert "repo_path" in tools[0]["inputSchema"]["properties"]
    assert unknown == ["nope__x"]
    assert "21:00" in text(moved)


@pytest.mark.anyio
async def test_with_manifests_a_server_starts_only_on_its_first_call(config: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    refresh = gateway(config, cache, "--refresh")
    with anyio.fail_after(TIMEOUT):
        done = await anyio.run_process([refresh.command, *refresh.args], env=refresh.env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().count("server 'memory': 9 tools") == 1  # said as it listed, not again
    pidfile = tmp_path / "memory.pid"
    pidfile.unlink()
    with anyio.fail_after(TIMEOUT):
        async with Client(gateway(config, cache), mode="legacy") as stock:  # what a client lists at start-up
            prompts = await stock.list_prompts()
            resources = await stock.list_resources()
            templates = await stock.list_resource_templates()
            tools = await stock.list_tools()
        started_by_start_up_lists = pidfile.exists()
        async with LazyClient(gateway(config, cache), mode="legacy") as client:
            stubs = await client.list_stubs()
            described = await client.describe("memory__read_graph")
            started_by_listing = pidfile.exists()
            await client.call_tool("memory__read_graph", {})
            started_by_call = pidfile.exists()
    assert len(stubs) == 13 + 9 + 14 + 2 + 12
    assert described["name"] == "memory__read_graph"
    assert (started_by_start_up_lists, started_by_listing, started_by_call) == (False, False, True)
    assert "everything__simple-prompt" in [prompt.name for prompt in prompts.prompts]  # from manifests
    assert resources.resources and templates.resource_templates and tools.tools


@pytest.mark.anyio
async def test_a_server_killed_mid_session_fails_alone(config: Path, tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with Client(gateway(config, tmp_path / "cache"), mode="legacy") as client:
            before = await client.call_tool("memory__read_graph", {})
            os.kill(int((tmp_path / "memory.pid").read_text()), signal.SIGKILL)
            with pytest.raises(MCPError) as failed:
                await client.call_tool("memory__read_graph", {})
            others = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
            listing = await client.list_tools()
            described = await raw_request(client.session, "tools/describe", {"name": "memory__read_graph"})
            meta = await client.call_tool("describe_tools", {"names": ["memory__read_graph", "time__get_current_time"]})
    assert not before.is_error
    assert list(json.loads(text(meta))["unavailable"]) == ["memory__read_graph"]  # what a stock client's model reads
    assert failed.value.code == ErrorCode.UPSTREAM_ERROR
    assert "server 'memory'" in failed.value.message
    assert not others.is_error
    assert "memory__read_graph" in [tool.name for tool in listing.tools]
    assert "server 'memory'" in described["tool"]["_meta"]["io.lazymcp/gateway"]["unavailable"]


def test_stats_of_a_config_prints_every_server_and_both_totals(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LAZYMCP_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["stats", "--config", str(config)]) == 0
    rows = {line.split("  ")[0].strip(): line.split() for line in capsys.readouterr().out.splitlines() if line}
    assert {"everything", "memory", "filesystem", "time", "git"} <= set(rows)
    assert rows["memory"][1] == "9"
    one_proxy_each = int(rows["total, one proxy each"][-2].replace(",", ""))
    one_gateway = int(rows["total, one gateway"][-2].replace(",", ""))
    assert one_gateway < one_proxy_each < int(rows["total, one gateway"][-3].replace(",", ""))


@pytest.mark.anyio
async def test_a_servers_sampling_request_reaches_the_client_that_caused_it(
    node_servers: dict[str, list[str]], tmp_path: Path
) -> None:
    config = tmp_path / "one.json"
    config.write_text(json.dumps({"mcpServers": {"everything": entry(node_servers["everything"])}}))
    changed = anyio.Event()
    asked: list[Any] = []

    async def on_message(message: Any) -> None:
        nonlocal changed
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async def on_sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Seven."), model="fixed"
        )

    trigger = "everything__trigger-sampling-request"
    with anyio.fail_after(TIMEOUT):
        async with Client(
            gateway(config, tmp_path / "cache"),
            mode="legacy",
            message_handler=on_message,
            sampling_callback=on_sampling,
        ) as client:
            while trigger not in [tool.name for tool in (await client.list_tools()).tools]:
                await changed.wait()  # server-everything adds it once it knows the client can sample
                changed = anyio.Event()
            result = await client.call_tool(trigger, {"prompt": "Name a prime number.", "maxTokens": 42})
    assert len(asked) == 1
    assert "Seven." in text(result)


@pytest.mark.anyio
async def test_prompts_are_namespaced_and_resources_reach_the_server_that_listed_them(
    config: Path, tmp_path: Path
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with Client(gateway(config, tmp_path / "cache"), mode="legacy") as client:
            prompts = await client.list_prompts()
            prompt = await client.get_prompt("everything__simple-prompt", {})
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            static = next(r.uri for r in resources.resources if "static/document" in str(r.uri))
            read = await client.read_resource(static)
            dynamic = await client.read_resource("demo://resource/dynamic/text/3")
            with pytest.raises(MCPError) as unknown:
                await client.read_resource("nowhere://x")
    assert "everything__simple-prompt" in [p.name for p in prompts.prompts]
    assert "simple prompt" in str(prompt.messages[0].content)
    assert [str(t.uri_template) for t in templates.resource_templates][0].startswith("demo://")
    assert str(read.contents[0].uri) == str(static)
    assert "3" in str(dynamic.contents[0].uri)
    assert unknown.value.code == ErrorCode.INVALID_PARAMS


@pytest.mark.anyio
async def test_a_2026_client_lists_calls_and_reads_across_servers(config: Path, tmp_path: Path) -> None:
    """A 2026-07-28 client sends no initialize: the gateway answers discover itself, starts its servers
    without the client's handshake, and envelopes what they answer as a 2026 server would."""
    params = gateway(config, tmp_path / "cache")
    with anyio.fail_after(TIMEOUT):
        async with Client(params, mode="2026-07-28") as client:
            version = client.protocol_version
            listing = await client.list_tools()
            echoed = await client.call_tool("everything__echo", {"message": "across eras"})
            now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
            prompt = await client.get_prompt("everything__args-prompt", {"city": "Lima"})
            resources = await client.list_resources()
            static = next(r.uri for r in resources.resources if "static/document" in str(r.uri))
            read = await client.read_resource(static)
        async with LazyClient(params, mode="2026-07-28") as lazy:
            supported = lazy.server_supports_lazy
            stubs = await lazy.list_stubs()
            described = await lazy.describe("git__git_log")
    assert version == "2026-07-28"
    assert [tool.name for tool in listing.tools[: len(STOCK_METAS)]] == STOCK_METAS
    assert echoed.content[0].text == "Echo: across eras"  # type: ignore[union-attr]
    assert not now.is_error and "UTC" in text(now)
    assert "Lima" in str(prompt.messages[0].content)
    assert str(read.contents[0].uri) == str(static)
    assert supported and "memory__read_graph" in [stub["name"] for stub in stubs]
    assert "repo_path" in described["inputSchema"]["properties"]


@pytest.mark.anyio
async def test_a_server_whose_input_stays_full_past_the_timeout_fails_alone(tmp_path: Path) -> None:
    """A server that stops reading holds neither the client nor the others; once its input has stayed
    full past --timeout it fails, and every call it owed gets an error naming it."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"deaf": entry(hostile()), "fine": entry(hostile())}}))
    failures: list[str] = []
    deaf = anyio.Event()

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        if params.data == "deaf from now on":
            deaf.set()

    params = gateway(config, tmp_path / "cache", "--timeout", "3", "--mode", "eager")
    with anyio.fail_after(TIMEOUT):
        async with Client(params, logging_callback=on_log) as client:

            async def fill(number: int) -> None:
                try:
                    await client.call_tool("deaf__echo", {"text": f"{number}" * 400_000})
                except MCPError as exc:
                    failures.append(exc.message)

            async def deafen() -> None:
                with pytest.raises(MCPError):
                    await client.call_tool("deaf__deaf", {})

            async with anyio.create_task_group() as group:
                group.start_soon(deafen)
                await deaf.wait()  # the server has stopped reading: what follows fills its input
                for number in range(8):
                    group.start_soon(fill, number)
            echoed = await client.call_tool("fine__echo", {"text": "still here"})
    assert failures and all("server 'deaf'" in failure for failure in failures)
    assert "still here" in text(echoed)
