"""Meta-tools: ordinary MCP tools through which a stock client's model reaches every tool (LT-07, §17).

A host that knows nothing of the extension (Claude Desktop, Cursor) shows its model whatever
``tools/list`` returns and lets it call any listed tool. ``describe_tools`` is such a tool: it takes
names and answers with the full definitions as an ordinary tool result. The modes of §17 add four
more, named as the seed patterns name them: ``search_tools``, ``invoke_tool``, ``manage_tools`` and
``list_tool_categories``.

``REGISTRY`` is the one table of them: each entry is a meta-tool's name, its definition, the modes
whose listing carries it and those in which a stock client may call it. What a call does is its
handler (``lazymcp.surfaces.metacalls``, registered with ``@handles``): adding a meta-tool is an entry here and
its handler there. Here too are the JSON payloads they answer with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson

from lazymcp.protocol.messages import MODES, Mode, Tool
from lazymcp.protocol.names import NameIndex, suggest

LIST_TOOL_CATEGORIES: Final = "list_tool_categories"
SEARCH_TOOLS: Final = "search_tools"
DESCRIBE_TOOLS: Final = "describe_tools"
INVOKE_TOOL: Final = "invoke_tool"
MANAGE_TOOLS: Final = "manage_tools"
RUN_CODE: Final = "run_code"

MAX_SUGGESTED = 10
"""Unknown names in one ``describe_tools`` call that get suggestions."""


READ_ONLY: Final = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}


def optional(kind: str, description: str, **constraints: Any) -> dict[str, Any]:
    """An optional parameter that takes ``null`` as absent, said in a form every framework tried reads:
    its one ``type`` and ``"nullable": true``. (A type list with ``"null"`` breaks AutoGen's converter, and
    ``anyOf`` hides the type from smolagents, which reads ``nullable``; frameworks that send ``null`` for
    every optional parameter they were not given have it taken as absent before the check.)"""
    return {"type": kind, "nullable": True, **constraints, "description": description}


def describe_tools_definition(name: str, batch_max: int, *, unlisted: bool = False) -> Tool:
    """The ``describe_tools`` meta-tool as it appears in a stock client's listing.

    ``unlisted``: the variant for the ``proxy`` and ``core`` surfaces, where the tools are not listed.
    """
    # The description says the words of the name: a host's search splits words at spaces, not at
    # underscores (Codex's BM25 reads ``describe_tools`` as one word), so "describe tools" finds it.
    description = (
        "Describe tools found with search_tools: their full definitions (input schema, description, examples, "
        "related tools). Call it before invoke_tool, so the arguments fit."
        if unlisted
        else "Describe tools listed here only by name and summary: their full definitions (input schema and "
        "description). Call it with the names you need before calling them."
    )
    return {
        "name": name,
        "description": description,
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
        "annotations": READ_ONLY,
    }


def text_result(payload: object, *, is_error: bool = False) -> dict[str, Any]:
    """A ``CallToolResult`` wire dict carrying ``payload`` as JSON text (or the text itself)."""
    text = payload if isinstance(payload, str) else orjson.dumps(payload).decode()
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def describe_tools_result(
    get: Callable[[str], Tool | None],
    known: NameIndex | Iterable[str],
    names: list[str],
    extras: Callable[[str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Answer a ``describe_tools`` call: the full tools asked for, and suggestions for unknown names.

    ``extras`` gives a tool's declared metadata (category, examples, related, deprecated); the payload
    carries it under ``metadata``, by tool name, when any described tool has some (§17.6).
    """
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
    if extras is not None:
        metadata = {tool["name"]: extra for tool in found if (extra := extras(tool["name"]))}
        if metadata:
            payload["metadata"] = metadata
    return text_result(payload, is_error=not found)


