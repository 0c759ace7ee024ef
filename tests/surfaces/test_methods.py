"""The pure request handlers: tools/list params, tools/describe, tools/describe_batch, the meta-tool and the
tools/call check (spec/lazy-tools.md §4.1, §4.2, §5, §6, §7, §8, §9, §12)."""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from lazymcp.protocol.errors import ErrorCode, InvalidParams, UnknownTool
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import ListRequest, parse_list_params, resolve_shape
from lazymcp.surfaces.modes import check_call
from lazymcp.surfaces.options import Options
from tests.conftest import SMALL_TOOLS, SPEC, shared_catalog

from ..handlers import call_meta_tool, describe, describe_batch
from ..handlers import page as list_tools

ERROR_SCHEMA = Draft202012Validator(json.loads((SPEC / "schema" / "error-invalid-params.json").read_text()))
PAYLOAD_SCHEMA = Draft202012Validator(json.loads((SPEC / "schema" / "describe-tools-payload.json").read_text()))
DESCRIBE_RESULT_SCHEMA = Draft202012Validator(json.loads((SPEC / "schema" / "tools-describe-result.json").read_text()))
BATCH_RESULT_SCHEMA = Draft202012Validator(
    json.loads((SPEC / "schema" / "tools-describe-batch-result.json").read_text())
)
NON_OBJECTS: list[Any] = [[], ["name"], "tools", 5, 1.5, True, False]


def _catalog(options: Options | None = None) -> Catalog:
    return Catalog.build(copy.deepcopy(SMALL_TOOLS), options)


def _assert_invalid(error: BaseException, field: str, reason: str) -> dict[str, Any]:
    """``error`` is the spec's -32602 for ``field``/``reason``, and its wire form matches the error schema."""
    assert isinstance(error, InvalidParams)
    assert error.code == ErrorCode.INVALID_PARAMS
    assert error.data is not None
    assert error.data["field"] == field
    assert error.data["reason"] == reason
    wire = json.loads(orjson.dumps({"code": int(error.code), "message": error.message, "data": error.data}))
    ERROR_SCHEMA.validate(wire)
    return error.data


