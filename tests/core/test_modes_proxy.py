"""Modes through the proxy (``lazymcp proxy --mode``) and ``lazymcp serve --mode``: the router's decisions,
then real SDK clients over real processes and HTTP, in both protocol eras."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, StdioServerParameters

from lazymcp.core.actions import Fail, ToClient, ToServer
from lazymcp.core.proxy import Proxy
from lazymcp.core.relist import RELIST_WAIT
from lazymcp.run.serve import build_server
from lazymcp.surfaces.options import Options

from ..conftest import ERAS, SERVERS, lazy_http_server, payload, tool
from ..cores import UPSTREAM, proxy_core, wire
from ..raw import MODERN, line

TIMEOUT = 30
SURFACE = ["list_tool_categories", "search_tools", "describe_tools", "invoke_tool"]


TOOLS = [
    tool("issues_create", "Create an issue in a project.", args={"project": "string", "title": "string"}),
    tool("issues_close", "Close an issue by its key.", args={"key": "string"}),
    tool("wiki_page_edit", "Edit a wiki page's text.", args={"page": "string", "text": "string"}),
    tool("echo", "Echo the text back.", args={"text": "string"}),
]
NAMES = [t["name"] for t in TOOLS]


def sent(action: Any) -> dict[str, Any]:
    assert isinstance(action, ToClient | ToServer)
    return json.loads(action.data)


# --- the router (no I/O) -------------------------------------------------------------------------


def ready_router(**settings: Any) -> Proxy:
    """The proxy's core past a 2025 client's handshake, with the upstream's tools fetched."""
    router = proxy_core(Options(**settings))
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    router.from_client(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}), 0)
    result: dict[str, Any] = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "up", "version": "1"},
    }
    router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": 1, "result": result}), 0)
    [_, fetch] = router.from_client(line({"jsonrpc": "2.0", "method": "notifications/initialized"}), 0)
    router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": sent(fetch)["id"], "result": {"tools": TOOLS}}), 0)
    assert router.catalog is not None
    return router


def call(router: Proxy, request_id: int, name: str, arguments: dict[str, Any], **extra: Any) -> list[Any]:
    params = {"name": name, "arguments": arguments, **extra}
    return router.from_client(line({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}), 0)


def listing(router: Proxy, request_id: int, **params: Any) -> list[str]:
    [answer] = router.from_client(
        line({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params}), 0
    )
    return [entry["name"] for entry in sent(answer)["result"]["tools"]]


@pytest.mark.requirement("LT-21")
def test_the_router_keeps_its_clients_dynamic_session_and_announces_each_change_before_the_answer() -> None:
    router = ready_router(mode="dynamic", core_tools=("echo",))
    assert listing(router, 2) == ["search_tools", "manage_tools", "echo"]
    [notice] = call(router, 3, "search_tools", {"query": "issue", "limit": 2})  # its answer waits for a re-list
    assert sent(notice) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    relist, answer = router.from_client(line({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}), 0.1)
    names = [entry["name"] for entry in sent(relist)["result"]["tools"]]
    assert names == ["search_tools", "manage_tools", "issues_create", "issues_close", "echo"]
    assert sent(answer)["id"] == 3  # after the re-list's answer, so the new tools are seen by then
    assert set(payload(sent(answer)["result"])["enabled"]) == {"issues_create", "issues_close"}
    assert len(call(router, 5, "search_tools", {"query": "issue", "limit": 2})) == 1  # nothing new: no notice


@pytest.mark.requirement("LT-21")
def test_an_answer_held_for_a_re_list_that_does_not_come_goes_within_a_second() -> None:
    router = ready_router(mode="dynamic")
    [notice] = call(router, 3, "search_tools", {"query": "issue", "limit": 2})
    assert router.owed == 1  # the driver drains it before it ends
    assert router.expire(0.5) == []
    [answer] = router.expire(RELIST_WAIT)
    assert sent(answer)["id"] == 3 and router.owed == 0


