"""Real SDK clients over real transports, in both protocol eras.

Every test talks JSON-RPC to a real server: the ``lazymcp serve`` command spawned over stdio, or
``serve_http`` (streamable HTTP, stateful and stateless) running in the test's own task group, or
``lazymcp serve --http`` as a subprocess. The clients are a stock ``mcp.Client`` (which knows nothing
of the extension) and ``LazyClient`` (which declares it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged

from lazymcp.client import LazyClient, raw_request
from lazymcp.protocol.messages import StockDefault
from lazymcp.run.serve import build_server, load_tools
from lazymcp.sdk import LazyTools
from lazymcp.surfaces.options import Options
from lazymcp.tools.sample import sample_tools

from ..conftest import (
    CATALOGS,
    DEFAULT_SETTINGS,
    ERAS,
    EXT_ID,
    META_TOOL,
    SEARCH_TOOL,
    SMALL_TOOLS,
    free_port,
    lazy_http_server,
    shared_catalog,
    until_listening,
)

STOCK_META_TOOLS = [META_TOOL, SEARCH_TOOL, "invoke_tool"]
"""The meta-tools ahead of a stock client's stubs in the default describe mode, in the order listed."""
INVALID_PARAMS = -32602
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
HOST = "127.0.0.1"

TEST_TIMEOUT = 30.0
"""Bound on one test's whole conversation (server start, every request, shutdown)."""
STARTUP_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0

TRANSPORTS = ("stdio", "http", "http-stateless")
"""stdio: the CLI as a subprocess; http / http-stateless: ``serve_http`` in the test's task group."""

BARE_STUBS = [
    {"name": "issues_create", "description": "Create an issue in a project."},
    {"name": "issues_search", "description": "Search issues with a query string, e.g. 'state:open label:bug'."},
    {"name": "echo", "description": "Say it again."},
    {"name": "legacy_draft7", "description": "A tool whose schema is written in draft-07."},
]
"""The §4.4 bare stubs of ``SMALL_TOOLS`` at ``detail: "summary"`` (summaries per §4.6)."""

STOCK_STUBS = [
    {
        **stub,
        "inputSchema": {"type": "object", "properties": {}},
        **{key: tool[key] for key in ("title", "annotations") if key in tool},
    }
    for stub, tool in zip(BARE_STUBS, SMALL_TOOLS, strict=True)
]
"""The §4.5 stock stubs: the bare stub, an empty object schema, and what clients use outside the prompt."""
NAMES = [tool["name"] for tool in SMALL_TOOLS]


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(SMALL_TOOLS))
    return path


# --- servers -----------------------------------------------------------------------------------


def cli_args(catalog: Path | None, *extra: str) -> list[str]:
    args = ["-m", "lazymcp", "serve", *extra]
    return args if catalog is None else [*args, "--catalog", str(catalog)]


@asynccontextmanager
async def serving(
    transport: str, catalog: Path | None, *, stock_default: StockDefault = "lazy", page_size: int | None = None
) -> AsyncIterator[Any]:
    """A client target for ``transport``: stdio parameters (each client spawns the CLI) or an HTTP URL."""
    if transport == "stdio":
        flags = ["--stock-default", stock_default, *([] if page_size is None else ["--page-size", str(page_size)])]
        yield mcp.StdioServerParameters(command=sys.executable, args=cli_args(catalog, *flags))
    else:
        tools = sample_tools() if catalog is None else load_tools(catalog)
        lazy = build_server(tools, Options(stock_default=stock_default, page_size=page_size))
        async with lazy_http_server(lazy, stateless=transport == "http-stateless") as url:
            yield url


@asynccontextmanager
async def cli_http_server(catalog: Path, log: Path, *extra: str) -> AsyncIterator[str]:
    """``python -m lazymcp serve --http 127.0.0.1:PORT`` as a subprocess, terminated on exit."""
    port = free_port()
    command = [sys.executable, *cli_args(catalog, "--http", f"{HOST}:{port}", "--stock-default", "lazy", *extra)]
    with log.open("wb") as log_file:
        process = await anyio.open_process(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file
        )
        try:
            await until_listening(port, process, within=STARTUP_TIMEOUT)
            yield f"http://{HOST}:{port}/mcp"
        finally:
            if process.returncode is None:
                process.terminate()
            try:
                with anyio.fail_after(STOP_TIMEOUT):
                    await process.wait()
            except TimeoutError:
                process.kill()
                raise
            finally:
                await process.aclose()


