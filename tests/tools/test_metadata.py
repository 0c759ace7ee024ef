"""Per-tool metadata (spec §17.6): its sources in order, the summary limit, and where it shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.server.mcpserver import MCPServer

from lazymcp import EXT_ID, lazify
from lazymcp.protocol.errors import CatalogError
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import Answer
from lazymcp.surfaces.options import Options
from lazymcp.tools.metadata import Metadata, derive_category, load_metadata, parse_metadata, tool_meta

from ..conftest import ERAS
from ..handlers import call_tool, describe, list_tools

TOOLS: list[dict[str, Any]] = [
    {
        "name": "issues_create",
        "description": "Create an issue in a project. Needs write access.",
        "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        "_meta": {EXT_ID: {"category": "tracker", "summary": "Open a new issue."}},
    },
    {"name": "issues_get", "description": "Get one issue by its key.", "inputSchema": {"type": "object"}},
    {"name": "ping", "description": "Check that the server answers.", "inputSchema": {"type": "object"}},
]


def file_metadata(data: dict[str, Any]) -> Metadata:
    return parse_metadata(data, source="metadata file")


def describe_payload(catalog: Catalog, *names: str) -> dict[str, Any]:
    outcome = call_tool(catalog, {"name": "describe_tools", "arguments": {"names": list(names)}}, session=None)
    assert isinstance(outcome, Answer)
    return json.loads(outcome.result["content"][0]["text"])


@pytest.mark.requirement("LT-28")
def test_each_field_comes_from_the_registration_argument_then_meta_then_the_file_then_derivation() -> None:
    author = parse_metadata({"issues_create": {"summary": "Create an issue (author)."}}, source="lazify(metadata=...)")
    file = file_metadata(
        {
            "tools": {
                "issues_create": {"category": "from-file", "summary": "From the file.", "related": ["issues_get"]},
                "issues_get": {"summary": "Fetch an issue.", "examples": [{"key": "CORE-1"}]},
            }
        }
    )
    catalog = Catalog.build(TOOLS, Options(metadata=file), declared=author, origin="tracker-server")
    created, fetched, ping = (catalog.info(name) for name in ("issues_create", "issues_get", "ping"))
    assert (created.summary, created.category) == ("Create an issue (author).", "tracker")  # author, then _meta
    assert created.declared.related == ("issues_get",)  # only the file says it
    assert (fetched.summary, fetched.category) == ("Fetch an issue.", "issues")  # file, then the name's prefix
    assert (ping.summary, ping.category) == ("Check that the server answers.", "tracker-server")  # derived


@pytest.mark.requirement("LT-28")
@pytest.mark.parametrize(
    ("name", "origin", "category"),
    [
        ("github__create_issue", None, "github"),
        ("issues_create", None, "issues"),
        ("get-user", None, "get"),
        ("ping", "upstream", "upstream"),
        ("ping", None, "other"),
    ],
)
def test_a_category_is_derived_from_the_name_prefix_or_the_servers_name(
    name: str, origin: str | None, category: str
) -> None:
    assert derive_category(name, origin) == category


@pytest.mark.requirement("LT-28")
def test_a_declared_summary_replaces_the_first_sentence_in_stub_listings_but_never_the_tool() -> None:
    file = file_metadata({"tools": {"issues_get": {"summary": "Fetch  an\nissue."}}})
    catalog = Catalog.build(TOOLS, Options(metadata=file))
    stubs = list_tools(catalog, {}, declared=True, session=None)["tools"]
    assert stubs[1] == {"name": "issues_get", "description": "Fetch an issue."}
    assert describe(catalog, {"name": "issues_get"})["tool"] == TOOLS[1]
    assert list_tools(catalog, {"lazy": False}, declared=True, session=None)["tools"] == TOOLS


@pytest.mark.requirement("LT-28")
def test_describe_tools_adds_the_declared_metadata_beside_the_definitions() -> None:
    file = file_metadata(
        {"tools": {"issues_get": {"examples": [{"key": "CORE-1"}], "related": ["issues_create"], "deprecated": True}}}
    )
    payload = describe_payload(
        Catalog.build(TOOLS, Options(mode="proxy", metadata=file)), "issues_get", "issues_create"
    )
    assert payload["tools"] == [TOOLS[1], TOOLS[0]]
    assert payload["metadata"] == {
        "issues_get": {"examples": [{"key": "CORE-1"}], "related": ["issues_create"], "deprecated": True},
        "issues_create": {"category": "tracker"},
    }
    assert "metadata" not in describe_payload(Catalog.build(TOOLS), "ping")


@pytest.mark.requirement("LT-28")
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: Options(metadata=file_metadata({"tools": {"ping": {"summary": "x" * 81}}})), id="file"),
        pytest.param(lambda: tool_meta(summary="y" * 81), id="tool_meta"),
        pytest.param(lambda: lazify(MCPServer("s"), metadata={"ping": {"summary": "z" * 81}}), id="lazify"),
        pytest.param(
            lambda: Options(summary_chars=20, metadata=file_metadata({"tools": {"p": {"summary": "w" * 21}}})),
            id="limit",
        ),
    ],
)
def test_a_declared_summary_over_the_limit_is_a_start_up_error(make: Any) -> None:
    with pytest.raises(CatalogError):
        make()


@pytest.mark.requirement("LT-28")
def test_an_mcpserver_tool_registered_with_an_over_long_summary_is_refused_at_registration() -> None:
    server = MCPServer("s", log_level="WARNING")

    @server.tool(meta=tool_meta(category="misc", summary="Fine."))
    def fine() -> str:
        return "ok"

    lazify(server)
    with pytest.raises(CatalogError):
        server.add_tool(lambda: "no", name="wordy", meta={EXT_ID: {"summary": "long " * 30}})
    assert [tool.name for tool in server._tool_manager.list_tools()] == ["fine"]  # pyright: ignore[reportPrivateUsage]


@pytest.mark.requirement("LT-28")
def test_a_relayed_tools_long_meta_summary_is_cut_not_refused() -> None:
    relayed = {"name": "t", "inputSchema": {"type": "object"}, "_meta": {EXT_ID: {"summary": "word " * 40}}}
    catalog = Catalog.build([relayed])
    summary = catalog.info("t").summary
    assert len(summary) <= 80 and summary.endswith("…")


@pytest.mark.requirement("LT-28")
@pytest.mark.parametrize(
    "data",
    [
        {"tools": {"ping": {"sumary": "typo"}}},
        {"tools": {"ping": {"category": ""}}},
        {"tools": {"ping": {"examples": "not a list"}}},
        {"tools": {"ping": {"related": [3]}}},
        {"tools": {"ping": {"deprecated": 7}}},
        {"tools": {"ping": "not an object"}},
        {"tools": {}, "extra": 1},
        {"tools": {}, "categories": {"net": 5}},
        ["not", "an", "object"],
    ],
)
def test_malformed_metadata_is_a_clear_error(data: Any) -> None:
    with pytest.raises(CatalogError):
        parse_metadata(data)


def test_a_metadata_file_that_cannot_be_read_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    for path in (bad, tmp_path / "missing.json"):
        with pytest.raises(CatalogError):
            load_metadata(path)


@pytest.mark.requirement("LT-18")
@pytest.mark.requirement("LT-31")
@pytest.mark.parametrize(
    "data",
    [
        {"tools": {"issues_gett": {"summary": "Typo."}}},
        {"tools": {"ping": {"related": ["issue_get"]}}},
        {"tools": {}, "categories": {"trackr": "Issue tracker."}},
    ],
)
def test_metadata_naming_a_tool_or_category_the_server_lacks_fails_at_start_up(data: dict[str, Any]) -> None:
    from lazymcp.surfaces.modes import check_configuration

    with pytest.raises(CatalogError) as caught:
        check_configuration(Catalog.build(TOOLS, Options(metadata=file_metadata(data))))
    assert caught.value.data is not None
    [unknown] = caught.value.data["unknown"]
    assert unknown["suggestions"][0] in ("issues_get", "tracker")


@pytest.mark.requirement("LT-28")
@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_an_authors_metadata_shows_in_search_and_describe_through_a_real_client(era: str) -> None:
    server = MCPServer("notes", version="1.0", log_level="WARNING")

    @server.tool(meta=tool_meta(category="writing", examples=[{"title": "groceries"}]))
    def add_note(title: str) -> str:
        """Add a note with a title. Notes are kept for a week."""
        return title

    lazify(server, mode="proxy", metadata={"add_note": {"summary": "Write a note down.", "related": ["add_note"]}})
    with anyio.fail_after(10):
        async with Client(InMemoryTransport(server), mode=era) as client:
            found = await client.call_tool("search_tools", {"query": "note"})
            described = await client.call_tool("describe_tools", {"names": ["add_note"]})
    hit = json.loads(found.content[0].text)["tools"][0]  # type: ignore[union-attr]
    assert hit == {"name": "add_note", "summary": "Write a note down.", "category": "writing"}
    metadata = json.loads(described.content[0].text)["metadata"]  # type: ignore[union-attr]
    assert metadata == {
        "add_note": {"category": "writing", "examples": [{"title": "groceries"}], "related": ["add_note"]}
    }
