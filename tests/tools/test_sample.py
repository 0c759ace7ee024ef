"""Tests for the sample and synthetic tool catalogs in lazymcp.tools.sample."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import mcp_types
import pytest
from jsonschema import Draft202012Validator

from lazymcp.tools.sample import CATEGORIES, sample_tools, synthetic_tools

from ..conftest import EXT_ID

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

SAMPLE: list[dict[str, Any]] = sample_tools()


def _properties(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every property in a schema, including those of nested objects and array items."""
    found: list[tuple[str, dict[str, Any]]] = []
    for name, prop in schema.get("properties", {}).items():
        found.append((name, prop))
        found.extend(_properties(prop))
        if isinstance(prop.get("items"), dict):
            found.extend(_properties(prop["items"]))
    return found


def _category(tool: dict[str, Any]) -> str:
    return tool["_meta"][EXT_ID]["category"]


def test_sample_has_at_least_120_tools_in_at_least_12_categories() -> None:
    assert len(SAMPLE) >= 120
    assert len(CATEGORIES) >= 12
    assert len(set(CATEGORIES)) == len(CATEGORIES)
    assert {_category(tool) for tool in SAMPLE} == set(CATEGORIES)


def test_sample_names_are_unique_snake_case_and_at_most_64_characters() -> None:
    names = [tool["name"] for tool in SAMPLE]
    assert len(set(names)) == len(names)
    for name in names:
        assert NAME_RE.match(name), name
        assert len(name) <= 64, name


def test_every_input_schema_is_a_valid_object_schema() -> None:
    for tool in SAMPLE:
        schema = tool["inputSchema"]
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", tool["name"]
        assert schema["additionalProperties"] is False, tool["name"]
        assert set(schema["required"]) <= set(schema["properties"]), tool["name"]


def test_every_property_has_a_description() -> None:
    for tool in SAMPLE:
        for name, prop in _properties(tool["inputSchema"]):
            assert isinstance(prop.get("description"), str), f"{tool['name']}.{name}"
            assert prop["description"].strip(), f"{tool['name']}.{name}"


def test_descriptions_are_non_empty_with_a_first_sentence_ending_in_a_period() -> None:
    for tool in SAMPLE:
        description = tool["description"]
        assert description.strip(), tool["name"]
        sentences = SENTENCE_END.split(description)
        assert sentences[0].endswith("."), tool["name"]
        assert 2 <= len(sentences) <= 4, tool["name"]
    assert any(len(SENTENCE_END.split(tool["description"])[0]) > 80 for tool in SAMPLE)


def test_meta_category_matches_the_name_prefix_and_is_listed() -> None:
    for tool in SAMPLE:
        category = _category(tool)
        assert category in CATEGORIES, tool["name"]
        assert tool["name"].startswith(f"{category}_"), tool["name"]


def test_annotations_are_consistent_and_some_tools_have_titles() -> None:
    for tool in SAMPLE:
        hints = tool["annotations"]
        assert {"readOnlyHint", "destructiveHint", "idempotentHint"} <= set(hints), tool["name"]
        if hints["readOnlyHint"]:
            assert not hints["destructiveHint"], tool["name"]
    titled = sum("title" in tool for tool in SAMPLE)
    assert 0.10 <= titled / len(SAMPLE) <= 0.25


def test_sample_is_deterministic_and_returns_fresh_objects() -> None:
    first, second = sample_tools(), sample_tools()
    assert first == second
    first[0]["inputSchema"]["properties"].clear()
    assert sample_tools() == second


def test_sample_round_trips_through_json_unchanged() -> None:
    assert json.loads(json.dumps(SAMPLE)) == SAMPLE


def test_mcp_sdk_accepts_every_sample_tool() -> None:
    for tool in SAMPLE:
        parsed = mcp_types.Tool.model_validate(tool)
        assert parsed.name == tool["name"]


def test_mcp_sdk_accepts_synthetic_tools() -> None:
    for tool in synthetic_tools(200):
        mcp_types.Tool.model_validate(tool)


@pytest.mark.parametrize("n", [0, 1, 10, 1000])
def test_synthetic_tools_returns_exactly_n_tools(n: int) -> None:
    assert len(synthetic_tools(n)) == n


def test_synthetic_tools_rejects_negative_n() -> None:
    with pytest.raises(ValueError):
        synthetic_tools(-1)


def test_synthetic_names_stay_unique_at_20000_tools() -> None:
    tools = synthetic_tools(20_000, seed=7)
    names = [tool["name"] for tool in tools]
    assert len(set(names)) == len(names)
    assert all(NAME_RE.match(name) and len(name) <= 64 for name in names)
    assert all(name.startswith(f"{_category(tool)}_") for name, tool in zip(names, tools, strict=True))


def test_synthetic_tools_are_deterministic_per_seed() -> None:
    assert synthetic_tools(300, seed=5) == synthetic_tools(300, seed=5)
    assert synthetic_tools(300, seed=5) != synthetic_tools(300, seed=6)
    assert synthetic_tools(1000, seed=5)[:300] == synthetic_tools(300, seed=5)


def test_synthetic_tools_do_not_touch_the_global_random_state() -> None:
    state = random.getstate()
    synthetic_tools(50, seed=3)
    assert random.getstate() == state


def test_synthetic_tools_have_realistic_shapes() -> None:
    tools = synthetic_tools(2000, seed=1)
    for tool in tools:
        schema = tool["inputSchema"]
        assert 1 <= len(schema["properties"]) <= 10, tool["name"]
        assert 1 <= len(SENTENCE_END.split(tool["description"])) <= 4, tool["name"]
        assert all(prop.get("description") for _, prop in _properties(schema)), tool["name"]
    for tool in tools[:200]:
        Draft202012Validator.check_schema(tool["inputSchema"])