@pytest.mark.requirement("LT-22")
def test_a_modern_request_to_a_dynamic_router_gets_the_stable_surface() -> None:
    router = ready_router(mode="dynamic", core_tools=("echo",))
    assert listing(router, 2, _meta=MODERN) == [*SURFACE, "echo"]
    [answer] = call(router, 3, "search_tools", {"query": "issue"}, _meta=MODERN)
    assert "enabled" not in payload(sent(answer)["result"])


@pytest.mark.requirement("LT-25")
def test_invoke_tool_goes_upstream_as_the_real_tools_call_under_the_same_id() -> None:
    router = ready_router(mode="proxy")
    [up] = call(router, 7, "invoke_tool", {"name": "echo", "arguments": {"text": "hi"}}, _meta={"progressToken": 4})
    assert isinstance(up, ToServer)
    assert sent(up) == {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": 4}},
    }
    back = line({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hi"}]}})
    assert wire(router.from_server(UPSTREAM, back, 0)) == [("client", back)]
    [refused] = call(router, 8, "invoke_tool", {"name": "echo", "arguments": {}})
    assert isinstance(refused, ToClient) and sent(refused)["result"]["isError"] is True


@pytest.mark.requirement("LT-18")
def test_the_router_fails_at_start_up_when_the_configuration_names_a_tool_the_upstream_lacks() -> None:
    router = proxy_core(Options(mode="core", core_tools=("issues_crate",)))
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    router.from_client(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}), 0)
    router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {}}}), 0)
    [_, fetch] = router.from_client(line({"jsonrpc": "2.0", "method": "notifications/initialized"}), 0)
    [failed] = router.from_server(
        UPSTREAM, line({"jsonrpc": "2.0", "id": sent(fetch)["id"], "result": {"tools": TOOLS}}), 0
    )
    assert isinstance(failed, Fail) and "issues_crate" in failed.reason and "issues_create" in failed.reason


def test_the_upstreams_name_is_the_category_of_its_unprefixed_tools() -> None:
    router = ready_router(mode="proxy")
    [answer] = call(router, 2, "list_tool_categories", {})
    categories = {entry["name"] for entry in payload(sent(answer)["result"])["categories"]}
    assert categories == {"issues", "wiki", "up"}  # "echo" has no prefix: the upstream's serverInfo.name


# --- real processes ------------------------------------------------------------------------------


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    return path


def proxy(catalog: Path, *options: str, upstream: str = "legacy-only") -> StdioServerParameters:
    """``lazymcp proxy OPTIONS -- <a server of the catalog>``: by default a 2025-only server, the common case
    (a 2026 client is bridged), quick to start; or ``lazymcp serve``, which speaks both eras."""
    if upstream == "legacy-only":
        command = [sys.executable, str(SERVERS / "legacy_only_server.py"), str(catalog)]
    else:
        command = [sys.executable, "-m", "lazymcp", "serve", "--catalog", str(catalog)]
    return StdioServerParameters(command=sys.executable, args=["-m", "lazymcp", "proxy", *options, "--", *command])


def ran(result: types.CallToolResult) -> dict[str, Any]:
    """What the tool ran with: the arguments the 2025-only server (or ``lazymcp serve``) echoes."""
    echoed = payload(result)
    return echoed["arguments"] if "tool" in echoed else echoed


EXPECTED = {
    "describe": ["describe_tools", "search_tools", "invoke_tool", *NAMES],
    "dynamic": ["search_tools", "manage_tools", "echo"],
    "proxy": SURFACE,
    "core": [*SURFACE, "issues_create", "issues_close"],
    "eager": NAMES,
}
OPTIONS = {
    "describe": ["--meta-tools", "search_tools,invoke_tool"],
    "dynamic": ["--core-tools", "echo"],
    "proxy": [],
    "core": ["--core-tools", "issues"],
    "eager": [],
}