# --- helpers -----------------------------------------------------------------------------------


def dumped(tools: Sequence[Any]) -> list[str]:
    """Each tool serialized: equal strings mean same members, values and member order."""
    return [json.dumps(tool) for tool in tools]


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def json_objects_in(text: str) -> list[Any]:
    """Every JSON value that starts at a ``{`` in ``text`` (whatever the text around it)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    for at, char in enumerate(text):
        if char == "{":
            try:
                found.append(decoder.raw_decode(text, at)[0])
            except ValueError:
                continue
    return found


async def error_of(lazy: LazyClient, method: str, params: dict[str, Any]) -> tuple[int, Any, Any]:
    """(code, data.field, data.reason) of the error ``method`` must answer with."""
    with pytest.raises(MCPError) as caught:
        await lazy.request(method, params)
    error = caught.value.error
    data = error.data if isinstance(error.data, dict) else {}
    return error.code, data.get("field"), data.get("reason")


def plain_listing_is_stock(transport: str, mode: str) -> bool:
    """Stateless HTTP with a 2025 client: each POST is a new connection, so the server cannot know the
    client declared the extension in ``initialize`` and treats it as stock (spec §3.2)."""
    return transport == "http-stateless" and mode == "legacy"


# --- stock clients -----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.requirement("LT-07")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_stock_client_lists_object_schema_stubs_after_the_describe_tools_and_search_tools_meta_tools(
    transport: str, mode: str, catalog_file: Path
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog_file) as target, mcp.Client(target, mode=mode) as client:
            listing = await client.list_tools()
            raw = await raw_request(client.session, "tools/list", {})

    assert [tool.name for tool in listing.tools] == [*STOCK_META_TOOLS, *NAMES]
    metas = len(STOCK_META_TOOLS)
    assert all(tool.input_schema == {"type": "object", "properties": {}} for tool in listing.tools[metas:])
    assert dumped(raw["tools"][metas:]) == dumped(STOCK_STUBS)  # nothing else, in this member order
    assert "nextCursor" not in raw
    meta_schema = raw["tools"][0]["inputSchema"]
    assert meta_schema["required"] == ["names"]
    assert meta_schema["properties"]["names"]["type"] == "array"
    assert meta_schema["properties"]["names"]["maxItems"] == DEFAULT_SETTINGS["describeBatchMax"]
    search_schema = raw["tools"][1]["inputSchema"]
    assert search_schema["required"] == ["query"]
    assert search_schema["properties"]["query"]["type"] == "string"


@pytest.mark.anyio
@pytest.mark.requirement("LT-07")
@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_stock_client_calls_tools_describes_through_describe_tools_and_gets_the_schema_on_bad_arguments(
    transport: str, mode: str, catalog_file: Path
) -> None:
    arguments = {"project": "CORE", "title": "Flaky test", "priority": 2}
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog_file) as target, mcp.Client(target, mode=mode) as client:
            await client.list_tools()
            echoed = await client.call_tool("issues_create", arguments)
            described = await client.call_tool(META_TOOL, {"names": ["echo", "nope", "issues_create"]})
            nothing_known = await client.call_tool(META_TOOL, {"names": ["nope"]})
            missing = await client.call_tool("issues_create", {"project": "CORE"})
            draft7 = await client.call_tool("legacy_draft7", {"n": "three"})
            after = await client.call_tool("echo", {"text": "after"})

    assert not echoed.is_error
    assert json.loads(text_of(echoed)) == arguments

    assert not described.is_error
    assert described.structured_content is None
    payload = json.loads(text_of(described))
    assert dumped(payload["tools"]) == dumped([SMALL_TOOLS[2], SMALL_TOOLS[0]])
    assert payload["unknown"] == ["nope"]
    assert set(payload["suggestions"]) == {"nope"}
    assert nothing_known.is_error is True
    assert json.loads(text_of(nothing_known))["unknown"] == ["nope"]

    for refused, tool in ((missing, SMALL_TOOLS[0]), (draft7, SMALL_TOOLS[3])):
        assert refused.is_error is True
        assert tool["inputSchema"] in json_objects_in(text_of(refused))
    assert not after.is_error
    assert json.loads(text_of(after)) == {"text": "after"}


# --- declaring clients (LazyClient) ------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.requirement("LT-02")
@pytest.mark.requirement("LT-04")
@pytest.mark.requirement("LT-06")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_declaring_client_sees_the_advertisement_gets_bare_stubs_and_calls_a_tool_known_from_its_stub(
    transport: str, mode: str, catalog_file: Path
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog_file) as target, LazyClient(target, mode=mode) as lazy:
            supports, settings = lazy.server_supports_lazy, lazy.server_settings
            if mode == "legacy":
                capabilities = lazy.client.server_capabilities
                advertised = capabilities.extensions or {}
                list_changed = capabilities.tools.list_changed if capabilities.tools else None
            else:
                discovered = await lazy.request("server/discover")
                advertised = discovered["capabilities"]["extensions"]
                list_changed = discovered["capabilities"]["tools"]["listChanged"]
            plain = await lazy.request("tools/list", {})
            explicit = await lazy.request("tools/list", {"lazy": True})
            names_only = await lazy.request("tools/list", {"lazy": True, "detail": "name"})
            stubs = await lazy.list_stubs()
            called = await lazy.call_tool("echo", {"text": "hi"})
            refused = await lazy.call_tool("issues_search", {"query": 5})

    assert supports is True
    assert settings == DEFAULT_SETTINGS
    assert advertised[EXT_ID] == DEFAULT_SETTINGS
    assert list_changed is True

    assert "nextCursor" not in explicit
    if plain_listing_is_stock(transport, mode):  # a stock client: stock stubs, whether lazy is sent or not
        for listing in (plain["tools"], explicit["tools"], stubs):
            assert [tool["name"] for tool in listing[: len(STOCK_META_TOOLS)]] == STOCK_META_TOOLS
            assert dumped(listing[len(STOCK_META_TOOLS) :]) == dumped(STOCK_STUBS)
        assert [tool["name"] for tool in names_only["tools"][: len(STOCK_META_TOOLS)]] == STOCK_META_TOOLS
        assert names_only["tools"][len(STOCK_META_TOOLS) :] == [
            {k: v for k, v in stub.items() if k != "description"} for stub in STOCK_STUBS
        ]
    else:
        for listing in (plain["tools"], explicit["tools"], stubs):
            assert dumped(listing) == dumped(BARE_STUBS)
        assert names_only["tools"] == [{"name": name} for name in NAMES]

    assert not called.is_error
    assert json.loads(text_of(called)) == {"text": "hi"}
    assert refused.is_error is True
    assert SMALL_TOOLS[1]["inputSchema"] in json_objects_in(text_of(refused))


@pytest.mark.anyio
@pytest.mark.requirement("LT-05")
@pytest.mark.requirement("LT-11")
@pytest.mark.requirement("LT-12")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_full_listing_describe_and_describe_batch_equal_the_catalog_file_byte_for_byte(
    transport: str, mode: str, catalog_file: Path
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog_file) as target, LazyClient(target, mode=mode) as lazy:
            full = await lazy.list_full()
            raw = await lazy.request("tools/list", {"lazy": False, "detail": "name"})
            singles = [await lazy.describe(name) for name in NAMES]
            batch, unknown = await lazy.describe_batch(["echo", "nope", "issues_create", "echo", "nope", ""])
            everything, none_unknown = await lazy.describe_batch(NAMES)

    from_file = json.loads(await anyio.Path(catalog_file).read_text())
    assert dumped(full) == dumped(from_file)
    assert dumped(raw["tools"]) == dumped(from_file)
    assert "nextCursor" not in raw
    assert dumped(singles) == dumped(from_file)
    assert dumped(batch) == dumped([from_file[2], from_file[0]])
    assert unknown == ["nope", ""]
    assert dumped(everything) == dumped(from_file)
    assert none_unknown == []


MALFORMED: list[tuple[str, dict[str, Any], str, str]] = [
    ("tools/describe_batch", {"names": []}, "names", "empty"),
    ("tools/describe_batch", {"names": "x"}, "names", "type"),
    ("tools/describe_batch", {"names": ["echo", 7]}, "names", "type"),
    ("tools/describe_batch", {"names": ["echo"] * 101}, "names", "too_many"),
    ("tools/describe_batch", {}, "names", "type"),
    ("tools/describe", {}, "name", "type"),
    ("tools/describe", {"name": ""}, "name", "empty"),
    ("tools/describe", {"name": 3}, "name", "type"),
    ("tools/describe", {"name": "eho"}, "name", "unknown_tool"),
    ("tools/describe", {"name": META_TOOL}, "name", "unknown_tool"),  # the meta-tool is not a catalog name
    ("tools/list", {"detail": "huge"}, "detail", "unknown_value"),
    ("tools/list", {"detail": 1}, "detail", "type"),
    ("tools/list", {"lazy": "yes"}, "lazy", "type"),
    ("tools/list", {"cursor": "nonsense"}, "cursor", "malformed"),
    ("tools/list", {"cursor": ""}, "cursor", "malformed"),
    ("tools/list", {"cursor": 7}, "cursor", "type"),
]


@pytest.mark.anyio
@pytest.mark.requirement("LT-10")
@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_bad_params_are_invalid_params_naming_the_field_and_the_server_keeps_serving(
    transport: str, mode: str, catalog_file: Path
) -> None:
    answered: list[tuple[str, dict[str, Any], int, Any, Any]] = []
    after_each: list[str] = []
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog_file) as target, LazyClient(target, mode=mode) as lazy:
            with pytest.raises(MCPError) as caught:
                await lazy.describe("eho")
            for method, params, _field, _reason in MALFORMED:
                answered.append((method, params, *await error_of(lazy, method, params)))
                after_each.append((await lazy.request("tools/describe", {"name": "echo"}))["tool"]["name"])
            listing = await lazy.request("tools/list", {"lazy": False})

    typo = caught.value.error
    assert typo.code == INVALID_PARAMS
    assert typo.data["field"] == "name"
    assert typo.data["reason"] == "unknown_tool"
    assert typo.data["name"] == "eho"
    assert typo.data["suggestions"][0] == "echo"
    assert len(typo.data["suggestions"]) <= 3
    expected = [(method, params, INVALID_PARAMS, field, reason) for method, params, field, reason in MALFORMED]
    assert answered == expected
    assert after_each == ["echo"] * len(MALFORMED)
    assert dumped(listing["tools"]) == dumped(SMALL_TOOLS)


@pytest.mark.anyio
@pytest.mark.requirement("LT-09")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_listings_follow_page_size_and_their_pages_concatenate_to_the_catalog(
    transport: str, mode: str, catalog_file: Path
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog_file, page_size=3) as target:
            async with mcp.Client(target, mode=mode) as stock:
                first = await stock.list_tools()
                second = await stock.list_tools(cursor=first.next_cursor)
            async with LazyClient(target, mode=mode) as lazy:
                settings = lazy.server_settings
                full_first = await lazy.request("tools/list", {"lazy": False})
                full = await lazy.list_full()
                stubs = await lazy.list_stubs()

    assert [tool.name for tool in first.tools] == [*STOCK_META_TOOLS, *NAMES[:3]]  # meta-tools are not counted
    assert first.next_cursor
    assert [tool.name for tool in second.tools] == NAMES[3:]
    assert second.next_cursor is None
    assert settings["pageSize"] == 3
    assert dumped(full_first["tools"]) == dumped(SMALL_TOOLS[:3])
    assert full_first["nextCursor"]
    assert dumped(full) == dumped(SMALL_TOOLS)
    expected_names = [*STOCK_META_TOOLS, *NAMES] if plain_listing_is_stock(transport, mode) else NAMES
    assert [stub["name"] for stub in stubs] == expected_names


async def wait_for_list_changed(changed: anyio.Event, lazy_tools: LazyTools) -> None:
    """Wait (bounded) for a 2025 ``list_changed``. The client opens its GET stream, the session's only
    channel for server-sent notifications, in the background after ``initialize``; a notification
    sent before it is up is lost, so the change is announced again if nothing arrived within a second."""
    with anyio.fail_after(STARTUP_TIMEOUT):
        while not changed.is_set():
            with anyio.move_on_after(1.0):
                await changed.wait()
            if not changed.is_set():
                await lazy_tools.announce()


@pytest.mark.anyio
@pytest.mark.requirement("LT-16")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
async def test_a_catalog_change_is_announced_over_http_and_turns_old_cursors_stale(stateless: bool, mode: str) -> None:
    lazy_tools = build_server(SMALL_TOOLS, Options(page_size=2))
    changed = anyio.Event()
    events: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(TEST_TIMEOUT):
        async with (
            lazy_http_server(lazy_tools, stateless=stateless) as url,
            LazyClient(url, mode=mode, message_handler=on_message) as lazy,
        ):
            first = await lazy.request("tools/list", {"lazy": True})
            if mode == "legacy":
                await lazy_tools.set_tools(SMALL_TOOLS[:3])
                if not stateless:  # stateless 2025: no session, so no channel to announce on (§3.2)
                    await wait_for_list_changed(changed, lazy_tools)
            else:
                async with lazy.client.listen(tools_list_changed=True) as subscription:
                    await lazy_tools.set_tools(SMALL_TOOLS[:3])
                    async for event in subscription:
                        events.append(event)
                        break
            stale = await error_of(lazy, "tools/list", {"lazy": True, "cursor": first["nextCursor"]})
            relisted = await lazy.list_full()

    if mode == "legacy":
        assert changed.is_set() is not stateless
    else:
        assert [type(event) for event in events] == [ToolsListChanged]
    assert stale == (INVALID_PARAMS, "cursor", "stale")
    assert dumped(relisted) == dumped(SMALL_TOOLS[:3])


# --- 2026-07-28 result members -----------------------------------------------------------------


async def raw_results(target: Any, mode: str) -> dict[str, dict[str, Any]]:
    """Raw results of every listing shape and both describe methods, from both kinds of client."""
    results: dict[str, dict[str, Any]] = {}
    async with LazyClient(target, mode=mode) as lazy:
        results["list"] = await lazy.request("tools/list", {})
        results["list lazy"] = await lazy.request("tools/list", {"lazy": True, "detail": "description"})
        results["list full"] = await lazy.request("tools/list", {"lazy": False})
        results["describe"] = await lazy.request("tools/describe", {"name": "echo"})
        results["describe_batch"] = await lazy.request("tools/describe_batch", {"names": ["echo", "nope"]})
    async with mcp.Client(target, mode=mode) as stock:
        results["stock list"] = await raw_request(stock.session, "tools/list", {})
    return results


@pytest.mark.anyio
@pytest.mark.requirement("LT-15")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_modern_listing_and_describe_results_carry_ttl_cache_scope_and_result_type(
    transport: str, catalog_file: Path
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog_file) as target:
            results = await raw_results(target, "2026-07-28")

    for label, result in results.items():
        assert result["ttlMs"] == 0, label
        assert result["cacheScope"] == "private", label
        assert result["resultType"] == "complete", label
        assert result["_meta"][SERVER_INFO]["name"] == "lazymcp-serve", label


@pytest.mark.anyio
@pytest.mark.requirement("LT-15")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_handshake_era_results_carry_no_modern_members(transport: str, catalog_file: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog_file) as target:
            results = await raw_results(target, "legacy")

    for label, result in results.items():
        assert not {"ttlMs", "cacheScope", "resultType"} & set(result), label


# --- stock default ------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.requirement("LT-17")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_eager_stock_default_lists_full_tools_to_stock_clients_but_honours_explicit_lazy(
    transport: str, mode: str, tmp_path: Path
) -> None:
    # The SDK client refuses a full listing holding issues_search's off-spec schema (no "type"), which
    # the server must relay as it is (§4.3); so this catalog holds only spec-valid tools.
    tools = [tool for tool in SMALL_TOOLS if tool["name"] != "issues_search"]
    catalog = tmp_path / "valid.json"
    catalog.write_text(json.dumps(tools))
    stubs = [stub for stub in STOCK_STUBS if stub["name"] != "issues_search"]
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(transport, catalog, stock_default="eager") as target:
            async with mcp.Client(target, mode=mode) as stock:
                listing = await stock.list_tools()
                plain = await raw_request(stock.session, "tools/list", {})
                explicit = await raw_request(stock.session, "tools/list", {"lazy": True})
                called = await stock.call_tool("echo", {"text": "eager"})
            async with LazyClient(target, mode=mode) as lazy:
                settings = lazy.server_settings
                declared = await lazy.request("tools/list", {})

    assert [tool.name for tool in listing.tools] == [tool["name"] for tool in tools]
    assert [tool.input_schema for tool in listing.tools] == [tool["inputSchema"] for tool in tools]
    assert dumped(plain["tools"]) == dumped(tools)
    assert explicit["tools"][0]["name"] == META_TOOL
    assert dumped(explicit["tools"][1:]) == dumped(stubs)
    assert json.loads(text_of(called)) == {"text": "eager"}
    assert settings["stockDefault"] == "eager"
    if plain_listing_is_stock(transport, mode):
        assert dumped(declared["tools"]) == dumped(tools)
    else:
        assert [stub["name"] for stub in declared["tools"]] == [tool["name"] for tool in tools]
        assert all(set(stub) == {"name", "description"} for stub in declared["tools"])


# --- other catalogs over stdio ------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_serve_without_a_catalog_serves_the_builtin_sample_over_stdio(mode: str) -> None:
    expected = sample_tools()
    target = mcp.StdioServerParameters(command=sys.executable, args=cli_args(None))
    with anyio.fail_after(TEST_TIMEOUT):
        async with LazyClient(target, mode=mode) as lazy:
            full = await lazy.list_full()
            stubs = await lazy.list_stubs()
            batch, unknown = await lazy.describe_batch([tool["name"] for tool in expected[:100]])

    assert dumped(full) == dumped(expected)
    assert [stub["name"] for stub in stubs] == [tool["name"] for tool in expected]
    assert all(set(stub) <= {"name", "description"} for stub in stubs)
    assert dumped(batch) == dumped(expected[:100])
    assert unknown == []


@pytest.mark.anyio
@pytest.mark.requirement("LT-05")
@pytest.mark.requirement("LT-12")
@pytest.mark.parametrize("mode", ERAS)
async def test_a_real_shared_catalog_round_trips_exactly_over_stdio(mode: str) -> None:
    expected = shared_catalog("github")
    target = mcp.StdioServerParameters(command=sys.executable, args=cli_args(CATALOGS / "github.json"))
    with anyio.fail_after(TEST_TIMEOUT):
        async with LazyClient(target, mode=mode) as lazy:
            full = await lazy.list_full()
            batch, unknown = await lazy.describe_batch([tool["name"] for tool in expected])
            single = await lazy.describe(expected[-1]["name"])
            stubs = await lazy.list_stubs()

    assert dumped(full) == dumped(expected)
    assert [stub["name"] for stub in stubs] == [tool["name"] for tool in expected]
    assert all(set(stub) <= {"name", "description"} for stub in stubs)
    assert dumped(batch) == dumped(expected)
    assert unknown == []
    assert json.dumps(single) == json.dumps(expected[-1])


# --- the CLI's --http flag ----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
async def test_the_cli_http_flag_serves_streamable_http_in_both_eras(
    stateless: bool, catalog_file: Path, tmp_path: Path
) -> None:
    seen: dict[str, dict[str, Any]] = {}
    with anyio.fail_after(TEST_TIMEOUT):
        extra = ["--stateless"] if stateless else []
        async with cli_http_server(catalog_file, tmp_path / "server.log", *extra) as url:
            for mode in ERAS:
                async with LazyClient(url, mode=mode) as lazy:
                    supports = lazy.server_supports_lazy
                    full = await lazy.list_full()
                    stubs = await lazy.list_stubs()
                    described = await lazy.describe("issues_create")
                async with mcp.Client(url, mode=mode) as stock:
                    listing = await stock.list_tools()
                    called = await stock.call_tool("echo", {"text": mode})
                as_stock = stateless and mode == "legacy"  # the declaration is unknown: a stock listing
                metas = len(STOCK_META_TOOLS) if as_stock else 0
                seen[mode] = {
                    "supports": supports,
                    "full": dumped(full),
                    "metas": [stub["name"] for stub in stubs[:metas]],
                    "stubs": dumped(stubs[metas:]),
                    "described": json.dumps(described),
                    "listed": [tool.name for tool in listing.tools],
                    "called": json.loads(text_of(called)),
                }

    for mode in ERAS:
        assert seen[mode] == {
            "supports": True,
            "full": dumped(SMALL_TOOLS),
            "metas": STOCK_META_TOOLS if stateless and mode == "legacy" else [],
            "stubs": dumped(STOCK_STUBS if stateless and mode == "legacy" else BARE_STUBS),
            "described": json.dumps(SMALL_TOOLS[0]),
            "listed": [*STOCK_META_TOOLS, *NAMES],
            "called": {"text": mode},
        }, mode