def _payload(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON payload of a describe_tools result (one text block, compact JSON)."""
    assert "structuredContent" not in result
    [block] = result["content"]
    assert block["type"] == "text"
    payload = json.loads(block["text"])
    assert block["text"] == orjson.dumps(payload).decode()  # no insignificant whitespace
    PAYLOAD_SCHEMA.validate(payload)
    return payload


# tools/list params (§4.1)


@pytest.mark.requirement("LT-04")
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (None, ListRequest(cursor=None, lazy=None, detail="summary")),
        ({}, ListRequest(cursor=None, lazy=None, detail="summary")),
        ({"lazy": True}, ListRequest(lazy=True)),
        ({"lazy": False}, ListRequest(lazy=False)),
        ({"lazy": None}, ListRequest(lazy=None)),
        ({"detail": "name"}, ListRequest(detail="name")),
        ({"detail": "summary"}, ListRequest(detail="summary")),
        ({"detail": "description"}, ListRequest(detail="description")),
        ({"detail": None}, ListRequest(detail="summary")),
        ({"cursor": "abc"}, ListRequest(cursor="abc")),
        ({"cursor": None}, ListRequest(cursor=None)),
        ({"cursor": None, "lazy": None, "detail": None}, ListRequest()),
        ({"lazy": False, "detail": "name", "cursor": "x"}, ListRequest(cursor="x", lazy=False, detail="name")),
        ({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}, "other": [1]}, ListRequest()),
    ],
)
def test_list_params_read_lazy_detail_and_cursor_with_null_as_absent(
    params: dict[str, Any] | None, expected: ListRequest
) -> None:
    assert parse_list_params(params) == expected


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize(
    ("params", "field", "reason"),
    [
        ({"lazy": "true"}, "lazy", "type"),
        ({"lazy": 1}, "lazy", "type"),
        ({"lazy": 0}, "lazy", "type"),
        ({"lazy": []}, "lazy", "type"),
        ({"lazy": {}}, "lazy", "type"),
        ({"detail": "full"}, "detail", "unknown_value"),
        ({"detail": ""}, "detail", "unknown_value"),
        ({"detail": "Summary"}, "detail", "unknown_value"),
        ({"cursor": 5}, "cursor", "type"),
        ({"cursor": True}, "cursor", "type"),
        ({"cursor": ["abc"]}, "cursor", "type"),
        ({"cursor": {}}, "cursor", "type"),
        ({"lazy": 1, "detail": "full", "cursor": 5}, "lazy", "type"),
        ({"detail": "full", "cursor": 5}, "detail", "unknown_value"),
        ({"cursor": 5, "detail": "full"}, "detail", "unknown_value"),
    ],
)
def test_malformed_list_params_raise_invalid_params_on_the_first_bad_field(
    params: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(InvalidParams) as excinfo:
        parse_list_params(params)
    _assert_invalid(excinfo.value, field, reason)


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize("detail", [5, True, ["name"], {"name": 1}])
def test_a_non_string_detail_is_a_type_error(detail: Any) -> None:
    with pytest.raises(InvalidParams) as excinfo:
        parse_list_params({"detail": detail})
    _assert_invalid(excinfo.value, "detail", "type")


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize("params", NON_OBJECTS)
def test_list_params_that_are_not_an_object_are_a_type_error_on_params(params: Any) -> None:
    with pytest.raises(InvalidParams) as excinfo:
        parse_list_params(params)
    _assert_invalid(excinfo.value, "params", "type")


# Resolution of lazy (§4.2)


@pytest.mark.requirement("LT-04")
@pytest.mark.requirement("LT-17")
@pytest.mark.parametrize(
    ("declared", "stock_default", "lazy", "shape"),
    [
        (True, "lazy", None, "bare"),
        (True, "lazy", True, "bare"),
        (True, "lazy", False, "full"),
        (True, "eager", None, "bare"),
        (True, "eager", True, "bare"),
        (True, "eager", False, "full"),
        (False, "lazy", None, "stock"),
        (False, "lazy", True, "stock"),
        (False, "lazy", False, "full"),
        (False, "eager", None, "full"),
        (False, "eager", True, "stock"),
        (False, "eager", False, "full"),
    ],
)
def test_listing_shape_follows_the_resolution_table(
    declared: bool, stock_default: str, lazy: bool | None, shape: str
) -> None:
    request = ListRequest(lazy=lazy)
    assert resolve_shape(request, declared=declared, stock_default=stock_default) == shape  # type: ignore[arg-type]


@pytest.mark.requirement("LT-04")
@pytest.mark.requirement("LT-05")
def test_list_tools_serves_the_resolved_shape_at_the_requested_detail() -> None:
    catalog = _catalog()
    request = parse_list_params({"lazy": None, "detail": "name"})
    bare = list_tools(catalog, request, resolve_shape(request, declared=True, stock_default="eager"))
    assert bare == {"tools": [{"name": tool["name"]} for tool in SMALL_TOOLS]}
    full_request = parse_list_params({"lazy": False, "detail": "name"})
    full = list_tools(catalog, full_request, resolve_shape(full_request, declared=True, stock_default="lazy"))
    assert full == {"tools": SMALL_TOOLS}


# tools/describe (§5)


@pytest.mark.requirement("LT-10")
@pytest.mark.requirement("LT-12")
def test_describe_returns_the_full_listing_entry_itself() -> None:
    catalog = _catalog()
    full = catalog.page("full", "summary", None)["tools"]
    for entry in full:
        result = describe(catalog, {"name": entry["name"], "_meta": {}})
        assert result == {"tool": entry}
        assert result["tool"] is entry
        assert orjson.dumps(result["tool"]) == orjson.dumps(entry)
        DESCRIBE_RESULT_SCHEMA.validate(result)


@pytest.mark.requirement("LT-12")
def test_describe_of_every_real_tool_is_byte_identical_to_its_full_listing_entry() -> None:
    tools = shared_catalog("combined")
    catalog = Catalog.build(tools)
    full = catalog.page("full", "summary", None)["tools"]
    for entry in full:
        assert orjson.dumps(describe(catalog, {"name": entry["name"]})["tool"]) == orjson.dumps(entry)


@pytest.mark.requirement("LT-10")
@pytest.mark.parametrize(
    ("name", "suggestions"),
    [
        ("issues_serch", ["issues_search"]),
        ("ehco", ["echo"]),
        ("zzzzzzzzzz", []),
    ],
)
def test_describe_unknown_tool_suggests_close_names(name: str, suggestions: list[str]) -> None:
    with pytest.raises(UnknownTool) as excinfo:
        describe(_catalog(), {"name": name})
    data = _assert_invalid(excinfo.value, "name", "unknown_tool")
    assert data["name"] == name
    assert data["suggestions"][: len(suggestions)] == suggestions
    if not suggestions:
        assert data["suggestions"] == []


@pytest.mark.requirement("LT-10")
def test_describe_unknown_tool_suggests_at_most_three_catalog_names_deterministically() -> None:
    tools = [{"name": f"get_item_{i}", "inputSchema": {"type": "object"}} for i in range(10)]
    catalog = Catalog.build(tools)
    with pytest.raises(UnknownTool) as first:
        describe(catalog, {"name": "get_item"})
    with pytest.raises(UnknownTool) as again:
        describe(catalog, {"name": "get_item"})
    data = _assert_invalid(first.value, "name", "unknown_tool")
    assert 1 <= len(data["suggestions"]) <= 3
    assert set(data["suggestions"]) <= set(catalog.names)
    assert again.value.data == data


@pytest.mark.requirement("LT-10")
@pytest.mark.parametrize(("name", "expected"), [("ECHO", "echo"), ("LEGACY_DRAFT7", "legacy_draft7")])
def test_describe_suggests_a_case_insensitively_equal_name_first(name: str, expected: str) -> None:
    with pytest.raises(UnknownTool) as excinfo:
        describe(_catalog(), {"name": name})
    data = _assert_invalid(excinfo.value, "name", "unknown_tool")
    assert data["suggestions"][:1] == [expected]


@pytest.mark.requirement("LT-10")
def test_describe_of_a_very_long_name_is_unknown_tool() -> None:
    with pytest.raises(UnknownTool) as excinfo:
        describe(_catalog(), {"name": "echo" * 5000})
    data = _assert_invalid(excinfo.value, "name", "unknown_tool")
    assert len(data["suggestions"]) <= 3


@pytest.mark.requirement("LT-10")
def test_describe_of_the_meta_tool_name_is_unknown_unless_the_server_owns_it() -> None:
    catalog = _catalog()
    with pytest.raises(UnknownTool) as excinfo:
        describe(catalog, {"name": catalog.meta_tool["name"]})
    _assert_invalid(excinfo.value, "name", "unknown_tool")
    own = {"name": "describe_tools", "description": "Mine.", "inputSchema": {"type": "object"}}
    owning = Catalog.build([*copy.deepcopy(SMALL_TOOLS), own])
    assert describe(owning, {"name": "describe_tools"}) == {"tool": own}
    with pytest.raises(UnknownTool):
        describe(owning, {"name": owning.meta_tool["name"]})


@pytest.mark.requirement("LT-10")
@pytest.mark.requirement("LT-12")
def test_describe_finds_a_catalog_tool_whatever_the_length_of_its_name() -> None:
    long_name = "n" * 1025
    tool = {"name": long_name, "inputSchema": {"type": "object"}}
    catalog = Catalog.build([tool])
    assert describe_batch(catalog, {"names": [long_name]})["tools"] == [tool]
    assert describe(catalog, {"name": long_name}) == {"tool": tool}


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize(
    ("params", "reason"),
    [
        (None, "type"),
        ({}, "type"),
        ({"name": None}, "type"),
        ({"name": 5}, "type"),
        ({"name": ["echo"]}, "type"),
        ({"name": {"name": "echo"}}, "type"),
        ({"name": True}, "type"),
        ({"name": ""}, "empty"),
    ],
)
def test_describe_with_a_malformed_name_raises_invalid_params_on_name(params: Any, reason: str) -> None:
    with pytest.raises(InvalidParams) as excinfo:
        describe(_catalog(), params)
    _assert_invalid(excinfo.value, "name", reason)


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize("params", NON_OBJECTS)
def test_describe_params_that_are_not_an_object_are_a_type_error_on_params(params: Any) -> None:
    with pytest.raises(InvalidParams) as excinfo:
        describe(_catalog(), params)
    _assert_invalid(excinfo.value, "params", "type")


# tools/describe_batch (§6)


@pytest.mark.requirement("LT-11")
@pytest.mark.requirement("LT-12")
def test_describe_batch_describes_known_names_once_in_order_and_lists_unknown_once() -> None:
    catalog = _catalog()
    result = describe_batch(catalog, {"names": ["echo", "nope", "echo", "issues_create", "nope", "", "zzz"]})
    assert result == {
        "tools": [catalog.get("echo"), catalog.get("issues_create")],
        "unknown": ["nope", "", "zzz"],
    }
    assert result["tools"][0] is catalog.get("echo")
    BATCH_RESULT_SCHEMA.validate(result)


@pytest.mark.requirement("LT-11")
def test_describe_batch_with_no_known_name_is_still_a_success() -> None:
    result = describe_batch(_catalog(), {"names": ["nope", "nada", "nope"]})
    assert result == {"tools": [], "unknown": ["nope", "nada"]}


@pytest.mark.requirement("LT-11")
def test_describe_batch_keeps_request_order_not_catalog_order() -> None:
    catalog = _catalog()
    names = ["legacy_draft7", "echo", "issues_search", "issues_create"]
    assert [tool["name"] for tool in describe_batch(catalog, {"names": names})["tools"]] == names


@pytest.mark.requirement("LT-11")
@pytest.mark.parametrize("limit", [1, 3, 100])
def test_describe_batch_accepts_exactly_the_limit(limit: int) -> None:
    catalog = _catalog(Options(describe_batch_max=limit))
    names = [f"n{i}" for i in range(limit - 1)] + ["echo"]
    result = describe_batch(catalog, {"names": names})
    assert result["tools"] == [catalog.get("echo")]
    assert len(result["unknown"]) == limit - 1


@pytest.mark.requirement("LT-11")
@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize("limit", [1, 3, 100])
def test_describe_batch_over_the_limit_is_too_many_with_the_limit(limit: int) -> None:
    catalog = _catalog(Options(describe_batch_max=limit))
    with pytest.raises(InvalidParams) as excinfo:
        describe_batch(catalog, {"names": ["echo"] * (limit + 1)})  # duplicates count as sent
    data = _assert_invalid(excinfo.value, "names", "too_many")
    assert data["limit"] == limit


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize("limit", [1, 100])
def test_describe_batch_of_no_names_is_empty_with_the_limit(limit: int) -> None:
    with pytest.raises(InvalidParams) as excinfo:
        describe_batch(_catalog(Options(describe_batch_max=limit)), {"names": []})
    data = _assert_invalid(excinfo.value, "names", "empty")
    assert data["limit"] == limit


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"names": None},
        {"names": "echo"},
        {"names": {"echo": True}},
        {"names": 5},
        {"names": True},
        {"name": "echo"},
        {"names": ["echo", 5]},
        {"names": [None]},
        {"names": [["echo"]]},
        {"names": ["echo", {"name": "echo"}]},
    ],
)
def test_describe_batch_with_malformed_names_raises_a_type_error_on_names(params: Any) -> None:
    with pytest.raises(InvalidParams) as excinfo:
        describe_batch(_catalog(), params)
    _assert_invalid(excinfo.value, "names", "type")


@pytest.mark.requirement("LT-13")
@pytest.mark.parametrize("params", NON_OBJECTS)
def test_describe_batch_params_that_are_not_an_object_are_a_type_error_on_params(params: Any) -> None:
    with pytest.raises(InvalidParams) as excinfo:
        describe_batch(_catalog(), params)
    _assert_invalid(excinfo.value, "params", "type")


@pytest.mark.requirement("LT-13")
def test_the_catalog_keeps_serving_after_malformed_requests() -> None:
    catalog = _catalog()
    for bad in ({"name": 5}, {"name": ""}, {"name": "nope"}):
        with pytest.raises(InvalidParams):
            describe(catalog, bad)
    with pytest.raises(InvalidParams):
        describe_batch(catalog, {"names": []})
    with pytest.raises(InvalidParams):
        catalog.page("stock", "summary", "garbage")
    assert describe(catalog, {"name": "echo"}) == {"tool": catalog.get("echo")}
    assert len(catalog.page("stock", "summary", None)["tools"]) == len(SMALL_TOOLS) + 1


# The describe_tools meta-tool (§8)


@pytest.mark.requirement("LT-07")
def test_meta_tool_result_is_compact_json_of_tools_unknown_and_suggestions() -> None:
    catalog = _catalog()
    result = call_meta_tool(catalog, {"names": ["issues_search"]})
    payload = _payload(result)
    assert payload == {"tools": [catalog.get("issues_search")], "unknown": [], "suggestions": {}}
    expected_text = orjson.dumps({"tools": [catalog.get("issues_search")], "unknown": [], "suggestions": {}}).decode()
    assert result["content"][0]["text"] == expected_text
    assert result.get("isError", False) is False


@pytest.mark.requirement("LT-07")
@pytest.mark.requirement("LT-11")
def test_meta_tool_resolves_names_like_describe_batch() -> None:
    catalog = _catalog()
    names = ["echo", "ehco", "echo", "issues_create", "ehco", ""]
    payload = _payload(call_meta_tool(catalog, {"names": names}))
    batch = describe_batch(catalog, {"names": names})
    assert payload["tools"] == json.loads(orjson.dumps(batch["tools"]))
    assert payload["unknown"] == batch["unknown"] == ["ehco", ""]
    assert set(payload["suggestions"]) == {"ehco", ""}
    assert payload["suggestions"]["ehco"][:1] == ["echo"]


@pytest.mark.requirement("LT-07")
def test_meta_tool_is_an_error_only_when_no_name_is_known() -> None:
    catalog = _catalog()
    none_known = call_meta_tool(catalog, {"names": ["nope", "ehco"]})
    assert none_known["isError"] is True
    payload = _payload(none_known)
    assert payload["tools"] == []
    assert payload["unknown"] == ["nope", "ehco"]
    some_known = call_meta_tool(catalog, {"names": ["nope", "echo"]})
    assert some_known.get("isError", False) is False


@pytest.mark.requirement("LT-07")
def test_meta_tool_suggests_for_the_first_ten_unknown_names_only() -> None:
    catalog = _catalog()
    unknown = [f"ech{i}" for i in range(12)]
    payload = _payload(call_meta_tool(catalog, {"names": ["echo", *unknown]}))
    assert payload["unknown"] == unknown
    assert list(payload["suggestions"]) == unknown[:10]
    assert all(len(names) <= 3 for names in payload["suggestions"].values())


@pytest.mark.requirement("LT-07")
def test_meta_tool_describes_a_server_tool_named_describe_tools() -> None:
    own = {"name": "describe_tools", "description": "Mine.", "inputSchema": {"type": "object"}}
    catalog = Catalog.build([*copy.deepcopy(SMALL_TOOLS), own])
    assert catalog.meta_tool["name"] == "lazymcp_describe_tools"
    payload = _payload(call_meta_tool(catalog, {"names": ["describe_tools", "lazymcp_describe_tools"]}))
    assert payload["tools"] == [own]
    assert payload["unknown"] == ["lazymcp_describe_tools"]


# The tools/call check (§9)


@pytest.mark.requirement("LT-14")
def test_check_call_rejects_bad_arguments_of_a_catalog_tool_with_its_schema() -> None:
    catalog = _catalog()
    result = check_call(catalog, "issues_create", {"project": "P"})
    assert result is not None
    assert result["isError"] is True
    [block] = result["content"]
    assert block["type"] == "text"
    assert orjson.dumps(catalog.get("issues_create")["inputSchema"]).decode() in block["text"]  # type: ignore[index]


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("issues_create", {"project": "P", "title": "T"}),
        ("issues_create", {"project": "P", "title": "T", "priority": 4}),
        ("echo", {"text": "hi"}),
        ("legacy_draft7", {"n": 3}),
        ("not_in_catalog", {"anything": object()}),
        ("not_in_catalog", None),
    ],
)
def test_check_call_lets_good_arguments_and_unknown_tools_through(name: str, arguments: Any) -> None:
    assert check_call(_catalog(), name, arguments) is None


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("issues_create", None),
        ("issues_create", {"project": "P", "title": ""}),
        ("issues_create", {"project": "P", "title": "T", "priority": 9}),
        ("issues_create", {"project": "P", "title": "T", "extra": 1}),
        ("issues_create", ["P", "T"]),
        ("legacy_draft7", {"n": "3"}),
        ("issues_search", {}),
    ],
)
def test_check_call_rejects_arguments_that_break_the_real_schema(name: str, arguments: Any) -> None:
    result = check_call(_catalog(), name, arguments)
    assert result is not None
    assert result["isError"] is True


@pytest.mark.requirement("LT-14")
def test_check_call_is_skipped_when_argument_checking_is_off() -> None:
    catalog = _catalog(Options(check_arguments=False))
    assert check_call(catalog, "issues_create", {}) is None


@pytest.mark.requirement("LT-07")
@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize(
    "arguments",
    [None, {}, {"names": []}, {"names": "echo"}, {"names": [5]}, {"names": ["a", "b", "c", "d"]}],
)
def test_check_call_checks_meta_tool_arguments_against_its_input_schema(arguments: Any) -> None:
    catalog = _catalog(Options(describe_batch_max=3))
    result = check_call(catalog, catalog.meta_tool["name"], arguments)
    assert result is not None
    assert result["isError"] is True
    assert orjson.dumps(catalog.meta_tool["inputSchema"]).decode() in result["content"][0]["text"]


@pytest.mark.requirement("LT-07")
@pytest.mark.requirement("LT-14")
def test_meta_tool_accepts_every_argument_object_the_spec_argument_schema_accepts() -> None:
    arguments = {"names": ["echo"], "reason": "need the schema"}
    Draft202012Validator(json.loads((SPEC / "schema" / "describe-tools-arguments.json").read_text())).validate(
        arguments
    )
    catalog = _catalog()
    assert check_call(catalog, catalog.meta_tool["name"], arguments) is None


@pytest.mark.requirement("LT-07")
@pytest.mark.requirement("LT-14")
def test_check_call_lets_good_meta_tool_arguments_through() -> None:
    catalog = _catalog(Options(describe_batch_max=3))
    assert check_call(catalog, catalog.meta_tool["name"], {"names": ["echo", "nope", "echo"]}) is None


@pytest.mark.requirement("LT-14")
def test_check_call_uses_the_server_tool_schema_for_a_server_owned_describe_tools() -> None:
    own = {
        "name": "describe_tools",
        "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
    }
    catalog = Catalog.build([*copy.deepcopy(SMALL_TOOLS), own])
    assert check_call(catalog, "describe_tools", {"topic": "x"}) is None
    rejected = check_call(catalog, "describe_tools", {"names": ["echo"]})
    assert rejected is not None and rejected["isError"] is True
    assert check_call(catalog, catalog.meta_tool["name"], {"names": ["echo"]}) is None