@pytest.mark.anyio
@pytest.mark.requirement("LT-18")
@pytest.mark.requirement("LT-19")
@pytest.mark.requirement("LT-20")
@pytest.mark.requirement("LT-24")
@pytest.mark.parametrize("mode", list(EXPECTED))
@pytest.mark.parametrize("era", ERAS)
async def test_the_proxy_serves_each_mode_to_a_stock_client(era: str, mode: str, catalog_file: Path) -> None:
    expected = [*SURFACE, "echo"] if mode == "dynamic" and era != "legacy" else EXPECTED[mode]
    with anyio.fail_after(TIMEOUT):
        async with Client(proxy(catalog_file, "--mode", mode, *OPTIONS[mode]), mode=era) as client:
            listed = [entry.name for entry in (await client.list_tools()).tools]
            if "invoke_tool" in listed:
                result = await client.call_tool("invoke_tool", {"name": "issues_close", "arguments": {"key": "K-1"}})
            else:
                result = await client.call_tool("issues_close", {"key": "K-1"})  # callable by name in every mode
            found = await client.call_tool("search_tools", {"query": "wiki"})
    assert listed == expected
    assert ran(result) == {"key": "K-1"}
    assert payload(found)["tools"][0]["name"] == "wiki_page_edit"


@pytest.mark.anyio
@pytest.mark.requirement("LT-21")
async def test_a_legacy_client_of_a_dynamic_proxy_enables_tools_and_hears_of_it(catalog_file: Path) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    params = proxy(catalog_file, "--mode", "dynamic", "--max-enabled", "1")
    with anyio.fail_after(TIMEOUT):
        async with Client(params, mode="legacy", message_handler=on_message) as client:
            await client.list_tools()
            await client.call_tool("search_tools", {"query": "wiki page"})
            await changed.wait()
            first = [entry.name for entry in (await client.list_tools()).tools]
            enabled = payload(await client.call_tool("manage_tools", {"action": "enable", "names": ["issues_close"]}))
            second = [entry.name for entry in (await client.list_tools()).tools]
            closed = await client.call_tool("issues_close", {"key": "K-2"})
    assert first == ["search_tools", "manage_tools", "wiki_page_edit"]
    assert enabled["evicted"] == ["wiki_page_edit"]  # the cap is one: the least recently used goes
    assert second == ["search_tools", "manage_tools", "issues_close"]
    assert ran(closed) == {"key": "K-2"}


@pytest.mark.anyio
@pytest.mark.requirement("LT-28")
@pytest.mark.parametrize("era", ERAS)
async def test_a_metadata_file_is_how_the_proxy_learns_categories_summaries_and_examples(
    era: str, catalog_file: Path, tmp_path: Path
) -> None:
    metadata = tmp_path / "meta.json"
    entry = {"category": "tracker", "summary": "Open a ticket.", "examples": [{"project": "P", "title": "t"}]}
    metadata.write_text(json.dumps({"tools": {"issues_create": entry}, "categories": {"tracker": "Tickets."}}))
    with anyio.fail_after(TIMEOUT):
        params = proxy(catalog_file, "--mode", "proxy", "--metadata", str(metadata), upstream="lazymcp serve")
        async with Client(params, mode=era) as client:
            categories = payload(await client.call_tool("list_tool_categories", {}))["categories"]
            found = payload(await client.call_tool("search_tools", {"query": "ticket"}))
            described = payload(await client.call_tool("describe_tools", {"names": ["issues_create"]}))
    assert {"name": "tracker", "tools": 1, "description": "Tickets."} in categories
    assert found["tools"][0] == {"name": "issues_create", "summary": "Open a ticket.", "category": "tracker"}
    assert described["metadata"]["issues_create"]["examples"] == [{"project": "P", "title": "t"}]


