"""The catalog: building, versions, listings, pages and cursors (spec/lazy-tools.md §4.3-§4.7, §8, §10)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from lazymcp.protocol.errors import CatalogError, ErrorCode, InvalidParams
from lazymcp.surfaces.catalog import RECENT, Catalog
from lazymcp.surfaces.options import Options
from lazymcp.tools.packed import Packed, pack
from tests.conftest import SMALL_TOOLS, SPEC, shared_catalog

SHAPES = ("full", "bare", "stock")
DETAILS = ("name", "summary", "description")
LISTING_SCHEMA: dict[str, Any] = json.loads((SPEC / "schema" / "tools-list-result-lazy.json").read_text())
SETTINGS_SCHEMA: dict[str, Any] = json.loads((SPEC / "schema" / "server-settings.json").read_text())
META_TOOL_SCHEMA = Draft202012Validator({"$defs": LISTING_SCHEMA["$defs"], "$ref": "#/$defs/describeToolsMetaTool"})


def _tools(count: int, prefix: str = "tool") -> list[dict[str, Any]]:
    return [
        {
            "name": f"{prefix}_{i:03d}",
            "description": f"Tool number {i}. It does thing {i}.",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        }
        for i in range(count)
    ]


def _small() -> list[dict[str, Any]]:
    return copy.deepcopy(SMALL_TOOLS)


def _walk(catalog: Catalog, shape: str, detail: str = "summary") -> list[dict[str, Any]]:
    """Every page of a listing, following nextCursor from the first page."""
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(len(catalog) + 2):
        page = catalog.page(shape, detail, cursor)  # type: ignore[arg-type]
        pages.append(page)
        cursor = page.get("nextCursor")
        if cursor is None:
            return pages
    raise AssertionError("the listing never ended")


def _entries(pages: list[dict[str, Any]]) -> list[Any]:
    return [entry for page in pages for entry in page["tools"]]


def _forge(cursor: str, offset: str) -> str:
    """A cursor like ``cursor`` at another position.

    Cursors are opaque to clients; this helper knows the reference encoding (the position is the
    cursor's trailing digits) only to build positions no server would ever issue.
    """
    assert re.search(r"\d+$", cursor), cursor
    return re.sub(r"\d+$", offset, cursor)


def _invalid_cursor(excinfo: pytest.ExceptionInfo[InvalidParams], reason: str) -> None:
    error = excinfo.value
    assert error.code == ErrorCode.INVALID_PARAMS
    assert error.data is not None
    assert error.data["field"] == "cursor"
    assert error.data["reason"] == reason


# Building


@pytest.mark.parametrize(
    "tools",
    [
        pytest.param([["not", "a", "tool"]], id="array-tool"),
        pytest.param(["add"], id="string-tool"),
        pytest.param([None], id="null-tool"),
        pytest.param([{"description": "no name"}], id="missing-name"),
        pytest.param([{"name": 5}], id="number-name"),
        pytest.param([{"name": None}], id="null-name"),
        pytest.param([{"name": ["add"]}], id="array-name"),
        pytest.param([{"name": "add"}, {"name": "sub"}, {"name": "add"}], id="duplicate-names"),
        pytest.param([{"name": "add", "inputSchema": {"type": "object", "enum": {1, 2}}}], id="not-json"),
    ],
)
def test_building_a_catalog_from_unservable_tools_raises_catalog_error(tools: list[Any]) -> None:
    with pytest.raises(CatalogError):
        Catalog.build(tools)


def test_building_keeps_every_tool_in_server_order_and_finds_them_by_name() -> None:
    tools = _small()
    catalog = Catalog.build(tools)
    assert len(catalog) == len(tools)
    assert list(catalog.names) == [tool["name"] for tool in tools]
    for tool in tools:
        assert catalog.get(tool["name"]) is tool
    assert catalog.get("nope") is None


def test_an_empty_catalog_lists_no_tools() -> None:
    catalog = Catalog.build([])
    assert catalog.page("full", "summary", None) == {"tools": []}
    assert catalog.page("bare", "summary", None) == {"tools": []}
    assert catalog.page("stock", "summary", None) == {"tools": [catalog.meta_tool]}


# Versions (§10)


@pytest.mark.requirement("LT-16")
def test_same_tools_give_the_same_version_whatever_the_options() -> None:
    first = Catalog.build(_small())
    again = Catalog.build(_small(), Options(page_size=1, summary_chars=20, describe_batch_max=5))
    assert first.version == again.version


def _reordered_members(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tools[0] = dict(reversed(list(tools[0].items())))
    return tools


CHANGES = {
    "description": lambda tools: tools[0].update(description="Changed."),
    "schema-value": lambda tools: tools[0]["inputSchema"]["properties"]["priority"].update(maximum=5),
    "member-added": lambda tools: tools[1].update(title="Search"),
    "member-removed": lambda tools: tools[0].pop("annotations"),
    "meta-summary": lambda tools: tools[2]["_meta"]["io.lazymcp/lazy-tools"].update(summary="Echo."),
    "tool-added": lambda tools: tools.append({"name": "new", "inputSchema": {"type": "object"}}),
    "tool-removed": lambda tools: tools.pop(),
    "tools-reordered": lambda tools: tools.reverse(),
    "members-reordered": _reordered_members,
    "integer-to-float": lambda tools: tools[0]["inputSchema"]["properties"]["priority"].update(maximum=4.0),
}


@pytest.mark.requirement("LT-16")
@pytest.mark.parametrize("change", list(CHANGES))
def test_any_change_to_the_tools_gives_a_new_version(change: str) -> None:
    tools = _small()
    before = Catalog.build(tools).version
    changed = _small()
    CHANGES[change](changed)
    assert orjson.dumps(changed) != orjson.dumps(tools)
    assert Catalog.build(changed).version != before


@pytest.mark.requirement("LT-09")
@pytest.mark.requirement("LT-16")
def test_a_rebuilt_identical_catalog_accepts_the_old_cursors() -> None:
    old = Catalog.build(_tools(5), Options(page_size=2))
    cursor = old.page("bare", "summary", None)["nextCursor"]
    rebuilt = Catalog.build(_tools(5), Options(page_size=2))
    assert rebuilt.page("bare", "summary", cursor) == old.page("bare", "summary", cursor)


# Full listings (§4.3, LT-05)


@pytest.mark.requirement("LT-05")
@pytest.mark.parametrize("detail", DETAILS)
def test_full_listing_is_the_very_same_tool_objects_in_the_same_order(detail: str) -> None:
    tools = _small()
    original = copy.deepcopy(tools)
    catalog = Catalog.build(tools)
    for shape in SHAPES:  # building every other listing first must not touch the tools
        for other in DETAILS:
            catalog.page(shape, other, None)  # type: ignore[arg-type]
    listed = catalog.page("full", detail, None)  # type: ignore[arg-type]
    assert listed == {"tools": tools}
    assert all(entry is tool for entry, tool in zip(listed["tools"], tools, strict=True))
    assert listed["tools"] == original
    assert [list(tool) for tool in listed["tools"]] == [list(tool) for tool in original]
    assert orjson.dumps(listed["tools"]) == orjson.dumps(original)


@pytest.mark.requirement("LT-05")
def test_full_listing_relays_off_spec_tools_unrepaired() -> None:
    odd = [
        {"name": "no_type", "inputSchema": {"properties": {"q": {"type": "string"}}, "required": ["q"]}},
        {"name": "no_description", "inputSchema": {"type": "object"}},
        {"inputSchema": {}, "name": "name_last", "description": ""},
        {"name": "odd_schema", "description": 5, "inputSchema": {"type": "string"}, "x-vendor": [1, 2]},
    ]
    original = copy.deepcopy(odd)
    catalog = Catalog.build(odd)
    listed = catalog.page("full", "summary", None)["tools"]
    assert listed == original
    assert [list(tool) for tool in listed] == [list(tool) for tool in original]
    assert "type" not in listed[0]["inputSchema"]
    assert all(entry["name"] != catalog.meta_tool["name"] for entry in listed)


@pytest.mark.requirement("LT-05")
def test_full_listing_of_the_real_combined_catalog_is_byte_identical() -> None:
    tools = shared_catalog("combined")
    expected = orjson.dumps(tools)
    catalog = Catalog.build(tools)
    listed = catalog.page("full", "summary", None)
    assert "nextCursor" not in listed
    assert orjson.dumps(listed["tools"]) == expected
    assert all(entry is tool for entry, tool in zip(listed["tools"], tools, strict=True))


# Stub listings (§4.4, §4.5)


@pytest.mark.requirement("LT-06")
@pytest.mark.parametrize("detail", DETAILS)
def test_bare_listing_has_one_bare_stub_per_tool_in_order_and_no_meta_tool(detail: str) -> None:
    catalog = Catalog.build(_small())
    listed = catalog.page("bare", detail, None)  # type: ignore[arg-type]
    Draft202012Validator(LISTING_SCHEMA).validate(listed)
    assert [entry["name"] for entry in listed["tools"]] == list(catalog.names)
    assert all(set(entry) <= {"name", "description"} for entry in listed["tools"])


@pytest.mark.requirement("LT-07")
@pytest.mark.parametrize("detail", DETAILS)
def test_stock_listing_has_the_meta_tool_first_then_one_stock_stub_per_tool(detail: str) -> None:
    catalog = Catalog.build(_small())
    listed = catalog.page("stock", detail, None)  # type: ignore[arg-type]
    Draft202012Validator(LISTING_SCHEMA).validate(listed)
    assert listed["tools"][0] == catalog.meta_tool
    assert listed["tools"][0]["name"] == "describe_tools"
    stubs = listed["tools"][1:]
    assert [entry["name"] for entry in stubs] == list(catalog.names)
    assert all(entry["inputSchema"] == {"type": "object", "properties": {}} for entry in stubs)
    assert all(
        set(entry) <= {"name", "description", "inputSchema", "title", "outputSchema", "annotations", "execution"}
        for entry in stubs
    )


@pytest.mark.requirement("LT-08")
def test_listings_use_the_configured_summary_length() -> None:
    tools = [{"name": "long", "description": "word " * 40, "inputSchema": {"type": "object"}}]
    catalog = Catalog.build(tools, Options(summary_chars=12))
    assert catalog.page("bare", "summary", None)["tools"] == [{"name": "long", "description": "word word\u2026"}]


# The meta-tool (§8)


@pytest.mark.requirement("LT-07")
@pytest.mark.parametrize("batch_max", [1, 7, 100])
def test_meta_tool_definition_takes_names_up_to_the_batch_limit(batch_max: int) -> None:
    meta = Catalog.build(_small(), Options(describe_batch_max=batch_max)).meta_tool
    META_TOOL_SCHEMA.validate(meta)
    schema = meta["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["names"]
    names = schema["properties"]["names"]
    assert names["type"] == "array"
    assert names["items"] == {"type": "string"}
    assert names["minItems"] == 1
    assert names["maxItems"] == batch_max
    Draft202012Validator.check_schema(schema)


@pytest.mark.requirement("LT-07")
@pytest.mark.parametrize(
    ("taken", "meta_name"),
    [
        ([], "describe_tools"),
        (["describe_tools"], "lazymcp_describe_tools"),
        (["lazymcp_describe_tools"], "describe_tools"),
        (["describe_tools", "lazymcp_describe_tools"], "lazymcp_describe_tools_2"),
        (["describe_tools", "lazymcp_describe_tools", "lazymcp_describe_tools_2"], "lazymcp_describe_tools_3"),
        (["describe_tools", "lazymcp_describe_tools", "lazymcp_describe_tools_3"], "lazymcp_describe_tools_2"),
    ],
)
def test_meta_tool_takes_the_first_free_name_when_the_server_owns_describe_tools(
    taken: list[str], meta_name: str
) -> None:
    tools = [{"name": name, "description": "The server's own.", "inputSchema": {"type": "object"}} for name in taken]
    catalog = Catalog.build([*_tools(2), *tools])
    assert catalog.meta_tool["name"] == meta_name
    listed = catalog.page("stock", "summary", None)["tools"]
    assert listed[0] == catalog.meta_tool
    assert [entry["name"] for entry in listed[1:]] == list(catalog.names)  # the server's tools are plain stubs
    assert [entry["name"] for entry in listed].count(meta_name) == 1


# Pagination (§4.7, LT-09)


@pytest.mark.requirement("LT-09")
@pytest.mark.parametrize("shape", SHAPES)
def test_without_a_page_size_every_listing_is_one_page_without_next_cursor(shape: str) -> None:
    catalog = Catalog.build(_tools(30))
    page = catalog.page(shape, "summary", None)  # type: ignore[arg-type]
    assert "nextCursor" not in page
    extra = 1 if shape == "stock" else 0
    assert len(page["tools"]) == 30 + extra


@pytest.mark.requirement("LT-09")
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("count", [0, 1, 5, 6])
@pytest.mark.parametrize("size", [1, 2, 3, 5, 6, 7])
def test_pages_hold_page_size_catalog_tools_and_join_to_the_whole_listing(shape: str, count: int, size: int) -> None:
    tools = _tools(count)
    whole = Catalog.build(tools).page(shape, "summary", None)["tools"]  # type: ignore[arg-type]
    catalog = Catalog.build(tools, Options(page_size=size))
    pages = _walk(catalog, shape)
    expected_pages = max(1, -(-count // size))
    assert len(pages) == expected_pages
    for number, page in enumerate(pages):
        catalog_entries = [e for e in page["tools"] if e is not catalog.meta_tool]
        remaining = count - number * size
        assert len(catalog_entries) == min(size, remaining)
        assert ("nextCursor" in page) == (remaining > size)
        if "nextCursor" in page:
            assert isinstance(page["nextCursor"], str)
            assert page["nextCursor"]
    assert _entries(pages) == whole
    joined = _entries(pages)
    if shape == "stock":
        assert joined[0] is catalog.meta_tool
        assert sum(1 for entry in joined if entry is catalog.meta_tool) == 1
        assert len(pages[0]["tools"]) == min(size, count) + 1  # the meta-tool rides beyond the page size
    else:
        assert all(entry is not catalog.meta_tool for entry in joined)
    names = [entry["name"] for entry in joined if entry is not catalog.meta_tool]
    assert names == [tool["name"] for tool in tools]


@pytest.mark.requirement("LT-09")
@pytest.mark.parametrize("shape", SHAPES)
def test_pages_of_the_real_combined_catalog_join_to_the_whole_listing(shape: str) -> None:
    tools = shared_catalog("combined")
    whole = Catalog.build(tools).page(shape, "summary", None)["tools"]  # type: ignore[arg-type]
    catalog = Catalog.build(tools, Options(page_size=100))
    pages = _walk(catalog, shape)
    assert len(pages) == 10
    assert _entries(pages) == whole
    extra = 1 if shape == "stock" else 0
    assert [len(page["tools"]) for page in pages] == [100 + extra, *[100] * 8, 54]


@pytest.mark.requirement("LT-09")
def test_the_same_request_gives_the_same_page_every_time() -> None:
    catalog = Catalog.build(_tools(7), Options(page_size=3))
    for shape in SHAPES:
        first = _walk(catalog, shape)
        assert _walk(catalog, shape) == first
        assert Catalog.build(_tools(7), Options(page_size=3)).page(shape, "summary", None) == first[0]  # type: ignore[arg-type]


@pytest.mark.requirement("LT-09")
def test_a_cursor_is_a_position_valid_in_every_shape() -> None:
    catalog = Catalog.build(_tools(5), Options(page_size=2))
    cursor = catalog.page("bare", "summary", None)["nextCursor"]
    assert [e["name"] for e in catalog.page("full", "summary", cursor)["tools"]] == ["tool_002", "tool_003"]
    assert [e["name"] for e in catalog.page("stock", "name", cursor)["tools"]] == ["tool_002", "tool_003"]


# Cursor errors (§4.7, §12, LT-09, LT-13)


@pytest.mark.requirement("LT-09")
@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize(
    "cursor",
    ["", "garbage", "0", "-1", ":", ".", "x" * 10_000, "\u0000", "c4f1e2:2"],
)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_cursor_the_server_never_issued_is_malformed(cursor: str, shape: str) -> None:
    catalog = Catalog.build(_tools(5), Options(page_size=2))
    with pytest.raises(InvalidParams) as excinfo:
        catalog.page(shape, "summary", cursor)  # type: ignore[arg-type]
    _invalid_cursor(excinfo, "malformed")


@pytest.mark.requirement("LT-09")
@pytest.mark.parametrize("suffix", ["x", "/", ".", " ", "-1"])
def test_an_issued_cursor_with_junk_appended_is_malformed(suffix: str) -> None:
    catalog = Catalog.build(_tools(5), Options(page_size=2))
    cursor = catalog.page("bare", "summary", None)["nextCursor"]
    with pytest.raises(InvalidParams) as excinfo:
        catalog.page("bare", "summary", cursor + suffix)
    _invalid_cursor(excinfo, "malformed")


@pytest.mark.requirement("LT-09")
@pytest.mark.parametrize("offset", ["7", "1000", "999999999999"])
def test_a_cursor_past_the_end_of_the_catalog_is_malformed(offset: str) -> None:
    catalog = Catalog.build(_tools(5), Options(page_size=2))
    cursor = _forge(catalog.page("bare", "summary", None)["nextCursor"], offset)
    with pytest.raises(InvalidParams) as excinfo:
        catalog.page("bare", "summary", cursor)
    _invalid_cursor(excinfo, "malformed")


@pytest.mark.requirement("LT-09")
def test_a_cursor_at_the_position_just_past_the_last_tool_is_malformed() -> None:
    catalog = Catalog.build(_tools(5), Options(page_size=2))
    cursor = _forge(catalog.page("bare", "summary", None)["nextCursor"], "5")
    with pytest.raises(InvalidParams) as excinfo:
        catalog.page("bare", "summary", cursor)
    _invalid_cursor(excinfo, "malformed")


@pytest.mark.requirement("LT-09")
@pytest.mark.requirement("LT-13")
def test_a_cursor_with_a_non_decimal_digit_is_malformed() -> None:
    catalog = Catalog.build(_tools(5), Options(page_size=2))
    cursor = _forge(catalog.page("bare", "summary", None)["nextCursor"], "\u00b2")
    with pytest.raises(InvalidParams) as excinfo:
        catalog.page("bare", "summary", cursor)
    _invalid_cursor(excinfo, "malformed")


@pytest.mark.requirement("LT-07")
def test_a_page_requested_with_a_cursor_never_carries_the_meta_tool() -> None:
    catalog = Catalog.build(_tools(5), Options(page_size=2))
    cursor = _forge(catalog.page("stock", "summary", None)["nextCursor"], "0")
    page = catalog.page("stock", "summary", cursor)
    assert catalog.meta_tool not in page["tools"]


@pytest.mark.requirement("LT-09")
@pytest.mark.requirement("LT-16")
@pytest.mark.parametrize("shape", SHAPES)
def test_a_cursor_from_another_catalog_version_is_stale_and_listing_restarts(shape: str) -> None:
    old = Catalog.build(_tools(5), Options(page_size=2))
    cursor = old.page(shape, "summary", None)["nextCursor"]  # type: ignore[arg-type]
    new = Catalog.build(_tools(6), Options(page_size=2))
    with pytest.raises(InvalidParams) as excinfo:
        new.page(shape, "summary", cursor)  # type: ignore[arg-type]
    _invalid_cursor(excinfo, "stale")
    restarted = _walk(new, shape)
    names = [e["name"] for e in _entries(restarted) if e is not new.meta_tool]
    assert names == [f"tool_{i:03d}" for i in range(6)]


# Options (§3.1)


def test_default_settings_are_the_spec_defaults_and_match_the_settings_schema() -> None:
    settings = Options().settings()
    assert settings == {"describeBatchMax": 100, "summaryMaxChars": 80, "stockDefault": "lazy", "pageSize": None}
    Draft202012Validator(SETTINGS_SCHEMA).validate(settings)


@pytest.mark.parametrize(
    "options",
    [
        {"describe_batch_max": 1},
        {"describe_batch_max": 100},
        {"summary_chars": 8},
        {"page_size": 1},
        {"stock_default": "eager"},
    ],
)
def test_settings_at_the_spec_bounds_are_accepted_and_advertised(options: dict[str, Any]) -> None:
    settings = Options(**options).settings()
    Draft202012Validator(SETTINGS_SCHEMA).validate(settings)
    assert set(settings) == {"describeBatchMax", "summaryMaxChars", "stockDefault", "pageSize"}


@pytest.mark.parametrize(
    "options",
    [
        {"describe_batch_max": 0},
        {"describe_batch_max": 101},
        {"summary_chars": 7},
        {"page_size": 0},
        {"stock_default": "sometimes"},
    ],
)
def test_settings_outside_the_spec_bounds_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Options(**options)


# --- packed catalogs ------------------------------------------------------------------------------


def test_a_packed_catalog_serves_what_a_plain_one_does_byte_for_byte() -> None:
    tools = _small()
    plain, packed = Catalog.build(tools), Catalog.build(iter(_small()), packed=True)
    assert isinstance(packed.held, Packed) and packed.version == plain.version
    assert packed.tools == plain.tools and len(packed) == len(plain)
    for shape in SHAPES:
        for detail in DETAILS:
            assert orjson.dumps(packed.listing(shape, detail)) == orjson.dumps(plain.listing(shape, detail))
    assert all(isinstance(entry, orjson.Fragment) for entry in packed.listing("full", "summary"))
    assert [packed.get(tool["name"]) for tool in tools] == tools
    assert packed.get("no_such_tool") is None


def test_a_packed_catalog_keeps_the_tools_last_read_decoded() -> None:
    catalog = Catalog.build(_tools(RECENT + 2), packed=True)
    first = catalog.get("tool_000")
    assert catalog.get("tool_000") is first
    for i in range(1, RECENT + 1):
        catalog.get(f"tool_{i:03d}")
    again = catalog.get("tool_000")
    assert again == first and again is not first  # read by RECENT others since: decoded anew


def test_packed_tools_read_like_a_tuple_of_the_tools() -> None:
    tools = _tools(3)
    packed = Packed.of(tools)
    assert (len(packed), packed[1], packed[-1], list(packed)) == (3, tools[1], tools[2], tools)
    assert packed == tools and packed != tools[:2] and packed != "tools"
    assert packed[1:] == tools[1:] and isinstance(packed[1:], Packed)
    assert packed.names == ("tool_000", "tool_001", "tool_002") and repr(packed) == "Packed(3 tools)"


def test_shared_packed_tools_read_back_under_their_own_names_in_their_own_order() -> None:
    tools = [{"description": "First the description.", "name": "echo", "inputSchema": {"type": "object"}}]
    packed = Packed.of(tools)
    renamed = [pack({**tools[0], "name": "server__echo"})]
    packed.share(renamed)
    assert packed.blobs == tuple(renamed)
    assert list(packed) == tools and list(packed[0]) == ["description", "name", "inputSchema"]
    with pytest.raises(ValueError):
        packed.share([])


def test_deferred_packed_tools_are_loaded_at_each_read_until_shared() -> None:
    tools = _tools(2)
    loads: list[int] = []

    def load() -> list[Any]:
        loads.append(1)
        return copy.deepcopy(tools)

    packed = Packed.deferred(["tool_000", "tool_001"], load)
    assert len(packed) == 2 and not loads
    assert packed[1] == tools[1] and list(packed) == tools and len(loads) == 2
    assert packed.blobs == tuple(map(pack, tools))
    packed.share([pack(tool) for tool in tools])
    count = len(loads)
    assert list(packed) == tools and packed[0] == tools[0] and len(loads) == count


def test_a_catalog_in_another_mode_keeps_its_tools_and_version() -> None:
    catalog = Catalog.build(_small(), Options(mode="describe"), packed=True)
    catalog.listing("stock", "summary")
    proxy = catalog.with_mode("proxy")
    assert (proxy.options.mode, proxy.version, proxy.held) == ("proxy", catalog.version, catalog.held)
    assert catalog.options.mode == "describe" and not proxy._listings  # pyright: ignore[reportPrivateUsage]


def test_a_packed_catalog_of_packed_tools_keeps_their_json_and_refuses_a_repeated_name() -> None:
    tools = _tools(2)
    packed = Packed.of(tools)
    catalog = Catalog.build(packed, packed=True)
    assert isinstance(catalog.held, Packed) and catalog.held.blobs == packed.blobs
    assert catalog.version == Catalog.build(tools).version and catalog.tools == tuple(tools)
    twice = Packed.of([*tools, tools[0]])
    with pytest.raises(CatalogError):
        Catalog.build(twice, packed=True)
    rejected: list[str] = []
    assert len(Catalog.build(twice, packed=True, rejected=rejected)) == 2 and len(rejected) == 1
