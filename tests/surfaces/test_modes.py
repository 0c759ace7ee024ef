"""Exposure modes and meta-tools (spec §17): the pure core, then real SDK clients in both protocol eras."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.server.mcpserver import MCPServer

from lazymcp import LazyClient, lazify
from lazymcp.protocol.errors import CatalogError
from lazymcp.protocol.messages import MODES
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.metacalls import HANDLERS
from lazymcp.surfaces.metatools import BY_NAME, REGISTRY
from lazymcp.surfaces.methods import Answer, Run
from lazymcp.surfaces.modes import DynamicSession as Session
from lazymcp.surfaces.options import Options

from ..conftest import ERAS, STOCK_METAS, payload, tool
from ..handlers import call_tool, list_tools

pytestmark = pytest.mark.anyio

TIMEOUT = 10
CALLS: list[str] = []
SURFACE = ["list_tool_categories", "search_tools", "describe_tools", "invoke_tool"]


TOOLS = [
    tool("add", "Add two integers. Returns the sum.", args={"a": "integer", "b": "integer"}),
    tool("weather_forecast", "Weather forecast for a city, days ahead.", args={"city": "string"}),
    tool("weather_alerts", "Severe weather alerts for a region.", args={"region": "string"}),
    tool("notes_add", "Add a note with a title.", args={"title": "string"}),
    tool("notes_find", "Find notes by a word in their title.", args={"word": "string"}),
]
NAMES = [t["name"] for t in TOOLS]


def catalog(**settings: Any) -> Catalog:
    return Catalog.build(TOOLS, Options(**settings), origin="demo")


def names(result: dict[str, Any]) -> list[str]:
    return [entry["name"] for entry in result["tools"]]


def answered(outcome: Answer | Run | None) -> dict[str, Any]:
    assert isinstance(outcome, Answer)
    return outcome.result


# --- listings (pure) ---------------------------------------------------------------------------


def test_every_meta_tool_of_the_registry_has_its_handler_and_a_definition_in_every_mode() -> None:
    taken = Catalog.build([*TOOLS, tool("search_tools", "A server's own tool of that name.")])
    assert set(HANDLERS) == set(BY_NAME)
    for meta in REGISTRY:
        assert meta.listed_in <= meta.callable_in, meta.name  # what a mode lists, it lets a client call
        for mode in MODES:
            definition = taken.meta_definition(meta.name, mode)
            assert definition["name"] == taken.meta_names[meta.name]
            assert definition["inputSchema"]["type"] == "object"
    assert taken.meta_names["search_tools"] == "lazymcp_search_tools"  # the server's own tool keeps the name


@pytest.mark.requirement("LT-18")
@pytest.mark.parametrize("mode", ["describe", "dynamic", "proxy", "core", "eager"])
def test_a_mode_changes_only_a_stock_clients_default_listing(mode: str) -> None:
    modes = catalog(mode=mode, core_tools=("add",) if mode in ("core", "dynamic") else ())
    plain = catalog()
    # Outside describe mode a stock lazy listing carries describe_tools alone (describe mode's default
    # meta_tools, search_tools, is describe mode's own): describe mode with no extra meta-tools.
    one_meta = catalog(meta_tools=())
    session = Session() if mode == "dynamic" else None
    for params, declared in (({}, True), ({"lazy": False}, False), ({"lazy": True}, False), ({"lazy": True}, True)):
        stock_lazy = params == {"lazy": True} and not declared
        baseline = one_meta if stock_lazy and mode != "describe" else plain
        expected = list_tools(baseline, params, declared=declared, session=None)
        assert list_tools(modes, params, declared=declared, session=session) == expected
    stock = list_tools(modes, {"lazy": True}, declared=False, session=session)
    metas = STOCK_METAS if mode == "describe" else ["describe_tools"]
    assert names(stock) == [*metas, *NAMES]
    plain_stubs = list_tools(plain, {"lazy": True}, declared=False, session=None)["tools"][len(STOCK_METAS) :]
    assert stock["tools"][len(metas) :] == plain_stubs


@pytest.mark.requirement("LT-19")
def test_describe_mode_lists_describe_tools_search_tools_and_invoke_tool_unless_others_are_configured() -> None:
    default = list_tools(catalog(), {}, declared=False, session=None)
    assert names(default) == [*STOCK_METAS, *NAMES]
    assert all(entry["inputSchema"] == {"type": "object", "properties": {}} for entry in default["tools"][3:])
    assert names(list_tools(catalog(meta_tools=()), {}, declared=False, session=None)) == ["describe_tools", *NAMES]
    wider = catalog(meta_tools=("search_tools", "list_tool_categories"))
    listing = list_tools(wider, {}, declared=False, session=None)
    assert names(listing) == ["describe_tools", "list_tool_categories", "search_tools", *NAMES]
    assert all(entry["inputSchema"] == {"type": "object", "properties": {}} for entry in listing["tools"][3:])


@pytest.mark.requirement("LT-19")
def test_describe_mode_answers_search_tools_even_when_it_is_not_listed() -> None:
    unlisted = catalog(meta_tools=())  # describe_tools alone is listed
    assert "search_tools" not in names(list_tools(unlisted, {}, declared=False, session=None))
    result = answered(call_tool(unlisted, {"name": "search_tools", "arguments": {"query": "weather"}}, session=None))
    assert {hit["name"] for hit in payload(result)["tools"]} == {"weather_forecast", "weather_alerts"}
    assert call_tool(unlisted, {"name": "invoke_tool", "arguments": {"name": "add"}}, session=None) is None


@pytest.mark.requirement("LT-20")
def test_eager_mode_lists_the_full_tools_after_only_the_meta_tools_asked_for() -> None:
    assert list_tools(catalog(mode="eager"), {}, declared=False, session=None)["tools"] == TOOLS
    listing = list_tools(catalog(mode="eager", meta_tools=("search_tools",)), {}, declared=False, session=None)
    assert names(listing) == ["search_tools", *NAMES]
    assert listing["tools"][1:] == TOOLS
    assert catalog(mode="eager").options.settings()["stockDefault"] == "eager"


@pytest.mark.requirement("LT-23")
def test_proxy_mode_lists_the_same_four_meta_tools_whatever_the_catalog_holds() -> None:
    small = Catalog.build(TOOLS[:1], Options(mode="proxy"))
    large = Catalog.build([*TOOLS, tool("zeta_tool", "Something else.", args={})], Options(mode="proxy"))
    first, second = (list_tools(c, {}, declared=False, session=None) for c in (small, large))
    assert names(first) == SURFACE
    assert json.dumps(first) == json.dumps(second)


@pytest.mark.requirement("LT-24")
def test_core_mode_lists_core_tools_named_by_tool_or_category_in_full() -> None:
    listing = list_tools(catalog(mode="core", core_tools=("notes", "add")), {}, declared=False, session=None)
    assert names(listing) == [*SURFACE, "add", "notes_add", "notes_find"]
    assert listing["tools"][4:] == [TOOLS[0], TOOLS[3], TOOLS[4]]


@pytest.mark.requirement("LT-24")
def test_mode_listings_page_their_tools_with_the_meta_tools_on_the_first_page_only() -> None:
    paged = catalog(mode="core", core_tools=("weather", "notes"), page_size=3)
    first = list_tools(paged, {}, declared=False, session=None)
    second = list_tools(paged, {"cursor": first["nextCursor"]}, declared=False, session=None)
    assert names(first) == [*SURFACE, "weather_forecast", "weather_alerts", "notes_add"]
    assert names(second) == ["notes_find"] and "nextCursor" not in second


@pytest.mark.requirement("LT-21")
def test_a_dynamic_session_lists_its_meta_tools_always_available_and_enabled_tools_in_catalog_order() -> None:
    dynamic = catalog(mode="dynamic", core_tools=("notes_find",))
    session = Session()
    assert names(list_tools(dynamic, {}, declared=False, session=session)) == [
        "search_tools",
        "manage_tools",
        "notes_find",
    ]
    session.enable(["weather_alerts", "add"], cap=10)
    listing = list_tools(dynamic, {}, declared=False, session=session)
    assert names(listing) == ["search_tools", "manage_tools", "add", "weather_alerts", "notes_find"]
    assert listing["tools"][2] == TOOLS[0]  # in full, as the server defines it


@pytest.mark.requirement("LT-22")
def test_dynamic_mode_without_a_session_serves_the_stable_surface_and_enables_nothing() -> None:
    dynamic = catalog(mode="dynamic", core_tools=("add",))
    assert names(list_tools(dynamic, {}, declared=False, session=None)) == [*SURFACE, "add"]
    found = answered(call_tool(dynamic, {"name": "search_tools", "arguments": {"query": "weather"}}, session=None))
    assert "enabled" not in payload(found)
    assert call_tool(dynamic, {"name": "manage_tools", "arguments": {"action": "list"}}, session=None) is None


# --- meta-tools (pure) -------------------------------------------------------------------------


@pytest.mark.requirement("LT-26")
def test_search_tools_ranks_matches_with_summary_and_category_and_reports_k_of_n() -> None:
    result = answered(
        call_tool(catalog(), {"name": "search_tools", "arguments": {"query": "add a note", "limit": 1}}, session=None)
    )
    found = payload(result)
    assert found["tools"] == [{"name": "notes_add", "summary": "Add a note with a title.", "category": "notes"}]
    assert (found["shown"], found["total"]) == (1, 5)
    assert "1 of 5" in found["note"]
    assert result.get("isError", False) is False


@pytest.mark.requirement("LT-26")
@pytest.mark.requirement("LT-31")
def test_search_tools_filters_by_category_and_suggests_for_an_unknown_one() -> None:
    search = {"name": "search_tools", "arguments": {"query": "add", "category": "notes"}}
    within = payload(answered(call_tool(catalog(), search, session=None)))
    assert [hit["name"] for hit in within["tools"]] == ["notes_add"] and within["total"] == 2
    typo = {"name": "search_tools", "arguments": {"query": "add", "category": "note"}}
    refused = answered(call_tool(catalog(), typo, session=None))
    assert refused["isError"] is True
    assert payload(refused)["error"] == "unknown_category" and payload(refused)["suggestions"] == ["notes"]


@pytest.mark.requirement("LT-26")
def test_search_tools_finds_a_non_english_description() -> None:
    tools = [*TOOLS, tool("meteo_prevision", "Prévisions météo détaillées pour une ville française.", args={})]
    found = call_tool(Catalog.build(tools), {"name": "search_tools", "arguments": {"query": "météo"}}, session=None)
    assert payload(answered(found))["tools"][0]["name"] == "meteo_prevision"


def test_meta_tool_arguments_are_checked_against_their_schema_first() -> None:
    for arguments in ({}, {"query": ""}, {"query": "x", "limit": 0}, {"query": "x", "colour": "red"}):
        refused = answered(call_tool(catalog(), {"name": "search_tools", "arguments": arguments}, session=None))
        assert refused["isError"] is True
        assert '"required":["query"]' in refused["content"][0]["text"]  # the meta-tool's schema, to retry with


@pytest.mark.requirement("LT-25")
def test_invoke_tool_checks_the_real_schema_then_asks_to_run_the_real_tool() -> None:
    proxy = catalog(mode="proxy")
    run = call_tool(
        proxy, {"name": "invoke_tool", "arguments": {"name": "add", "arguments": {"a": 1, "b": 2}}}, session=None
    )
    assert run == Run("add", {"a": 1, "b": 2})
    refused = answered(
        call_tool(proxy, {"name": "invoke_tool", "arguments": {"name": "add", "arguments": {"a": 1}}}, session=None)
    )
    assert refused["isError"] is True
    assert json.dumps(TOOLS[0]["inputSchema"], separators=(",", ":")) in refused["content"][0]["text"]


@pytest.mark.requirement("LT-25")
@pytest.mark.requirement("LT-31")
def test_invoke_tool_on_an_unknown_name_suggests_the_closest() -> None:
    refused = answered(
        call_tool(catalog(mode="proxy"), {"name": "invoke_tool", "arguments": {"name": "notes_ad"}}, session=None)
    )
    assert refused["isError"] is True
    assert payload(refused)["error"] == "unknown_tool"
    assert payload(refused)["suggestions"][0] == "notes_add"


def test_a_stub_call_without_its_required_arguments_says_how_to_call_through_invoke_tool() -> None:
    """Frameworks that build the argument model from a stub's empty schema drop every argument."""
    for arguments in (None, {}):
        refused = answered(call_tool(catalog(), {"name": "add", "arguments": arguments}, session=None))
        said = refused["content"][0]["text"]
        assert refused["isError"] is True
        assert said.startswith("No arguments reached 'add', which requires a, b. If you gave them, your client")
        assert 'invoke_tool instead: {"name": "add", "arguments": {...}}' in said
        assert '"required":["a","b"]' in said  # the violations and the schema follow, as for any refusal
    partial = answered(call_tool(catalog(), {"name": "add", "arguments": {"a": 1}}, session=None))
    assert "invoke_tool" not in partial["content"][0]["text"]  # arguments arrived: an ordinary refusal
    for unlisted in (catalog(meta_tools=("search_tools",)), catalog(mode="eager")):
        plain = answered(call_tool(unlisted, {"name": "add", "arguments": {}}, session=None))
        assert "invoke_tool" not in plain["content"][0]["text"]  # not listed there: nothing to point to


