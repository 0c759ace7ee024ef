"""Exposure modes: how a stock client's ``tools/list`` and the meta-tools are served (spec §17).

Theory of operation. A mode decides two things for a client that did not declare the extension and
sent no explicit ``lazy``: what its ``tools/list`` holds, and which meta-tools its ``tools/call`` may
reach. Declaring clients and explicit ``lazy`` values are served as §4 says, in every mode, and every
real tool stays callable by its own name in every mode.

- ``describe``: stock stubs after ``describe_tools`` (and the ``meta_tools`` configured); ``search_tools``
  is callable too.
- ``eager``: the full tools (after the ``meta_tools`` configured, none by default).
- ``dynamic``: ``search_tools`` and ``manage_tools``, the always-available tools and the tools this
  session enabled, in full. Enabling changes the session's list, so the answer carries ``changed`` and
  the adapter sends that session ``notifications/tools/list_changed``. Only a session the server can
  tell apart and write to (a 2025-11-25 connection with a back channel) has such a list; any other
  request (2026-07-28, stateless HTTP) gets the stable surface of ``core`` below with the
  always-available tools as its core, because 2026-07-28 forbids a tool list that varies per
  connection or as a side effect of other requests.
- ``proxy``: the stable surface: ``list_tool_categories``, ``search_tools``, ``describe_tools`` and
  ``invoke_tool``; nothing else, whatever the catalog holds.
- ``core``: that surface plus the core tools, in full.

Everything here is a plain function over a ``Catalog`` and JSON dicts; ``Session`` is the one piece of
state, and the adapter decides where it lives (per connection in ``lazymcp.sdk``, per router in the proxy).
A call comes back as ``Answer`` (the result, made here), ``Run`` (run this real tool with these
arguments: ``invoke_tool``) or ``None`` (not ours: the call goes to the server as it came).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from lazymcp.arguments import check_arguments
from lazymcp.catalog import Catalog
from lazymcp.errors import CatalogError, suggest
from lazymcp.messages import (
    DESCRIBE_TOOLS,
    INVOKE_TOOL,
    LIST_TOOL_CATEGORIES,
    MANAGE_TOOLS,
    SEARCH_TOOLS,
    Mode,
    Tool,
)
from lazymcp.metatools import (
    MANAGE_PAGE_SIZE,
    describe_tools_definition,
    describe_tools_result,
    search_tools_definition,
    text_result,
)
from lazymcp.methods import check_call, parse_list_params, resolve_shape

SURFACE = (LIST_TOOL_CATEGORIES, SEARCH_TOOLS, DESCRIBE_TOOLS, INVOKE_TOOL)
"""The ``proxy`` mode's stable surface, in listing order (also ``core``'s meta-tools)."""
DYNAMIC = (SEARCH_TOOLS, MANAGE_TOOLS)
"""What a ``dynamic`` session lists before its tools."""


@dataclass
class Session:
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
    """A ``tools/call`` answered here; ``changed``: this session's tool list changed (send list_changed)."""

    result: dict[str, Any]
    changed: bool = False


@dataclass(frozen=True, slots=True)
class Run:
    """Run the real tool ``name`` with ``arguments`` (already checked against its schema)."""

    name: str
    arguments: dict[str, Any]


Outcome = Answer | Run | None


def effective_mode(catalog: Catalog, session: Session | None) -> Mode:
    """The mode serving a request: ``dynamic`` without a session serves the stable ``core`` surface."""
    mode = catalog.options.mode
    return "core" if mode == "dynamic" and session is None else mode


def _callable(catalog: Catalog, mode: Mode) -> tuple[str, ...]:
    if mode in ("proxy", "core"):
        return SURFACE
    if mode == "dynamic":
        return (*DYNAMIC, DESCRIBE_TOOLS)
    options = catalog.options
    return (DESCRIBE_TOOLS, SEARCH_TOOLS, *options.stock_meta_tools, *options.eager_meta_tools)


