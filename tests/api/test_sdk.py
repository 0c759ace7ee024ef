"""The extension on SDK servers, through real SDK clients over JSON-RPC frames, in both protocol eras."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import mcp_types as types
import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.server.caching import CacheHint
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from lazymcp import EXT_ID, LazyClient, lazify
from lazymcp.client import raw_request
from lazymcp.run.serve import build_server

from ..conftest import CALLS, ERAS, SPEC, STOCK_METAS, build_lazy, build_plain

pytestmark = pytest.mark.anyio


def schema(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SPEC / "schema" / name).read_text()))


async def stock_list(client: Client, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return await raw_request(client.session, "tools/list", params)


@pytest.fixture(autouse=True)
def _forget_calls() -> None:
    CALLS.clear()


@pytest.mark.requirement("LT-02")
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_server_advertises_the_extension_in_both_eras(mode: str) -> None:
    async with Client(InMemoryTransport(build_lazy()), mode=mode) as client:
        expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert client.protocol_version == expected
        extensions = client.server_capabilities.extensions or {}
        settings = extensions[EXT_ID]
        schema("server-settings.json").validate(settings)
        assert settings["describeBatchMax"] == 100
        assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed


@pytest.mark.requirement("LT-03")
@pytest.mark.requirement("LT-04")
@pytest.mark.requirement("LT-06")
@pytest.mark.parametrize("mode", ERAS)
async def test_declaring_client_gets_bare_stubs_by_default(mode: str) -> None:
    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        result = await client.request("tools/list")
    schema("tools-list-result-lazy.json").validate(result)
    assert result["tools"] == [
        {"name": "add", "description": "Add two integers."},
        {"name": "echo", "description": "Echo the text back, repeated."},
        {"name": "forecast", "description": "Weather forecast for a city, e.g. Paris."},
    ]


@pytest.mark.requirement("LT-06")
@pytest.mark.parametrize("mode", ERAS)
async def test_detail_selects_name_summary_or_whole_description(mode: str) -> None:
    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        names = await client.request("tools/list", {"detail": "name"})
        whole = await client.request("tools/list", {"detail": "description"})
    assert names["tools"] == [{"name": "add"}, {"name": "echo"}, {"name": "forecast"}]
    assert "Long explanation" in whole["tools"][1]["description"]


@pytest.mark.requirement("LT-05")
@pytest.mark.parametrize("mode", ERAS)
async def test_lazy_false_is_exactly_what_the_server_sends_without_lazymcp(mode: str) -> None:
    async with Client(InMemoryTransport(build_plain()), mode=mode) as plain:
        reference = await stock_list(plain)
    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        full = await client.request("tools/list", {"lazy": False})
    assert json.dumps(full["tools"]) == json.dumps(reference["tools"])  # values, key order and tool order
    assert [tool["name"] for tool in full["tools"]] == ["add", "echo", "forecast"]


@pytest.mark.requirement("LT-12")
@pytest.mark.parametrize("mode", ERAS)
async def test_describe_is_byte_identical_to_the_full_listing_entry(mode: str) -> None:
    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        full = {tool["name"]: tool for tool in await client.list_full()}
        for name in full:
            described = await client.request("tools/describe", {"name": name})
            schema("tools-describe-result.json").validate(described)
            assert json.dumps(described["tool"]) == json.dumps(full[name])
        batch = await client.request("tools/describe_batch", {"names": ["forecast", "nope", "add", "forecast"]})
    schema("tools-describe-batch-result.json").validate(batch)
    assert json.dumps(batch["tools"]) == json.dumps([full["forecast"], full["add"]])
    assert batch["unknown"] == ["nope"]


@pytest.mark.requirement("LT-10")
@pytest.mark.parametrize("mode", ERAS)
async def test_describe_unknown_tool_is_invalid_params_with_suggestions(mode: str) -> None:
    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.describe("ad")
    error = caught.value.error.model_dump(by_alias=True, exclude_none=True)
    schema("error-invalid-params.json").validate(error)
    assert error["code"] == types.INVALID_PARAMS
    assert error["data"]["field"] == "name"
    assert error["data"]["suggestions"] == ["add"]


MALFORMED = [
    ("tools/list", {"lazy": "yes"}, "lazy"),
    ("tools/list", {"detail": "huge"}, "detail"),
    ("tools/list", {"cursor": 7}, "cursor"),
    ("tools/list", {"cursor": "nonsense"}, "cursor"),
    ("tools/describe", {}, "name"),
    ("tools/describe", {"name": ""}, "name"),
    ("tools/describe", {"name": ["add"]}, "name"),
    ("tools/describe_batch", {}, "names"),
    ("tools/describe_batch", {"names": []}, "names"),
    ("tools/describe_batch", {"names": "add"}, "names"),
    ("tools/describe_batch", {"names": ["add", 3]}, "names"),
    ("tools/describe_batch", {"names": ["x"] * 101}, "names"),
]


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize("mode", ERAS)
async def test_malformed_params_name_the_field_and_the_server_keeps_serving(mode: str) -> None:
    validator = schema("error-invalid-params.json")
    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        for method, params, field in MALFORMED:
            with pytest.raises(MCPError) as caught:
                await client.request(method, params)
            error = caught.value.error.model_dump(by_alias=True, exclude_none=True)
            validator.validate(error)
            assert (method, error["code"], error["data"]["field"]) == (method, types.INVALID_PARAMS, field)
        assert len(await client.list_stubs()) == 3  # still serving


@pytest.mark.requirement("LT-11")
@pytest.mark.parametrize("mode", ERAS)
async def test_describe_batch_accepts_exactly_the_advertised_limit(mode: str) -> None:
    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        limit = client.server_settings["describeBatchMax"]
        tools, unknown = await client.describe_batch(["add"] + [f"missing_{i}" for i in range(limit - 1)])
        with pytest.raises(MCPError) as caught:
            await client.describe_batch(["add"] * (limit + 1))
    assert [tool["name"] for tool in tools] == ["add"]
    assert len(unknown) == limit - 1
    assert caught.value.error.data == {"field": "names", "reason": "too_many", "limit": limit}


@pytest.mark.requirement("LT-07")
@pytest.mark.parametrize("mode", ERAS)
async def test_stock_client_lists_valid_mcp_and_reaches_every_schema(mode: str) -> None:
    async with Client(InMemoryTransport(build_lazy()), mode=mode) as client:
        listing = await client.list_tools()  # the SDK validates the result against the MCP schema
        # The default describe mode lists its meta-tools, describe_tools first, ahead of the stubs.
        assert [tool.name for tool in listing.tools] == [*STOCK_METAS, "add", "echo", "forecast"]
        full = {tool["name"]: tool for tool in (await stock_list(client, {"lazy": False}))["tools"]}
        for tool in listing.tools[len(STOCK_METAS) :]:
            assert tool.input_schema == {"type": "object", "properties": {}}
            assert tool.output_schema == full[tool.name].get("outputSchema")  # kept: FastMCP types results by it
            assert tool.title == full[tool.name].get("title")
        raw = await stock_list(client)
        assert [tool["name"] for tool in raw["tools"]] == [tool.name for tool in listing.tools]
        listing_schema = schema("tools-list-result-lazy.json")
        listing_schema.validate(raw)  # the captured listing, both meta-tools included
        renamed = {**raw, "tools": [raw["tools"][0], {**raw["tools"][1], "name": "search_tool"}, *raw["tools"][2:]]}
        assert not listing_schema.is_valid(renamed)  # a full tool that is no meta-tool is no stock stub
        described = await client.call_tool("describe_tools", {"names": ["echo", "nope"]})
        payload = json.loads(described.content[0].text)  # type: ignore[union-attr]
        schema("describe-tools-payload.json").validate(payload)
        assert described.is_error is not True
        assert payload["tools"][0]["inputSchema"]["required"] == ["text"]
        assert payload["unknown"] == ["nope"]
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}
    assert CALLS == [("add", {"a": 2, "b": 3})]


@pytest.mark.requirement("LT-19")
@pytest.mark.parametrize("mode", ERAS)
async def test_a_stock_listing_with_every_listable_meta_tool_matches_the_schema(mode: str) -> None:
    server = build_lazy(meta_tools=["invoke_tool", "search_tools", "list_tool_categories"])
    async with Client(InMemoryTransport(server), mode=mode) as client:
        raw = await stock_list(client)
    metas = ["describe_tools", "list_tool_categories", "search_tools", "invoke_tool"]
    assert [tool["name"] for tool in raw["tools"]] == [*metas, "add", "echo", "forecast"]
    schema("tools-list-result-lazy.json").validate(raw)


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize("mode", ERAS)
async def test_call_with_wrong_arguments_returns_the_schema_and_never_runs_the_tool(mode: str) -> None:
    async with Client(InMemoryTransport(build_lazy()), mode=mode) as client:
        await client.list_tools()
        result = await client.call_tool("add", {"a": "two"})
        full = (await stock_list(client, {"lazy": False}))["tools"]
    assert result.is_error is True
    text = result.content[0].text  # type: ignore[union-attr]
    schema_json = json.dumps(full[0]["inputSchema"], separators=(",", ":"))
    assert schema_json in text
    assert CALLS == []


@pytest.mark.requirement("LT-04")
@pytest.mark.requirement("LT-17")
@pytest.mark.parametrize("mode", ERAS)
async def test_eager_stock_default_gives_stock_clients_the_full_tools(mode: str) -> None:
    async with Client(InMemoryTransport(build_plain()), mode=mode) as plain:
        reference = await stock_list(plain)
    async with Client(InMemoryTransport(build_lazy(stock_default="eager")), mode=mode) as client:
        listing = await stock_list(client)
        explicit = await stock_list(client, {"lazy": True})
        settings = client.server_capabilities.extensions or {}
    assert json.dumps(listing["tools"]) == json.dumps(reference["tools"])
    assert explicit["tools"][0]["name"] == "describe_tools"
    if mode == "legacy":
        assert settings[EXT_ID]["stockDefault"] == "eager"


@pytest.mark.requirement("LT-04")
@pytest.mark.parametrize("mode", ERAS)
async def test_explicit_lazy_false_is_honoured_for_a_declaring_client(mode: str) -> None:
    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        full = await client.request("tools/list", {"lazy": False, "detail": "name"})
    assert all("inputSchema" in tool for tool in full["tools"])


@pytest.mark.requirement("LT-09")
@pytest.mark.parametrize("mode", ERAS)
async def test_pages_join_into_the_whole_listing_in_every_mode(mode: str) -> None:
    server = build_lazy(page_size=2)
    async with LazyClient(InMemoryTransport(server), mode=mode) as client:
        first = await client.request("tools/list", {"lazy": True})
        assert len(first["tools"]) == 2 and "nextCursor" in first
        stubs = await client.list_stubs()
        full = await client.list_full()
    async with Client(InMemoryTransport(server), mode=mode) as stock:
        page1 = await stock.list_tools()
        page2 = await stock.list_tools(cursor=page1.next_cursor)
    assert [stub["name"] for stub in stubs] == [tool["name"] for tool in full] == ["add", "echo", "forecast"]
    assert [t.name for t in page1.tools] == [*STOCK_METAS, "add", "echo"]  # meta-tools beyond P
    assert [t.name for t in page2.tools] == ["forecast"] and page2.next_cursor is None


@pytest.mark.requirement("LT-15")
async def test_modern_results_carry_the_servers_cache_hint() -> None:
    server = build_plain(cache_hints={"tools/list": CacheHint(ttl_ms=60_000, scope="public")})
    lazify(server)
    async with LazyClient(InMemoryTransport(server), mode="2026-07-28") as client:
        listing = await client.request("tools/list")
        described = await client.request("tools/describe", {"name": "add"})
    for result in (listing, described):
        assert (result["ttlMs"], result["cacheScope"], result["resultType"]) == (60_000, "public", "complete")
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "demo"


@pytest.mark.requirement("LT-15")
async def test_legacy_results_carry_no_modern_fields() -> None:
    async with LazyClient(InMemoryTransport(build_lazy()), mode="legacy") as client:
        listing = await client.request("tools/list")
    assert set(listing) == {"tools"}


@pytest.mark.requirement("LT-16")
async def test_adding_a_tool_announces_list_changed_to_a_legacy_client() -> None:
    server = build_lazy()
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with LazyClient(InMemoryTransport(server), mode="legacy", message_handler=on_message) as client:
        assert len(await client.list_stubs()) == 3

        def subtract(a: int, b: int) -> int:
            """Subtract b from a."""
            return a - b

        server.add_tool(subtract)
        with anyio.fail_after(5):
            await changed.wait()
        stubs = await client.list_stubs()
        assert stubs[-1] == {"name": "subtract", "description": "Subtract b from a."}
        assert (await client.call_tool("subtract", {"a": 5, "b": 2})).structured_content == {"result": 3}
        server.remove_tool("subtract")
        assert [stub["name"] for stub in await client.list_stubs()] == ["add", "echo", "forecast"]


@pytest.mark.requirement("LT-16")
async def test_adding_a_tool_announces_list_changed_to_a_modern_listener() -> None:
    server = build_lazy()
    async with LazyClient(InMemoryTransport(server), mode="2026-07-28") as client:
        before = await client.request("tools/list")
        async with client.client.listen(tools_list_changed=True) as subscription:

            def subtract(a: int, b: int) -> int:
                """Subtract b from a."""
                return a - b

            server.add_tool(subtract)
            with anyio.fail_after(5):
                async for _event in subscription:
                    break
        after = await client.request("tools/list")
    assert len(after["tools"]) == len(before["tools"]) + 1


@pytest.mark.requirement("LT-16")
async def test_a_cursor_from_an_older_catalog_is_stale() -> None:
    server = build_lazy(page_size=1)
    async with LazyClient(InMemoryTransport(server), mode="legacy") as client:
        first = await client.request("tools/list")
        server.remove_tool("echo")
        with pytest.raises(MCPError) as caught:
            await client.request("tools/list", {"cursor": first["nextCursor"]})
    assert caught.value.error.data == {"field": "cursor", "reason": "stale"}


TOOL_DEFS = [
    types.Tool(name=f"t{i}", description=f"Tool {i}. More.", input_schema={"type": "object"}) for i in range(5)
]


def build_lowlevel(tools: list[types.Tool]) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + 2
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("low", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.mark.requirement("LT-05")
@pytest.mark.parametrize("mode", ERAS)
async def test_a_lowlevel_server_with_its_own_pages_is_read_whole(mode: str) -> None:
    tools = list(TOOL_DEFS)
    server = build_lowlevel(tools)
    lazy = lazify(server)
    async with LazyClient(InMemoryTransport(server), mode=mode) as client:
        full = await client.list_full()
        stubs = await client.list_stubs()
        tools.append(types.Tool(name="t5", description="Tool 5.", input_schema={"type": "object"}))
        await lazy.tools_changed()
        after = await client.list_stubs()
        called = await client.call_tool("t5", {})
    assert [tool["name"] for tool in full] == ["t0", "t1", "t2", "t3", "t4"]
    assert stubs[0] == {"name": "t0", "description": "Tool 0."}
    assert len(after) == 6
    assert called.content[0].text == "t5"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_catalog_server_relays_off_spec_tools_untouched(mode: str, small_tools: list[dict[str, Any]]) -> None:
    server = build_server(small_tools).server
    async with LazyClient(InMemoryTransport(server), mode=mode) as client:
        full = await client.list_full()
        echoed = await client.call_tool("issues_search", {"query": "state:open"})
    assert json.dumps(full) == json.dumps(small_tools)
    assert "type" not in full[1]["inputSchema"]
    assert json.loads(echoed.content[0].text) == {"query": "state:open"}  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_catalog_server_answers_an_unknown_tool_as_every_front_does(
    mode: str, small_tools: list[dict[str, Any]]
) -> None:
    server = build_server(small_tools).server
    async with Client(InMemoryTransport(server), mode=mode) as client:
        refused = await client.call_tool("issues_serch", {})
    assert refused.is_error
    payload = json.loads(refused.content[0].text)  # type: ignore[union-attr]
    assert payload["error"] == "unknown_tool"
    assert payload["name"] == "issues_serch"
    assert payload["suggestions"][0] == "issues_search"


def test_spec_schemas_are_valid_json_schemas() -> None:
    files = sorted((SPEC / "schema").glob("*.json"))
    assert len(files) >= 9
    for path in files:
        jsonschema.Draft202012Validator.check_schema(json.loads(Path(path).read_text()))
