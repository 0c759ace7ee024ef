"""The tools/call argument check (spec/lazy-tools.md §9, LT-14)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymcp.surfaces.arguments import check_arguments, compile_validator, without_nulls
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.modes import check_call

from ..conftest import shared_catalog

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_06 = "http://json-schema.org/draft-06/schema#"
DRAFT_04 = "http://json-schema.org/draft-04/schema#"
DRAFT_03 = "http://json-schema.org/draft-03/schema#"
DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


def _check(schema: object, arguments: object) -> dict[str, Any] | None:
    """The §9 check as a server runs it: the tool's schema through a catalog, then tools/call."""
    catalog = Catalog.build([{"name": "t", "inputSchema": schema}])
    return check_call(catalog, "t", arguments)


def _schemas_in(text: str) -> list[Any]:
    """Every JSON object embedded in ``text``."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    for start, char in enumerate(text):
        if char == "{":
            try:
                value, _ = decoder.raw_decode(text, start)
            except json.JSONDecodeError:
                continue
            found.append(value)
    return found


def _assert_rejected_with_schema(result: dict[str, Any] | None, schema: dict[str, Any]) -> str:
    assert result is not None
    assert result["isError"] is True
    [block] = result["content"]
    assert block["type"] == "text"
    assert schema in _schemas_in(block["text"])
    return block["text"]


ISSUE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project": {"type": "string"},
        "labels": {"type": "array", "items": {"type": "string"}},
        "priority": {"type": "integer", "minimum": 0, "maximum": 4},
    },
    "required": ["project"],
    "additionalProperties": False,
}


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"project": 5},
        {"project": "P", "priority": "high"},
        {"project": "P", "priority": 7},
        {"project": "P", "labels": ["ok", 3]},
        {"project": "P", "unexpected": True},
        ["P"],
        "P",
    ],
)
def test_failing_arguments_give_an_error_result_carrying_the_input_schema(arguments: Any) -> None:
    _assert_rejected_with_schema(_check(ISSUE_SCHEMA, arguments), ISSUE_SCHEMA)


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize(
    ("arguments", "location"),
    [
        ({"project": "P", "priority": "high"}, "priority"),
        ({"project": "P", "labels": ["ok", 3]}, "labels"),
    ],
)
def test_the_error_result_names_where_in_the_arguments_the_problem_is(arguments: Any, location: str) -> None:
    text = _assert_rejected_with_schema(_check(ISSUE_SCHEMA, arguments), ISSUE_SCHEMA)
    without_schema = text.replace(json.dumps(ISSUE_SCHEMA, separators=(",", ":")), "")
    assert location in without_schema


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize(
    "arguments",
    [{"project": "P"}, {"project": "P", "labels": [], "priority": 0}, {"project": "", "priority": 4}],
)
def test_passing_arguments_let_the_call_run(arguments: Any) -> None:
    assert _check(ISSUE_SCHEMA, arguments) is None


@pytest.mark.requirement("LT-14")
def test_absent_arguments_are_checked_as_an_empty_object() -> None:
    _assert_rejected_with_schema(_check(ISSUE_SCHEMA, None), ISSUE_SCHEMA)
    optional_only = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert _check(optional_only, None) is None
    assert _check({"type": "object", "minProperties": 1}, None) is not None


@pytest.mark.requirement("LT-14")
def test_format_is_an_annotation_and_is_not_asserted() -> None:
    schema = {
        "type": "object",
        "properties": {"email": {"type": "string", "format": "email"}, "when": {"type": "string", "format": "date"}},
    }
    assert _check(schema, {"email": "not an email", "when": "yesterday"}) is None


# Dialects: the root $schema picks the draft; absent means 2020-12.

PAIR_AS_TUPLE = {
    "type": "object",
    "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}},
}
DEPENDENCIES = {"type": "object", "dependencies": {"card": ["billing"]}}
DEPENDENT_REQUIRED = {"type": "object", "dependentRequired": {"card": ["billing"]}}
PREFIX_ITEMS = {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}]}}}
EXCLUSIVE_BOOL = {"type": "object", "properties": {"n": {"type": "number", "minimum": 5, "exclusiveMinimum": True}}}
REQUIRED_BOOL = {"type": "object", "properties": {"n": {"type": "integer", "required": True}}}


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize(
    ("dialect", "schema", "arguments", "rejected"),
    [
        # draft-07 `dependencies` is a keyword; in 2020-12 it is an unknown (ignored) one.
        pytest.param(DRAFT_07, DEPENDENCIES, {"card": 1}, True, id="draft-07-dependencies"),
        pytest.param(DRAFT_2020, DEPENDENCIES, {"card": 1}, False, id="2020-12-ignores-dependencies"),
        pytest.param(None, DEPENDENCIES, {"card": 1}, False, id="default-ignores-dependencies"),
        # 2019-09+ `dependentRequired`; draft-07 ignores it.
        pytest.param(DRAFT_2020, DEPENDENT_REQUIRED, {"card": 1}, True, id="2020-12-dependent-required"),
        pytest.param(DRAFT_2019, DEPENDENT_REQUIRED, {"card": 1}, True, id="2019-09-dependent-required"),
        pytest.param(None, DEPENDENT_REQUIRED, {"card": 1}, True, id="default-dependent-required"),
        pytest.param(DRAFT_07, DEPENDENT_REQUIRED, {"card": 1}, False, id="draft-07-ignores-dependent-required"),
        # draft-07 array-form `items` is tuple validation.
        pytest.param(DRAFT_07, PAIR_AS_TUPLE, {"pair": ["a", "b"]}, True, id="draft-07-tuple-items"),
        pytest.param(DRAFT_07, PAIR_AS_TUPLE, {"pair": ["a", 1]}, False, id="draft-07-tuple-items-pass"),
        # 2020-12 `prefixItems`; draft-07 ignores it.
        pytest.param(None, PREFIX_ITEMS, {"pair": [1]}, True, id="default-prefix-items"),
        pytest.param(DRAFT_07, PREFIX_ITEMS, {"pair": [1]}, False, id="draft-07-ignores-prefix-items"),
        # draft-04 boolean exclusiveMinimum, draft-03 boolean required.
        pytest.param(DRAFT_04, EXCLUSIVE_BOOL, {"n": 5}, True, id="draft-04-exclusive-minimum"),
        pytest.param(DRAFT_04, EXCLUSIVE_BOOL, {"n": 6}, False, id="draft-04-exclusive-minimum-pass"),
        pytest.param(DRAFT_06, {"type": "object", "properties": {"n": {"const": 1}}}, {"n": 2}, True, id="draft-06"),
        pytest.param(DRAFT_03, REQUIRED_BOOL, {}, True, id="draft-03-required"),
        pytest.param(DRAFT_03, REQUIRED_BOOL, {"n": 1}, False, id="draft-03-required-pass"),
        # $defs and definitions both resolve by JSON pointer.
        pytest.param(
            DRAFT_07,
            {
                "type": "object",
                "properties": {"n": {"$ref": "#/definitions/n"}},
                "definitions": {"n": {"type": "integer"}},
            },
            {"n": "x"},
            True,
            id="draft-07-definitions",
        ),
        pytest.param(
            None,
            {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "integer"}}},
            {"n": "x"},
            True,
            id="default-defs",
        ),
    ],
)
def test_the_dialect_follows_the_schema_uri(
    dialect: str | None, schema: dict[str, Any], arguments: dict[str, Any], rejected: bool
) -> None:
    full = schema if dialect is None else {"$schema": dialect, **schema}
    result = _check(full, arguments)
    if rejected:
        _assert_rejected_with_schema(result, full)
    else:
        assert result is None


@pytest.mark.requirement("LT-14")
def test_draft_07_array_items_are_an_invalid_2020_12_schema_that_passes_through() -> None:
    assert _check(PAIR_AS_TUPLE, {"pair": ["a", "b"]}) is None
    assert _check({"$schema": DRAFT_2020, **PAIR_AS_TUPLE}, {"pair": ["a", "b"]}) is None


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize(
    "dialect",
    [
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2020-12/schema#",
        "http://json-schema.org/draft-04/schema",
    ],
)
def test_a_known_dialect_uri_with_or_without_the_empty_fragment_is_checked(dialect: str) -> None:
    schema = {"$schema": dialect, "type": "object", "required": ["q"]}
    _assert_rejected_with_schema(_check(schema, {}), schema)


# Schemas that cannot be checked pass through.

UNCHECKABLE: list[Any] = [
    pytest.param(
        {"$schema": "https://example.com/my-dialect", "type": "object", "required": ["q"]}, id="unknown-dialect"
    ),
    pytest.param({"$schema": "https://json-schema.org/draft/2099-01/schema", "required": ["q"]}, id="future-dialect"),
    pytest.param({"type": "objekt", "required": ["q"]}, id="invalid-type"),
    pytest.param({"type": "object", "required": "q"}, id="invalid-required"),
    pytest.param({"type": "object", "properties": {"q": {"type": 5}}, "required": ["q"]}, id="invalid-nested"),
    pytest.param({"type": "object", "properties": {"q": {"type": "string", "pattern": "("}}}, id="invalid-regex"),
    pytest.param({"$schema": None, "type": "object", "required": ["q"]}, id="null-dialect"),
    pytest.param(None, id="null-schema"),
    pytest.param("object", id="string-schema"),
    pytest.param(["object"], id="array-schema"),
    pytest.param(True, id="true-schema"),
    pytest.param(False, id="false-schema"),
]


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize("schema", UNCHECKABLE)
@pytest.mark.parametrize("arguments", [None, {}, {"q": 1}, {"q": "x"}, ["q"]])
def test_a_schema_that_cannot_be_checked_lets_every_call_through(schema: Any, arguments: Any) -> None:
    assert _check(schema, arguments) is None


UNRESOLVABLE: list[Any] = [
    pytest.param(
        {"type": "object", "properties": {"q": {"$ref": "#/$defs/missing"}}, "required": ["q"]}, id="dangling-pointer"
    ),
    pytest.param(
        {"type": "object", "properties": {"q": {"$ref": "urn:example:missing"}}, "required": ["q"]}, id="unknown-urn"
    ),
    pytest.param(
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"q": {"$ref": "#/definitions/missing"}},
            "required": ["q"],
        },
        id="draft-07-dangling-pointer",
    ),
]


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize("schema", UNRESOLVABLE)
@pytest.mark.parametrize("arguments", [{"q": 1}, {"q": "x"}, {"q": None}])
def test_a_schema_with_an_unresolvable_ref_lets_calls_through_that_reach_the_ref(schema: Any, arguments: Any) -> None:
    assert _check(schema, arguments) is None


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize("schema", UNRESOLVABLE)
@pytest.mark.parametrize("arguments", [None, {}, ["q"]])
def test_a_schema_with_an_unresolvable_ref_lets_every_call_through(schema: Any, arguments: Any) -> None:
    assert _check(schema, arguments) is None


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize("schema", [None, "object", ["object"], 5, True])
def test_a_non_object_schema_compiles_to_no_validator(schema: Any) -> None:
    assert compile_validator(schema) is None
    assert check_arguments("t", None, {"anything": 1}) is None


@pytest.mark.requirement("LT-14")
@pytest.mark.parametrize("dialect", [7, True, [DRAFT_07], {"uri": DRAFT_07}])
def test_a_non_string_schema_uri_is_an_invalid_schema_that_passes_through(dialect: Any) -> None:
    assert _check({"$schema": dialect, "type": "object", "required": ["q"]}, {}) is None


@pytest.mark.requirement("LT-14")
def test_the_check_uses_the_tool_s_full_schema_not_the_stub() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    catalog = Catalog.build([{"name": "weather", "description": "Weather.", "inputSchema": schema}])
    stub = catalog.page("stock", "summary", None)["tools"][1]
    assert stub["inputSchema"] == {"type": "object", "properties": {}}
    _assert_rejected_with_schema(check_call(catalog, "weather", {}), schema)
    assert check_call(catalog, "weather", {"city": "Oslo"}) is None


@pytest.mark.requirement("LT-14")
def test_the_error_result_lists_every_violation_with_where_and_what_is_expected() -> None:
    text = _assert_rejected_with_schema(_check(ISSUE_SCHEMA, {"project": 42, "bogus": 1, "priority": 9}), ISSUE_SCHEMA)
    lines = text.splitlines()
    assert lines[0] == "Invalid arguments for tool 't' (3 problems):"
    violations = [line for line in lines if line.startswith("- at ")]
    assert len(violations) == 3
    assert violations[0].startswith("- at (root): ") and "'bogus' was unexpected" in violations[0]
    assert sorted(violations[1:]) == [
        "- at /priority: 9 is greater than the maximum of 4 (expected maximum: 4)",
        "- at /project: 42 is not of type 'string' (expected type: \"string\")",
    ]


@pytest.mark.requirement("LT-14")
def test_the_violations_listed_are_capped_and_the_rest_counted() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "string"}}
    arguments = {f"k{i:02d}": i for i in range(25)}
    text = _assert_rejected_with_schema(_check(schema, arguments), schema)
    assert text.splitlines()[0] == "Invalid arguments for tool 't' (25 problems):"
    assert sum(line.startswith("- at /k") for line in text.splitlines()) == 10
    assert "- ... and 15 more" in text.splitlines()


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
    max_leaves=4,
)
_KINDS = st.sampled_from(["string", "integer", "number", "boolean", "null"])


@st.composite
def _plain_schemas(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from("abcd"), unique=True, max_size=4))
    properties = {
        name: {"type": draw(_KINDS | st.lists(_KINDS, min_size=1, max_size=2, unique=True)), "description": "d"}
        for name in names
    }
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    schema["required"] = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    extra = draw(st.sampled_from([None, True, False]))
    if extra is not None:
        schema["additionalProperties"] = extra
    return schema


@settings(max_examples=400, deadline=None)
@given(schema=_plain_schemas(), arguments=st.dictionaries(st.sampled_from("abcde"), _VALUES, max_size=5))
def test_a_plain_schema_vouches_only_for_arguments_its_validator_accepts(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    check = compile_validator(schema)
    assert check is not None and check.plain is not None
    if check.plain.fits(arguments):
        assert check.validator.is_valid(arguments)
    else:  # what it does not vouch for is still judged: the result is the validator's
        assert (check_arguments("t", check, arguments) is None) == check.validator.is_valid(arguments)


def test_the_real_catalogs_plain_schemas_agree_with_their_validators() -> None:
    """The 954 captured tools: a plain schema's verdict on arguments made from it is the validator's."""
    tools = shared_catalog("combined")
    plain = 0
    for tool in tools:
        check = compile_validator(tool.get("inputSchema"))
        if check is None or check.plain is None:
            continue
        plain += 1
        sample = dict.fromkeys(check.plain.types, "x")
        for arguments in ({}, sample, {**sample, "zz": 1}):
            if check.plain.fits(arguments):
                assert check.validator.is_valid(arguments), tool["name"]
    assert plain > len(tools) // 4  # a third of real schemas are plain: their calls skip the validator


def test_a_null_is_kept_where_the_property_takes_it_through_a_ref_in_any_dialect() -> None:
    refs = {
        "https://json-schema.org/draft/2020-12/schema": "$defs",
        "http://json-schema.org/draft-07/schema#": "definitions",
    }
    for dialect, where in refs.items():
        schema = {
            "$schema": dialect,
            "type": "object",
            where: {"maybe": {"type": ["string", "null"]}, "text": {"type": "string"}},
            "properties": {"a": {"$ref": f"#/{where}/maybe"}, "b": {"$ref": f"#/{where}/text"}, "c": {}},
        }
        check = compile_validator(schema)
        assert without_nulls(check, {"a": None, "b": None, "c": None}) == {"a": None, "c": None}
        assert without_nulls(check, {"a": None, "c": None}) is None  # nothing to take out: the call goes as it came
