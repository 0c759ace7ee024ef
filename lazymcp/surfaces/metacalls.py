"""What a call comes to (``Answer``, ``Run``, ``Forward``), and what each meta-tool does when called
(spec §17): its handler, registered with ``@handles`` under its name in ``lazymcp.surfaces.metatools.REGISTRY``.

``DynamicSession`` is the one piece of state: a ``dynamic``-mode session's enabled and disabled tools,
kept wherever the adapter keeps that session. ``check_call`` is the one argument check of every call
(LT-14).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from lazymcp.protocol.names import suggest
from lazymcp.surfaces.arguments import check_arguments, without_nulls
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.metatools import (
    DESCRIBE_TOOLS,
    INVOKE_TOOL,
    LIST_TOOL_CATEGORIES,
    MANAGE_PAGE_SIZE,
    MANAGE_TOOLS,
    SEARCH_TOOLS,
    describe_tools_result,
    text_result,
)


@dataclass
class DynamicSession:
    """One client session's tools in ``dynamic`` mode: those it enabled, least recently used first,
    and those it disabled by hand (which ``search_tools`` does not enable again)."""

    enabled: dict[str, None] = field(default_factory=lambda: {})
    disabled: set[str] = field(default_factory=lambda: set())

    def touch(self, name: str) -> None:
        """A call to an enabled tool makes it the most recently used."""
        if name in self.enabled:
            self.enabled[name] = self.enabled.pop(name)

    def enable(self, names: Iterable[str], cap: int) -> list[str]:
        """Enable ``names`` (most recent last); returns the tools evicted to stay within ``cap``."""
        before = list(self.enabled)
        for name in names:
            self.disabled.discard(name)
            self.enabled.pop(name, None)
            self.enabled[name] = None
        while len(self.enabled) > cap:
            del self.enabled[next(iter(self.enabled))]
        return [name for name in before if name not in self.enabled]

    def disable(self, names: Iterable[str]) -> None:
        for name in names:
            self.enabled.pop(name, None)
            self.disabled.add(name)


@dataclass(frozen=True, slots=True)
class Answer:
    """A request answered here; ``changed``: this session's tool list changed (send list_changed)."""

    result: dict[str, Any]
    changed: bool = False


@dataclass(frozen=True, slots=True)
class Run:
    """Run the real tool ``name`` with ``arguments`` (already checked against its schema)."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Forward:
    """The call is the server's to run, exactly as it came."""


Outcome = Answer | Run | Forward
Handler = Callable[[Catalog, dict[str, Any], "DynamicSession | None"], Outcome]
"""A meta-tool's call: the catalog, its checked arguments, and the dynamic session (in ``dynamic`` mode)."""

HANDLERS: dict[str, Handler] = {}
"""Each meta-tool's handler, by its usual name."""


def handles(name: str) -> Callable[[Handler], Handler]:
    """Register the handler of the meta-tool ``name`` (an entry of ``lazymcp.surfaces.metatools.REGISTRY``)."""

    def register(handler: Handler) -> Handler:
        HANDLERS[name] = handler
        return handler

    return register


def check_call(catalog: Catalog, name: str, arguments: object, *, always: bool = False) -> dict[str, Any] | None:
    """The argument check of a call (LT-14): an ``isError`` result carrying the schema, or None to run it.

    A catalog tool, or the stock listing's ``describe_tools``, is checked unless ``check_arguments``
    is off; ``always``: checked whatever that option says (meta-tools answered here, ``invoke_tool``'s
    inner call). A name the catalog does not have is the server's to answer its own way.
    """
    if not always:
        if not catalog.options.check_arguments:
            return None
        if catalog.get(name) is None and name != catalog.meta_tool["name"]:
            return None
    return check_arguments(name, catalog.validator(name), arguments)


def arguments_dropped(catalog: Catalog, name: str, arguments: object, refused: dict[str, Any]) -> dict[str, Any]:
    """The refusal of a listed stub's call that came without any argument, its tool requiring some: a
    client that builds its argument model from the listed schema (empty for a stub) drops every argument
    the model gave, so the refusal says so and how to call through ``invoke_tool`` (when it may be called)."""
    tool = catalog.get(name)
    schema = None if tool is None else tool.get("inputSchema")
    required = cast(dict[str, Any], schema).get("required") if isinstance(schema, dict) else None
    if arguments or not required or INVOKE_TOOL not in catalog.options.stock_meta_tools:
        return refused
    invoke = catalog.meta_names[INVOKE_TOOL]
    needed = ", ".join(str(key) for key in cast(list[object], required))
    hint = (
        f"No arguments reached {name!r}, which requires {needed}. If you gave them, your client probably dropped "
        "them: the tool list shows this tool without its parameters. Call it through "
        f'{invoke} instead: {{"name": "{name}", "arguments": {{...}}}}, the arguments as the schema below says.'
    )
    block = refused["content"][0]
    return {**refused, "content": [{**block, "text": f"{hint}\n{block['text']}"}, *refused["content"][1:]]}