def core_names(catalog: Catalog) -> frozenset[str]:
    """The core (or always-available) tools: ``core_tools`` entries naming a tool, or a category's tools."""

    def build() -> frozenset[str]:
        chosen: set[str] = set()
        categories = catalog.categories() if catalog.options.core_tools else {}
        for entry in catalog.options.core_tools:
            chosen.update([entry] if entry in catalog.index else categories.get(entry, []))
        return frozenset(chosen)

    return catalog.memo("core_names", build)


def _definition(catalog: Catalog, canonical: str, mode: Mode) -> Tool:
    name = catalog.meta_names[canonical]
    if canonical == SEARCH_TOOLS and mode == "dynamic":
        return catalog.memo(
            "search_enabling", lambda: search_tools_definition(name, catalog.options.search_top_k, enables=True)
        )
    if canonical == DESCRIBE_TOOLS and mode in ("proxy", "core"):
        batch_max = catalog.options.describe_batch_max
        return catalog.memo("describe_unlisted", lambda: describe_tools_definition(name, batch_max, unlisted=True))
    return catalog.meta_tools[name]


# --- tools/list --------------------------------------------------------------------------------


def list_tools(catalog: Catalog, params: object, *, declared: bool, session: Session | None) -> dict[str, Any]:
    """One page of ``tools/list``: the extension's listing (§4), or the mode's for a stock client.

    Raises:
        InvalidParams: a malformed ``lazy``, ``detail`` or ``cursor``.
    """
    request = parse_list_params(params)
    options = catalog.options
    mode = effective_mode(catalog, session)
    if declared or request.lazy is not None or (mode == "describe" and options.stock_default == "lazy"):
        shape = resolve_shape(request, declared=declared, stock_default=options.stock_default)
        if shape != "stock" or options.stock_meta_tools == (DESCRIBE_TOOLS,):
            return catalog.page(shape, request.detail, request.cursor)
        first = [_definition(catalog, name, mode) for name in options.stock_meta_tools]
        return catalog.paginate(catalog.listing("stock", request.detail), request.cursor, first)
    if mode in ("describe", "eager"):  # describe with stock_default="eager" is the eager mode
        first = [_definition(catalog, name, mode) for name in options.eager_meta_tools]
        return catalog.paginate(catalog.listing("full", request.detail), request.cursor, first)
    if mode == "dynamic":
        assert session is not None
        shown = core_names(catalog) | session.enabled.keys()
        first = [_definition(catalog, name, mode) for name in DYNAMIC]
        return catalog.paginate([tool for tool in catalog.tools if tool["name"] in shown], request.cursor, first)
    first = [_definition(catalog, name, mode) for name in SURFACE]
    return catalog.paginate(_core_listing(catalog) if mode == "core" else [], request.cursor, first)


def _core_listing(catalog: Catalog) -> list[Tool]:
    core = core_names(catalog)
    return catalog.memo("core_listing", lambda: [tool for tool in catalog.tools if tool["name"] in core])


# --- tools/call --------------------------------------------------------------------------------


def call_tool(catalog: Catalog, params: Mapping[str, Any], *, session: Session | None) -> Outcome:
    """Decide a ``tools/call``: a meta-tool's answer, a real tool to run (``invoke_tool``), or None."""
    name = params.get("name")
    if not isinstance(name, str):
        return None  # malformed: the server's own validation answers it
    arguments = params.get("arguments")
    mode = effective_mode(catalog, session)
    canonical = catalog.canonical_meta_name(name)
    if canonical is None or canonical not in _callable(catalog, mode):
        refused = check_call(catalog, name, arguments)
        if refused is not None:
            return Answer(refused)
        if mode == "dynamic" and session is not None:
            session.touch(name)
        return None
    refused = check_arguments(name, catalog.validator(name), arguments)
    if refused is not None:
        return Answer(refused)
    args = cast(dict[str, Any], arguments or {})
    if canonical == DESCRIBE_TOOLS:
        names = [n for n in args["names"] if isinstance(n, str)]
        extras: Callable[[str], Any] = lambda name: catalog.info(name).extras()  # noqa: E731
        return Answer(describe_tools_result(catalog.get, catalog.name_index(), names, extras))
    if canonical == SEARCH_TOOLS:
        return _search(catalog, args, session if mode == "dynamic" else None)
    if canonical == INVOKE_TOOL:
        return _invoke(catalog, args)
    if canonical == LIST_TOOL_CATEGORIES:
        return Answer(text_result({"categories": _categories(catalog), "total": len(catalog)}))
    assert session is not None  # manage_tools is callable in a dynamic session only
    return _manage(catalog, args, session)


