"""Code mode's listing and its Python view of tools: two meta-tools whose size does not grow with the
tools, each tool's Python name, and a tool's schema as a Python signature."""

from __future__ import annotations

import json

from lazymcp.surfaces import codemode, modes
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.options import Options
from lazymcp.surfaces.signatures import identifier, signature
from lazymcp.tools.tokens import count_tokens

from ..conftest import shared_catalog


def test_the_code_listing_of_954_tools_is_two_tools_under_600_tokens() -> None:
    catalog = Catalog.build(shared_catalog("combined"), Options(mode="code"))
    listing = modes.mode_listing(catalog, "code", "description", None, None)
    assert [tool["name"] for tool in listing["tools"]] == ["search_tools", "run_code"]
    assert count_tokens(json.dumps(listing["tools"], separators=(",", ":"))) < 600
    assert "github (26)" in listing["tools"][1]["description"]
    assert codemode.python_name(catalog, "azure-devops__core_list_projects") == "azure_devops.core_list_projects"
    assert codemode.tool_of(catalog, "azure_devops.core_list_projects") == "azure-devops__core_list_projects"


def test_a_schema_becomes_a_signature_with_types_defaults_and_fields() -> None:
    tool = {
        "name": "t",
        "description": "Make a thing.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Its name."},
                "tags": {"type": "array", "items": {"type": "string"}},
                "kind": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "size": {"type": "integer"},
                "owner": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            },
            "required": ["name"],
        },
    }
    text = signature("things.make", tool)
    assert "async def make(*, name: str, tags: list[str] | None = None, kind: Literal['a', 'b'] = 'a'," in text
    assert "size: int | None = None, owner: dict | None = None) -> Any:" in text
    assert "name: Its name." in text and "id: int" in text and "await things.make(...)" in text
    assert [identifier(n) for n in ("a-b", "1x", "class")] == ["a_b", "_1x", "class_"]


def test_describe_tools_in_code_mode_answers_signatures_and_search_gives_python_names() -> None:
    catalog = Catalog.build(shared_catalog("combined"), Options(mode="code"))
    answer = modes.call(catalog, "describe_tools", {"names": ["github.create_issue", "nope"]}, None)
    assert isinstance(answer, modes.Answer)
    text = answer.result["content"][0]["text"]
    assert "async def create_issue(*, owner: str, repo: str, title: str" in text and "No tool 'nope'" in text
    found = modes.call(catalog, "search_tools", {"query": "create a github issue"}, None)
    assert isinstance(found, modes.Answer)
    matches = json.loads(found.result["content"][0]["text"])["tools"]
    assert all(match["python"] == codemode.python_name(catalog, match["name"]) for match in matches)
    code = modes.call(catalog, "run_code", {"code": "1 + 1"}, None)
    assert isinstance(code, codemode.Code) and code.source == "1 + 1" and code.result.get("isError")