LISTED = tool(
    "issues_list",
    "List issues, of a team or of all.",
    inputSchema={
        "type": "object",
        "properties": {
            "team_id": {"type": "string"},
            "label": {"type": ["string", "null"]},
            "state": {"anyOf": [{"enum": ["open", "closed"]}, {"type": "null"}]},
            "limit": {"type": "integer", "minimum": 1},
            "query": {"type": "string"},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)


def test_a_null_for_an_optional_property_that_does_not_take_null_is_taken_as_absent() -> None:
    """As frameworks that build an argument model send it: ``null`` for every parameter not given."""
    nulls = {"team_id": None, "label": None, "state": None, "limit": None, "query": "bugs"}
    for mode in ("describe", "eager", "proxy"):
        listed = Catalog.build([*TOOLS, LISTED], Options(mode=mode))
        run = call_tool(listed, {"name": "issues_list", "arguments": nulls}, session=None)
        assert run == Run("issues_list", {"label": None, "state": None, "query": "bugs"})
    invoked = call_tool(
        Catalog.build([*TOOLS, LISTED], Options(mode="proxy")),
        {"name": "invoke_tool", "arguments": {"name": "issues_list", "arguments": nulls}},
        session=None,
    )
    assert invoked == Run("issues_list", {"label": None, "state": None, "query": "bugs"})
    unchanged = {"query": "bugs", "limit": 5}
    assert (
        call_tool(Catalog.build([*TOOLS, LISTED]), {"name": "issues_list", "arguments": unchanged}, session=None)
        is None
    )
    refused = answered(
        call_tool(Catalog.build([*TOOLS, LISTED]), {"name": "issues_list", "arguments": {"query": None}}, session=None)
    )
    assert refused["isError"] is True  # a required property's null is the model's mistake, to be told


def test_meta_tools_take_null_for_their_optional_parameters_and_say_so() -> None:
    proxy = catalog(mode="proxy")
    found = call_tool(
        proxy,
        {"name": "search_tools", "arguments": {"query": "weather", "limit": None, "category": None}},
        session=None,
    )
    names = [entry["name"] for entry in payload(answered(found))["tools"]]
    # null is the default: no category filter, so both weather tools lead (in the installed ranker's order)
    assert set(names[:2]) == {"weather_forecast", "weather_alerts"}
    run = call_tool(
        proxy, {"name": "invoke_tool", "arguments": {"name": "notes_find", "arguments": None}}, session=None
    )
    assert answered(run)["isError"] is True  # notes_find needs its word: checked as {} (absent), not as null
    session = Session()
    listed = call_tool(
        catalog(mode="dynamic"),
        {"name": "manage_tools", "arguments": {"action": "list", "names": None, "offset": None, "limit": None}},
        session=session,
    )
    assert payload(answered(listed))["total"] == len(TOOLS)
    for meta in REGISTRY:
        schema = meta.define(meta.name, Options(), "proxy")["inputSchema"]
        for key, node in schema["properties"].items():
            if key not in schema.get("required", []):
                # one type: AutoGen fails on a type list, smolagents misses a type under anyOf
                assert isinstance(node["type"], str) and node["nullable"] is True, (meta.name, key)


def test_list_tool_categories_counts_each_categorys_tools() -> None:
    result = answered(call_tool(catalog(mode="proxy"), {"name": "list_tool_categories"}, session=None))
    assert payload(result) == {
        "categories": [{"name": "demo", "tools": 1}, {"name": "notes", "tools": 2}, {"name": "weather", "tools": 2}],
        "total": 5,
    }


@pytest.mark.requirement("LT-27")
def test_manage_tools_list_pages_with_total_offset_and_categories() -> None:
    dynamic, session = catalog(mode="dynamic"), Session()
    first = payload(
        answered(
            call_tool(dynamic, {"name": "manage_tools", "arguments": {"action": "list", "limit": 2}}, session=session)
        )
    )
    assert [entry["name"] for entry in first["tools"]] == ["add", "weather_forecast"]
    assert (first["total"], first["offset"], first["next_offset"]) == (5, 0, 2)
    assert [c["name"] for c in first["categories"]] == ["demo", "notes", "weather"]
    last = {"action": "list", "offset": 4, "limit": 2}
    tail = payload(answered(call_tool(dynamic, {"name": "manage_tools", "arguments": last}, session=session)))
    assert [entry["name"] for entry in tail["tools"]] == ["notes_find"] and "next_offset" not in tail


@pytest.mark.requirement("LT-27")
def test_manage_tools_list_filters_by_category_and_shows_disabled_tools_on_request() -> None:
    dynamic, session = catalog(mode="dynamic"), Session()
    call_tool(
        dynamic, {"name": "manage_tools", "arguments": {"action": "disable", "names": ["notes_add"]}}, session=session
    )

    def listed(**arguments: Any) -> list[dict[str, Any]]:
        result = call_tool(
            dynamic, {"name": "manage_tools", "arguments": {"action": "list", **arguments}}, session=session
        )
        return payload(answered(result))["tools"]

    assert [entry["name"] for entry in listed(category="notes")] == ["notes_find"]
    assert listed(category="notes", include_disabled=True)[0] == {
        "name": "notes_add",
        "summary": "Add a note with a title.",
        "category": "notes",
        "enabled": False,
        "disabled": True,
    }


@pytest.mark.requirement("LT-21")
@pytest.mark.requirement("LT-31")
def test_manage_tools_enables_and_disables_by_tool_or_category_name() -> None:
    dynamic, session = catalog(mode="dynamic", core_tools=("add",)), Session()

    def manage(action: str, *requested: str) -> Answer:
        outcome = call_tool(
            dynamic,
            {"name": "manage_tools", "arguments": {"action": action, "names": list(requested)}},
            session=session,
        )
        assert isinstance(outcome, Answer)
        return outcome

    enabled = manage("enable", "weather", "notes_find", "wether")
    assert enabled.changed is True
    assert payload(enabled.result)["enabled"] == ["weather_forecast", "weather_alerts", "notes_find"]
    assert payload(enabled.result)["suggestions"]["wether"][0] == "weather"
    assert list(session.enabled) == ["weather_forecast", "weather_alerts", "notes_find"]
    disabled = manage("disable", "weather_alerts", "add")
    assert payload(disabled.result)["always_available"] == ["add"]
    assert list(session.enabled) == ["weather_forecast", "notes_find"]
    assert manage("enable", "nothing_like_it").result["isError"] is True
    assert manage("enable", "notes_find").changed is False


@pytest.mark.requirement("LT-21")
def test_search_enables_its_matches_up_to_the_cap_least_recently_used_out_first() -> None:
    dynamic, session = catalog(mode="dynamic", max_enabled=2), Session()
    session.enable(["add", "notes_add"], cap=2)
    assert call_tool(dynamic, {"name": "add", "arguments": {"a": 1, "b": 2}}, session=session) is None  # used: newest
    found = call_tool(dynamic, {"name": "search_tools", "arguments": {"query": "alerts"}}, session=session)
    assert isinstance(found, Answer) and found.changed
    assert payload(found.result)["evicted"] == ["notes_add"]
    assert list(session.enabled) == ["add", "weather_alerts"]


def test_search_does_not_enable_again_what_the_session_disabled() -> None:
    dynamic, session = catalog(mode="dynamic"), Session()
    session.disable(["weather_alerts"])
    found = call_tool(dynamic, {"name": "search_tools", "arguments": {"query": "weather"}}, session=session)
    assert list(session.enabled) == ["weather_forecast"]
    hits = payload(answered(found))["tools"]
    assert {hit["name"]: hit["enabled"] for hit in hits} == {"weather_forecast": True, "weather_alerts": False}


@pytest.mark.requirement("LT-29")
def test_a_servers_own_tool_keeps_its_name_and_the_meta_tool_gives_way() -> None:
    own = tool("search_tools", "The server's own search.", args={"text": "string"})
    proxy = Catalog.build([*TOOLS, own], Options(mode="proxy"))
    assert names(list_tools(proxy, {}, declared=False, session=None)) == [
        "list_tool_categories",
        "lazymcp_search_tools",
        "describe_tools",
        "invoke_tool",
    ]
    assert call_tool(proxy, {"name": "search_tools", "arguments": {"text": "x"}}, session=None) is None
    renamed = call_tool(proxy, {"name": "lazymcp_search_tools", "arguments": {"query": "notes"}}, session=None)
    assert payload(answered(renamed))["tools"][0]["category"] == "notes"


@pytest.mark.requirement("LT-18")
@pytest.mark.requirement("LT-31")
@pytest.mark.parametrize(
    "settings",
    [
        {"mode": "core", "core_tools": ("wheather",)},
        {"mode": "dynamic", "core_tools": ("add", "nope")},
    ],
)
def test_a_configured_name_that_matches_nothing_fails_lazify_at_once(settings: dict[str, Any]) -> None:
    with pytest.raises(CatalogError) as caught:
        lazify(build_server(), **settings)
    assert caught.value.data is not None
    [unknown] = caught.value.data["unknown"]
    assert unknown["name"] == settings["core_tools"][-1] and unknown["where"] == "core tools"
    if unknown["name"] == "wheather":
        assert unknown["suggestions"][0] == "weather"  # a category, the closest name


# --- real SDK clients, both eras ------------------------------------------------------------------


def build_server(**settings: Any) -> MCPServer:
    server = MCPServer("demo", version="1.0", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers. Returns the sum."""
        CALLS.append("add")
        return a + b

    @server.tool()
    def weather_forecast(city: str) -> str:
        """Weather forecast for a city, days ahead."""
        CALLS.append("weather_forecast")
        return f"sunny in {city}"

    @server.tool()
    def weather_alerts(region: str) -> str:
        """Severe weather alerts for a region."""
        CALLS.append("weather_alerts")
        return f"no alerts in {region}"

    @server.tool()
    def notes_add(title: str) -> str:
        """Add a note with a title."""
        CALLS.append("notes_add")
        return f"added {title}"

    if settings:
        lazify(server, **settings)
    return server


@pytest.fixture(autouse=True)
def _forget_calls() -> None:
    CALLS.clear()


def listed(listing: types.ListToolsResult) -> list[str]:
    return [entry.name for entry in listing.tools]


@pytest.mark.requirement("LT-21")
async def test_a_legacy_session_enables_tools_by_search_and_is_told_the_list_changed() -> None:
    server = build_server(mode="dynamic", core_tools=("add",))
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(TIMEOUT):
        async with Client(InMemoryTransport(server), mode="legacy", message_handler=on_message) as client:
            before = listed(await client.list_tools())
            found = await client.call_tool("search_tools", {"query": "weather"})
            await changed.wait()
            after = await client.list_tools()
            called = await client.call_tool("weather_alerts", {"region": "Alps"})
        async with Client(InMemoryTransport(server), mode="legacy") as other:
            elsewhere = listed(await other.list_tools())

    assert before == ["search_tools", "manage_tools", "add"]
    assert set(payload(found)["enabled"]) == {"weather_forecast", "weather_alerts"}
    assert listed(after) == ["search_tools", "manage_tools", "add", "weather_forecast", "weather_alerts"]
    assert after.tools[4].input_schema["required"] == ["region"]  # in full: the host can call it directly
    assert called.content == [types.TextContent(type="text", text="no alerts in Alps")]
    assert elsewhere == before  # per session: another connection starts afresh


@pytest.mark.requirement("LT-22")
async def test_a_modern_client_of_a_dynamic_server_gets_the_stable_surface() -> None:
    server = build_server(mode="dynamic", core_tools=("add",))
    with anyio.fail_after(TIMEOUT):
        async with Client(InMemoryTransport(server), mode="2026-07-28") as client:
            before = listed(await client.list_tools())
            await client.call_tool("search_tools", {"query": "weather"})
            after = listed(await client.list_tools())
            invoked = await client.call_tool("invoke_tool", {"name": "weather_alerts", "arguments": {"region": "Alps"}})
    assert before == after == [*SURFACE, "add"]
    assert invoked.content == [types.TextContent(type="text", text="no alerts in Alps")]


@pytest.mark.requirement("LT-23")
@pytest.mark.requirement("LT-25")
@pytest.mark.parametrize("era", ERAS)
async def test_a_stock_client_reaches_every_tool_through_the_proxy_surface(era: str) -> None:
    server = build_server(mode="proxy")
    with anyio.fail_after(TIMEOUT):
        async with Client(InMemoryTransport(server), mode=era) as client:
            surface = listed(await client.list_tools())
            categories = payload(await client.call_tool("list_tool_categories", {}))
            found = payload(await client.call_tool("search_tools", {"query": "add a note"}))
            described = payload(await client.call_tool("describe_tools", {"names": ["notes_add"]}))
            invoked = await client.call_tool("invoke_tool", {"name": "notes_add", "arguments": {"title": "milk"}})
            refused = await client.call_tool("invoke_tool", {"name": "notes_add", "arguments": {"title": 3}})
            server.add_tool(lambda: "hi", name="late_tool", description="Added later.")
            still = listed(await client.list_tools())
    assert surface == still == SURFACE
    assert [c["name"] for c in categories["categories"]] == ["demo", "notes", "weather"]
    assert found["tools"][0]["name"] == "notes_add"
    assert described["tools"][0]["inputSchema"]["required"] == ["title"]
    assert invoked.is_error is not True and invoked.structured_content == {"result": "added milk"}
    assert refused.is_error is True and '"required":["title"]' in payload_text(refused)
    assert CALLS == ["notes_add"]  # the refused call never ran


def payload_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.requirement("LT-24")
@pytest.mark.parametrize("era", ERAS)
async def test_core_mode_lists_core_tools_in_full_for_a_stock_client(era: str) -> None:
    server = build_server(mode="core", core_tools=("weather",))
    with anyio.fail_after(TIMEOUT):
        async with Client(InMemoryTransport(server), mode=era) as client:
            listing = await client.list_tools()
            forecast = await client.call_tool("weather_forecast", {"city": "Oslo"})
    assert listed(listing) == [*SURFACE, "weather_forecast", "weather_alerts"]
    assert listing.tools[4].input_schema["required"] == ["city"]
    assert forecast.structured_content == {"result": "sunny in Oslo"}


@pytest.mark.requirement("LT-30")
@pytest.mark.parametrize("mode", ["describe", "dynamic", "proxy", "core", "eager"])
@pytest.mark.parametrize("era", ERAS)
async def test_every_real_tool_stays_callable_by_its_own_name_in_every_mode(era: str, mode: str) -> None:
    server = build_server(mode=mode)
    with anyio.fail_after(TIMEOUT):
        async with Client(InMemoryTransport(server), mode=era) as client:
            await client.list_tools()
            results = [
                await client.call_tool("notes_add", {"title": "x"}),
                await client.call_tool("add", {"a": 2, "b": 3}),
            ]
            refused = await client.call_tool("add", {"a": "two"})  # the §9 check holds in every mode
    assert [result.is_error for result in results] == [False, False]
    assert refused.is_error is True
    assert CALLS == ["notes_add", "add"]


@pytest.mark.requirement("LT-18")
@pytest.mark.parametrize("era", ERAS)
async def test_a_declaring_client_gets_bare_stubs_and_describe_in_every_mode(era: str) -> None:
    for mode in ("dynamic", "proxy", "core", "eager"):
        server = build_server(mode=mode)
        with anyio.fail_after(TIMEOUT):
            async with LazyClient(InMemoryTransport(server), mode=era) as client:
                stubs = await client.list_stubs()
                tool_ = await client.describe("weather_alerts")
        assert [stub["name"] for stub in stubs] == ["add", "weather_forecast", "weather_alerts", "notes_add"]
        assert tool_["inputSchema"]["required"] == ["region"]