def absent_nulls(catalog: Catalog, name: str, arguments: object, *, always: bool = False) -> object:
    """A call's arguments with each ``null`` that stands for an absent property taken out (the same
    object when there is none): before the check and before the call is forwarded. ``always``: a
    meta-tool's call, whose optional parameters all take ``null`` as absent."""
    cleaned = without_nulls(catalog.validator(name), arguments, always=always)
    return arguments if cleaned is None else cleaned


def core_names(catalog: Catalog) -> frozenset[str]:
    """The core (or always-available) tools: ``core_tools`` entries naming a tool, or a category's tools."""

    def build() -> frozenset[str]:
        chosen: set[str] = set()
        categories = catalog.categories() if catalog.options.core_tools else {}
        for entry in catalog.options.core_tools:
            chosen.update([entry] if entry in catalog.index else categories.get(entry, []))
        return frozenset(chosen)

    return catalog.memo("core_names", build)


def error(kind: str, message: str, **data: Any) -> Answer:
    """A meta-tool's ``isError`` answer: ``{error, message, ...}``."""
    return Answer(text_result({"error": kind, "message": message, **data}, is_error=True))


def unknown_tool(catalog: Catalog, name: str) -> Answer:
    """A call of a tool the catalog does not have: an ``isError`` result with the closest names, found as
    ``describe_tools`` finds them (``invoke_tool``'s unknown name, and the gateway's call no server takes)."""
    close = suggest(name, catalog.name_index())
    return error("unknown_tool", f"No tool {name!r}; find tools with search_tools.", name=name, suggestions=close)


def _unknown_category(catalog: Catalog, category: str) -> Answer:
    close = suggest(category, catalog.categories())
    return error("unknown_category", f"No category {category!r}.", category=category, suggestions=close)


