"""Meta-tools: ordinary MCP tools through which a stock client's model reaches every schema (LT-07).

A host that knows nothing of the extension (Claude Desktop, Cursor) shows its model whatever
``tools/list`` returns and lets it call any listed tool. ``describe_tools`` is such a tool: it takes
names and answers with the full definitions as an ordinary tool result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from lazymcp.errors import suggest
from lazymcp.messages import Tool

MAX_SUGGESTED = 10
"""Unknown names in one ``describe_tools`` call that get suggestions."""


def describe_tools_definition(name: str, batch_max: int) -> Tool:
    """The ``describe_tools`` meta-tool as it appears in a stock client's listing."""
    return {
        "name": name,
        "description": (
            "Get the full definition (input schema and description) of tools listed here only by name "
            "and summary. Call it with the names you need before calling them."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "names": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": batch_max,
                    "description": "Names of the tools to describe.",
                }
            },
            "required": ["names"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    }


def text_result(payload: object, *, is_error: bool = False) -> dict[str, Any]:
    """A ``CallToolResult`` wire dict carrying ``payload`` as JSON text (or the text itself)."""
    text = payload if isinstance(payload, str) else orjson.dumps(payload).decode()
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def describe_tools_result(get: Callable[[str], Tool | None], known: Iterable[str], names: list[str]) -> dict[str, Any]:
    """Answer a ``describe_tools`` call: the full tools asked for, and suggestions for unknown names."""
    found: list[Tool] = []
    unknown: list[str] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        tool = get(name)
        if tool is None:
            unknown.append(name)
        else:
            found.append(tool)
    # Suggestions for the first few unknown names only: each is a search of the whole catalog.
    suggestions = {name: suggest(name, known) for name in unknown[:MAX_SUGGESTED]}
    payload: dict[str, Any] = {"tools": found, "unknown": unknown, "suggestions": suggestions}
    return text_result(payload, is_error=not found)