def search_tools_definition(name: str, top_k: int, *, enables: bool = False) -> Tool:
    """The ``search_tools`` meta-tool; ``enables``: the dynamic-mode variant, which enables its matches."""
    effect = (
        " The matches are enabled for this session: the tool list changes to include them, with their schemas."
        if enables
        else " Get a match's input schema with describe_tools."
    )
    return {
        "name": name,
        "description": (
            "Find tools by what they do: give a few words, in any language. Returns the best matches first, "
            f"each with its name, a one-line summary and its category, and how many tools there are.{effect}"
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What the tool should do."},
                "limit": optional(
                    "integer", minimum=1, maximum=top_k, description=f"At most this many matches (default {top_k})."
                ),
                "category": optional("string", description="Only tools of this category (list_tool_categories)."),
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": not enables, "idempotentHint": True, "openWorldHint": False},
    }


def invoke_tool_definition(name: str) -> Tool:
    """The ``invoke_tool`` meta-tool: run any tool by name, its arguments checked against its schema first."""
    return {
        "name": name,
        "description": (
            "Run a tool by name with its arguments. The arguments are checked against the tool's input schema "
            "first (get it with describe_tools); a call that does not fit returns the schema and runs nothing."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "The tool to run."},
                "arguments": optional("object", description="Its arguments, as its input schema describes."),
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    }


MANAGE_ACTIONS: Final = ("list", "enable", "disable")
MANAGE_PAGE_SIZE: Final = 50
MANAGE_PAGE_MAX: Final = 200


def manage_tools_definition(name: str, batch_max: int) -> Tool:
    """The dynamic mode's ``manage_tools`` meta-tool: list every tool, enable or disable tools by hand."""
    return {
        "name": name,
        "description": (
            "Manage the tools of this session. action 'list': every tool's name, summary and category, a page "
            "at a time, with the total and the categories. 'enable' / 'disable': add tools to the tool list, or "
            "take them off, by tool or category names; the tool list changes at once."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(MANAGE_ACTIONS)},
                "names": optional(
                    "array",
                    items={"type": "string"},
                    minItems=1,
                    maxItems=batch_max,
                    description="enable/disable: tool or category names.",
                ),
                "category": optional("string", description="list: only this category."),
                "include_disabled": optional(
                    "boolean", description="list: also the tools disabled in this session (default false)."
                ),
                "offset": optional("integer", minimum=0, description="list: skip this many (default 0)."),
                "limit": optional(
                    "integer",
                    minimum=1,
                    maximum=MANAGE_PAGE_MAX,
                    description=f"list: at most this many (default {MANAGE_PAGE_SIZE}).",
                ),
            },
            "required": ["action"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": False, "idempotentHint": True, "openWorldHint": False},
    }


def list_tool_categories_definition(name: str) -> Tool:
    """The ``list_tool_categories`` meta-tool: the categories, with how many tools each holds."""
    return {
        "name": name,
        "description": (
            "List the categories of tools, with how many tools each holds. Find tools in one with "
            "search_tools (its category argument)."
        ),
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "annotations": READ_ONLY,
    }


def run_code_generic(name: str) -> Tool:
    """``run_code`` without a catalog at hand; a ``code`` listing carries its catalog's own
    (``lazymcp.surfaces.codemode.run_code_definition``, which names the servers)."""
    return {
        "name": name,
        "description": "Run Python that calls tools as async functions; find them with search_tools.",
        "inputSchema": {
            "type": "object",
            "properties": {"code": {"type": "string", "minLength": 1, "description": "Python source."}},
            "required": ["code"],
            "additionalProperties": False,
        },
    }


# --- the registry ----------------------------------------------------------------------------------


class Sizes(Protocol):
    """What a meta-tool's definition reads of the server's options (``lazymcp.surfaces.options.Options``)."""

    @property
    def describe_batch_max(self) -> int: ...

    @property
    def search_top_k(self) -> int: ...


EVERY_MODE: Final[frozenset[Mode]] = frozenset(MODES)
SURFACE: Final[frozenset[Mode]] = frozenset({"proxy", "core"})
"""The modes that list the stable surface (§17.4) instead of the tools."""
DYNAMIC: Final[frozenset[Mode]] = frozenset({"dynamic"})
CODE: Final[frozenset[Mode]] = frozenset({"code"})
"""The mode that lists ``search_tools`` and ``run_code`` (``lazymcp.surfaces.codemode``)."""
STUBS: Final[frozenset[Mode]] = frozenset({"describe"})
"""The mode that lists stock stubs, behind ``describe_tools``."""


@dataclass(frozen=True, slots=True)
class MetaTool:
    """One meta-tool: its usual name, its definition in a mode, and where it is listed and may be called.

    A mode's listing carries the meta-tools ``listed_in`` it, in ``REGISTRY``'s order (``describe``'s
    after ``describe_tools``, its first). A stock client may call those ``callable_in`` its mode, and in
    ``describe`` and ``eager`` mode those the ``meta_tools`` option lists: ``listable`` ones, which keep
    no session state.
    """

    name: str
    define: Callable[[str, Sizes, Mode], Tool]
    """Its definition under a name (another when a catalog tool has its own), in a mode."""
    listed_in: frozenset[Mode]
    callable_in: frozenset[Mode]
    listable: bool = False


REGISTRY: Final[tuple[MetaTool, ...]] = (
    MetaTool(
        LIST_TOOL_CATEGORIES,
        lambda name, sizes, mode: list_tool_categories_definition(name),
        SURFACE,
        SURFACE,
        listable=True,
    ),
    MetaTool(
        SEARCH_TOOLS,
        lambda name, sizes, mode: search_tools_definition(name, sizes.search_top_k, enables=mode == "dynamic"),
        SURFACE | DYNAMIC | CODE,
        EVERY_MODE,
        listable=True,
    ),
    MetaTool(
        DESCRIBE_TOOLS,
        lambda name, sizes, mode: describe_tools_definition(name, sizes.describe_batch_max, unlisted=mode in SURFACE),
        SURFACE | STUBS,
        EVERY_MODE,
        listable=True,
    ),
    MetaTool(INVOKE_TOOL, lambda name, sizes, mode: invoke_tool_definition(name), SURFACE, SURFACE, listable=True),
    MetaTool(
        MANAGE_TOOLS,
        lambda name, sizes, mode: manage_tools_definition(name, sizes.describe_batch_max),
        DYNAMIC,
        DYNAMIC,
    ),
    MetaTool(RUN_CODE, lambda name, sizes, mode: run_code_generic(name), CODE, CODE),
)
"""Every meta-tool, in listing order."""

BY_NAME: Final = {meta.name: meta for meta in REGISTRY}
LISTABLE: Final = tuple(meta.name for meta in REGISTRY if meta.listable)
"""Meta-tools that ``meta_tools`` may add to a ``describe`` or ``eager`` listing (they keep no session state)."""