def categories(catalog: Catalog, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """``list_tool_categories``' entries: each category with its tool count (of ``names`` when given)."""
    allowed = None if names is None else set(names)
    entries: list[dict[str, Any]] = []
    for category, members in sorted(catalog.categories().items()):
        count = len(members) if allowed is None else sum(name in allowed for name in members)
        if count:
            entry: dict[str, Any] = {"name": category, "tools": count}
            description = catalog.category_description(category)
            if description:
                entry["description"] = description
            entries.append(entry)
    return entries


def _entry(catalog: Catalog, name: str) -> dict[str, Any]:
    info = catalog.info(name)
    entry: dict[str, Any] = {"name": name}
    if info.summary:
        entry["summary"] = info.summary
    entry["category"] = info.category
    if info.deprecated is not None:
        entry["deprecated"] = info.deprecated
    return entry


@handles(LIST_TOOL_CATEGORIES)
def list_tool_categories(catalog: Catalog, args: Mapping[str, Any], session: DynamicSession | None) -> Answer:
    """``list_tool_categories``: each category with its tool count, and how many tools there are."""
    return Answer(text_result({"categories": categories(catalog), "total": len(catalog)}))


@handles(DESCRIBE_TOOLS)
def describe_tools(catalog: Catalog, args: Mapping[str, Any], session: DynamicSession | None) -> Answer:
    """``describe_tools``: the full definitions asked for, with their declared metadata (§17.6)."""
    names = [name for name in args["names"] if isinstance(name, str)]
    extras: Callable[[str], Any] = lambda name: catalog.info(name).extras()  # noqa: E731
    return Answer(describe_tools_result(catalog.get, catalog.name_index(), names, extras))


@handles(INVOKE_TOOL)
def invoke_tool(catalog: Catalog, args: Mapping[str, Any], session: DynamicSession | None) -> Answer | Run:
    """``invoke_tool``: the real tool's call, once its arguments fit its schema."""
    name: str = args["name"]
    arguments = cast(dict[str, Any], args.get("arguments") or {})
    if catalog.get(name) is None:
        return unknown_tool(catalog, name)
    arguments = cast(dict[str, Any], absent_nulls(catalog, name, arguments))
    refused = check_call(catalog, name, arguments, always=True)
    if refused is not None:
        return Answer(refused)
    return Run(name, arguments)


@handles(SEARCH_TOOLS)
def search(catalog: Catalog, args: Mapping[str, Any], session: DynamicSession | None) -> Answer:
    """``search_tools``: the best matches, "k of N"; in a dynamic session it also enables them."""
    query: str = args["query"]
    limit: int = args.get("limit", catalog.options.search_top_k)
    category: str | None = args.get("category")
    index = catalog.search_index()
    if category is None:
        found = index.search(query, limit)
        names, total = found.names, found.total
    else:
        members = catalog.categories().get(category)
        if members is None:
            return _unknown_category(catalog, category)
        names = [n for n in index.search(query, index.total).names if catalog.info(n).category == category][:limit]
        total = len(members)
    entries = [_entry(catalog, name) for name in names]
    scope = "tools" if category is None else f"tools of category {category!r}"
    payload: dict[str, Any] = {"query": query, "shown": len(entries), "total": total}
    if not entries:
        payload["note"] = f"No tool matched, of {total} {scope}. Try other words, or list_tool_categories."
        payload["tools"] = entries
        return Answer(text_result(payload))
    payload["note"] = f"{len(entries)} of {total} {scope}, best first."
    payload["tools"] = entries
    if session is None:
        return Answer(text_result(payload))
    always = core_names(catalog)
    chosen = [name for name in names if name not in always and name not in session.disabled]
    before = set(session.enabled)
    evicted = session.enable(chosen, catalog.options.max_enabled)
    for entry in entries:
        entry["enabled"] = entry["name"] in always or entry["name"] in session.enabled
    payload["enabled"] = [name for name in chosen if name in session.enabled]
    if evicted:
        payload["evicted"] = evicted
    payload["note"] += " The enabled ones are in the tool list now."
    return Answer(text_result(payload), changed=set(session.enabled) != before)


def _resolve_names(catalog: Catalog, names: list[str]) -> tuple[list[str], list[str]]:
    """Tool or category names -> (tool names in order, unknown names)."""
    tools: dict[str, None] = {}
    unknown: list[str] = []
    grouped = catalog.categories()
    for name in names:
        if name in catalog.index:
            tools[name] = None
        elif name in grouped:
            tools.update(dict.fromkeys(grouped[name]))
        else:
            unknown.append(name)
    return list(tools), unknown


@handles(MANAGE_TOOLS)
def manage(catalog: Catalog, args: Mapping[str, Any], session: DynamicSession | None) -> Answer:
    """``manage_tools``: list, enable or disable a dynamic session's tools by tool or category name."""
    assert session is not None  # callable in a dynamic session only
    action: str = args["action"]
    always = core_names(catalog)
    if action == "list":
        return _manage_list(catalog, args, session, always)
    requested: list[str] | None = args.get("names")
    if not requested:
        return error("missing_names", f"manage_tools {action} needs names: tool or category names.")
    tools, unknown = _resolve_names(catalog, requested)
    payload: dict[str, Any] = {"action": action}
    before = set(session.enabled)
    if action == "enable":
        evicted = session.enable([name for name in tools if name not in always], catalog.options.max_enabled)
        payload["enabled"] = [name for name in tools if name in session.enabled or name in always]
        if evicted:
            payload["evicted"] = evicted
    else:
        session.disable(name for name in tools if name not in always)
        payload["disabled"] = [name for name in tools if name not in always]
        kept = [name for name in tools if name in always]
        if kept:
            payload["always_available"] = kept
    payload["unknown"] = unknown
    payload["suggestions"] = {name: suggest(name, catalog.name_and_category_index()) for name in unknown[:10]}
    changed = set(session.enabled) != before
    return Answer(text_result(payload, is_error=not tools), changed=changed)


def _manage_list(catalog: Catalog, args: Mapping[str, Any], session: DynamicSession, always: frozenset[str]) -> Answer:
    category: str | None = args.get("category")
    if category is not None and category not in catalog.categories():
        return _unknown_category(catalog, category)
    include_disabled: bool = args.get("include_disabled", False)
    offset: int = args.get("offset", 0)
    limit: int = args.get("limit", MANAGE_PAGE_SIZE)
    visible = [name for name in catalog.index if include_disabled or name not in session.disabled]
    chosen = [name for name in visible if category is None or catalog.info(name).category == category]
    entries: list[dict[str, Any]] = []
    for name in chosen[offset : offset + limit]:
        entry = _entry(catalog, name)
        entry["enabled"] = name in always or name in session.enabled
        if name in session.disabled:
            entry["disabled"] = True
        entries.append(entry)
    payload: dict[str, Any] = {"tools": entries, "total": len(chosen), "offset": offset}
    if offset + limit < len(chosen):
        payload["next_offset"] = offset + limit
    payload["categories"] = categories(catalog, visible)
    return Answer(text_result(payload))