def _error(error: str, message: str, **data: Any) -> Answer:
    return Answer(text_result({"error": error, "message": message, **data}, is_error=True))


def _unknown_category(catalog: Catalog, category: str) -> Answer:
    close = suggest(category, catalog.categories())
    return _error("unknown_category", f"No category {category!r}.", category=category, suggestions=close)


def _categories(catalog: Catalog, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
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


def _search(catalog: Catalog, args: Mapping[str, Any], session: Session | None) -> Answer:
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


def _invoke(catalog: Catalog, args: Mapping[str, Any]) -> Answer | Run:
    name: str = args["name"]
    arguments = cast(dict[str, Any], args.get("arguments") or {})
    if catalog.get(name) is None:
        close = suggest(name, catalog.name_index())
        return _error("unknown_tool", f"No tool {name!r}; find tools with search_tools.", name=name, suggestions=close)
    refused = check_arguments(name, catalog.validator(name), arguments)
    if refused is not None:
        return Answer(refused)
    return Run(name, arguments)


def _resolve_names(catalog: Catalog, names: list[str]) -> tuple[list[str], list[str]]:
    """Tool or category names -> (tool names in order, unknown names)."""
    tools: dict[str, None] = {}
    unknown: list[str] = []
    categories = catalog.categories()
    for name in names:
        if name in catalog.index:
            tools[name] = None
        elif name in categories:
            tools.update(dict.fromkeys(categories[name]))
        else:
            unknown.append(name)
    return list(tools), unknown


def _manage(catalog: Catalog, args: Mapping[str, Any], session: Session) -> Answer:
    action: str = args["action"]
    always = core_names(catalog)
    if action == "list":
        return _manage_list(catalog, args, session, always)
    requested: list[str] | None = args.get("names")
    if not requested:
        return _error("missing_names", f"manage_tools {action} needs names: tool or category names.")
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


def _manage_list(catalog: Catalog, args: Mapping[str, Any], session: Session, always: frozenset[str]) -> Answer:
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
    payload["categories"] = _categories(catalog, visible)
    return Answer(text_result(payload))


# --- start-up ------------------------------------------------------------------------------------


def check_configuration(catalog: Catalog) -> None:
    """Every tool and category the configuration names exists (spec §17.2).

    Raises:
        CatalogError: a name in ``core_tools``, the metadata file or the registration metadata matches
            no tool (or, for ``core_tools`` and category descriptions, no category). ``data["unknown"]``
            lists each as ``{name, where, suggestions}``, and the message says the same in words.
    """
    categories = catalog.categories()
    options = catalog.options
    unknown: list[dict[str, Any]] = []

    def missing(name: str, where: str, known: Iterable[str]) -> None:
        unknown.append({"name": name, "where": where, "suggestions": suggest(name, known)})

    for entry in options.core_tools:
        if entry not in catalog.index and entry not in categories:
            missing(entry, "core tools", [*catalog.index, *categories])
    for metadata in (catalog.declared, options.metadata):
        for name, where in metadata.tool_names():
            if name not in catalog.index:
                missing(name, where, catalog.index)
        for category in metadata.categories:
            if category not in categories:
                missing(category, f"{metadata.source}, categories", categories)
    if unknown:
        problems = [
            f"{entry['where']}: {entry['name']!r} matches nothing"
            + (f" (did you mean {', '.join(entry['suggestions'])}?)" if entry["suggestions"] else "")
            for entry in unknown
        ]
        message = "the configuration names what the server does not have: " + "; ".join(problems)
        raise CatalogError(message, {"unknown": unknown})