@pytest.mark.anyio
@pytest.mark.requirement("LT-22")
@pytest.mark.requirement("LT-25")
async def test_a_2026_client_of_a_dynamic_proxy_before_a_2025_only_server_gets_the_stable_surface() -> None:
    upstream = [sys.executable, str(SERVERS / "legacy_only_server.py")]
    args = ["-m", "lazymcp", "proxy", "--mode", "dynamic", "--core-tools", "notes_find", "--", *upstream]
    with anyio.fail_after(TIMEOUT):
        async with Client(StdioServerParameters(command=sys.executable, args=args), mode="2026-07-28") as client:
            listed = [entry.name for entry in (await client.list_tools()).tools]
            invoked = await client.call_tool("invoke_tool", {"name": "notes_add", "arguments": {"title": "milk"}})
            categories = payload(await client.call_tool("list_tool_categories", {}))
    assert listed == [*SURFACE, "notes_find"]
    ran = payload(invoked)
    assert (ran["tool"], ran["arguments"]) == ("notes_add", {"title": "milk"})
    assert ran["meta"] is None  # the 2026 envelope stays behind: a 2025 server does not know it
    assert categories["categories"] == [{"name": "notes", "tools": 2}]


@pytest.mark.anyio
async def test_the_proxy_exits_with_status_1_when_the_configuration_names_a_tool_the_upstream_lacks(
    catalog_file: Path,
) -> None:
    upstream = [sys.executable, str(SERVERS / "legacy_only_server.py"), str(catalog_file)]
    command = [sys.executable, "-m", "lazymcp", "proxy", "--mode", "core", "--core-tools", "isues", "--", *upstream]
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "peer", "version": "1"}}
    with anyio.fail_after(TIMEOUT):
        async with await anyio.open_process(command) as process:
            assert process.stdin is not None and process.stdout is not None and process.stderr is not None
            out = BufferedByteReceiveStream(process.stdout)
            await process.stdin.send(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}) + b"\n")
            await out.receive_until(b"\n", 1 << 20)
            # One write (under PIPE_BUF, so one read): the proxy has read the tools/list when it learns the
            # configuration is wrong and exits. Sent apart, a loaded machine could let the catalog fail
            # first, and the proxy would exit before reading the request at all.
            initialized = line({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await process.stdin.send(
                initialized + b"\n" + line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + b"\n"
            )
            answer = json.loads(await out.receive_until(b"\n", 1 << 20))
            code = await process.wait()
            stderr = b"".join([chunk async for chunk in process.stderr]).decode()
    assert answer["id"] == 2 and answer["error"]["code"] == -32000
    assert code == 1
    assert "isues" in stderr and "issues" in stderr


# --- lazymcp serve --mode: stdio and HTTP -----------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.requirement("LT-21")
@pytest.mark.requirement("LT-22")
@pytest.mark.parametrize("era", ERAS)
async def test_serve_in_dynamic_mode_over_stdio(era: str, catalog_file: Path) -> None:
    args = ["-m", "lazymcp", "serve", "--catalog", str(catalog_file), "--mode", "dynamic"]
    with anyio.fail_after(TIMEOUT):
        async with Client(StdioServerParameters(command=sys.executable, args=args), mode=era) as client:
            await client.call_tool("search_tools", {"query": "close issue", "limit": 1})
            listed = [entry.name for entry in (await client.list_tools()).tools]
    assert listed == (["search_tools", "manage_tools", "issues_close"] if era == "legacy" else SURFACE)


@asynccontextmanager
async def dynamic_http(*, stateless: bool) -> AsyncIterator[str]:
    lazy = build_server(TOOLS, Options(mode="dynamic", core_tools=("echo",)))
    async with lazy_http_server(lazy, stateless=stateless) as url:
        yield url


@pytest.mark.anyio
@pytest.mark.requirement("LT-21")
@pytest.mark.requirement("LT-22")
@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
async def test_dynamic_mode_over_http_keeps_a_session_only_where_there_is_one(stateless: bool) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(TIMEOUT):
        async with (
            dynamic_http(stateless=stateless) as url,
            Client(url, mode="legacy", message_handler=on_message) as client,
        ):
            await client.call_tool("search_tools", {"query": "edit wiki", "limit": 1})
            if not stateless:
                await changed.wait()  # sent on the call's own response stream: no GET stream needed
            listed = [entry.name for entry in (await client.list_tools()).tools]
    if stateless:  # each POST is a new connection: no session to remember, no channel to announce on
        assert listed == [*SURFACE, "echo"]
    else:
        assert listed == ["search_tools", "manage_tools", "wiki_page_edit", "echo"]
