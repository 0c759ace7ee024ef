"""The scripted model itself: it must not guess what it has not seen (the host matrix relies on it)."""

from __future__ import annotations

import json

import pytest

from .agent import Call, Unseen, View, next_call

DESCRIBE = {"type": "object", "properties": {"names": {"type": "array"}}, "required": ["names"]}
SEARCH = {"type": "object", "properties": {"query": {"type": "string", "description": 'use "select:<name>"'}}}
SCHEMA = {"type": "object", "properties": {"issue_id": {"type": "string"}}, "required": ["issue_id"]}


def test_a_stub_without_parameters_sends_the_model_to_describe_tools_first() -> None:
    view = View({"mcp__lazy__issues_get": {"type": "object"}, "mcp__lazy__describe_tools": DESCRIBE})
    assert next_call(view) == Call("mcp__lazy__describe_tools", {"names": ["issues_get"]})


def test_a_parameter_the_host_adds_to_every_tool_is_not_the_tools_schema() -> None:
    stub = {"type": "object", "properties": {"wait_for_previous": {"type": "boolean"}}}
    view = View({"mcp_lazy_issues_get": stub, "mcp_lazy_describe_tools": DESCRIBE})
    assert next_call(view) == Call("mcp_lazy_describe_tools", {"names": ["issues_get"]})


def test_the_schema_from_describe_tools_gives_the_call_its_arguments() -> None:
    described = json.dumps({"tools": [{"name": "issues_get", "inputSchema": SCHEMA}]})
    view = View({"mcp__lazy__issues_get": {"type": "object"}}, results=[described])
    assert next_call(view) == Call("mcp__lazy__issues_get", {"issue_id": "ISS-42"})


def test_a_required_argument_the_model_has_no_value_for_is_not_guessed() -> None:
    schema = {"type": "object", "properties": {"issue_key": {"type": "string"}}, "required": ["issue_key"]}
    with pytest.raises(Unseen, match="issue_key"):
        next_call(View({"mcp__lazy__issues_get": schema}))


def test_deferred_tools_are_loaded_by_name_through_the_hosts_search() -> None:
    view = View(
        {"ToolSearch": SEARCH}, deferred={"mcp__lazy__issues_get", "mcp__lazy__describe_tools"}, search="ToolSearch"
    )
    assert next_call(view) == Call("ToolSearch", {"query": "select:mcp__lazy__issues_get"}, host_search=True)


def test_the_model_stops_once_the_tool_answered_with_its_arguments() -> None:
    view = View(
        {"mcp__lazy__issues_get": SCHEMA}, results=['<untrusted_context>\n{"issue_id":"ISS-42"}\n</untrusted_context>']
    )
    assert next_call(view) is None
