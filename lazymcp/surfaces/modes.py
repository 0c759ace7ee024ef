"""Exposure modes: what a stock client's ``tools/list`` holds and which meta-tools it may call (spec §17).

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
- ``code``: ``search_tools`` (each match with its Python name) and ``run_code``, whose description names
  the servers: the model calls the tools from Python it writes (``lazymcp.surfaces.codemode``).

These are the shaping functions ``lazymcp.surfaces.methods`` calls; a call comes back as ``Answer`` (made
here), ``Run`` (run this real tool with these arguments: ``invoke_tool``) or ``Forward`` (the server's
to run as it came). ``check_call`` is the one argument check of every call (LT-14).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from lazymcp.protocol.errors import CatalogError
from lazymcp.protocol.messages import Detail, Mode, Tool
from lazymcp.protocol.names import suggest
from lazymcp.surfaces import codemode
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.metacalls import (
    HANDLERS,
    Answer,
    DynamicSession,
    Forward,
    Outcome,
    Run,
    absent_nulls,
    arguments_dropped,
    check_call,
    core_names,
)
from lazymcp.surfaces.metatools import DESCRIBE_TOOLS, REGISTRY, RUN_CODE, SEARCH_TOOLS
from lazymcp.surfaces.options import Options
from lazymcp.tools.metadata import Metadata, check_author_summaries


def listed(mode: Mode) -> tuple[str, ...]:
    """The meta-tools ``mode`` always lists, in listing order (``proxy`` and ``core``: the stable surface)."""
    return tuple(meta.name for meta in REGISTRY if mode in meta.listed_in)


SURFACE = listed("proxy")
"""The ``proxy`` mode's stable surface, in listing order (also ``core``'s meta-tools)."""
DYNAMIC = listed("dynamic")
"""What a ``dynamic`` session lists before its tools."""
CODE = listed("code")
"""What a ``code`` listing holds."""

__all__ = ["Answer", "DynamicSession", "Forward", "Outcome", "Run", "check_call", "core_names"]


def effective_mode(catalog: Catalog, session: DynamicSession | None) -> Mode:
    """The mode serving a request: ``dynamic`` without a session serves the stable ``core`` surface."""
    mode = catalog.options.mode
    return "core" if mode == "dynamic" and session is None else mode


def _callable(catalog: Catalog, mode: Mode) -> set[str]:
    """The meta-tools a stock client may call in ``mode``: the registry's, and those the listing carries."""
    allowed = {meta.name for meta in REGISTRY if mode in meta.callable_in}
    if mode in ("describe", "eager"):
        allowed.update(catalog.options.stock_meta_tools, catalog.options.eager_meta_tools)
    return allowed


def _definition(catalog: Catalog, canonical: str, mode: Mode) -> Tool:
    if canonical == RUN_CODE:  # names the catalog's servers
        name = catalog.meta_names[canonical]
        return catalog.memo("meta:run_code", lambda: codemode.run_code_definition(catalog, name))
    return catalog.meta_definition(canonical, mode)


# --- tools/list --------------------------------------------------------------------------------


def _page(
    catalog: Catalog, key: str, entries: Callable[[], list[Any]], cursor: str | None, metas: Iterable[str], mode: Mode
) -> dict[str, Any]:
    """One page of ``entries`` behind the meta-tools ``metas``; a whole listing (no cursor, no page size),
    the same for every client, is built once per catalog and handed out as a shallow copy."""

    def build() -> dict[str, Any]:
        return catalog.paginate(entries(), cursor, [_definition(catalog, name, mode) for name in metas])

    if cursor is None and catalog.options.page_size is None:
        return dict(catalog.memo(f"page:{key}", build))
    return build()


def stock_listing(catalog: Catalog, mode: Mode, detail: Detail, cursor: str | None) -> dict[str, Any]:
    """One page of stock stubs behind the ``describe`` mode's meta-tools."""
    stubs = lambda: catalog.listing("stock", detail)  # noqa: E731
    return _page(catalog, f"stock:{mode}:{detail}", stubs, cursor, catalog.options.stock_meta_tools, mode)


def mode_listing(
    catalog: Catalog, mode: Mode, detail: Detail, cursor: str | None, session: DynamicSession | None
) -> dict[str, Any]:
    """One page of what ``mode`` lists for a stock client that asked for no particular shape.

    Raises:
        InvalidParams: a malformed or stale cursor.
    """
    if mode in ("describe", "eager"):  # describe with stock_default="eager" is the eager mode
        full = lambda: catalog.listing("full", detail)  # noqa: E731
        return _page(catalog, f"full:{mode}", full, cursor, catalog.options.eager_meta_tools, mode)
    if mode == "dynamic":
        assert session is not None
        shown = core_names(catalog) | session.enabled.keys()
        first = [_definition(catalog, name, mode) for name in DYNAMIC]
        return catalog.paginate([catalog.held[i] for name, i in catalog.index.items() if name in shown], cursor, first)
    core = (lambda: _core_listing(catalog)) if mode == "core" else list
    return _page(catalog, f"surface:{mode}", core, cursor, CODE if mode == "code" else SURFACE, mode)


def _core_listing(catalog: Catalog) -> list[Tool]:
    core = core_names(catalog)
    return catalog.memo("core_listing", lambda: [catalog.held[i] for name, i in catalog.index.items() if name in core])


# --- tools/call --------------------------------------------------------------------------------


def call(catalog: Catalog, name: str, arguments: object, session: DynamicSession | None) -> Outcome:
    """Decide a ``tools/call`` of ``name``: a meta-tool's answer, a refusal, or the call to run."""
    mode = effective_mode(catalog, session)
    canonical = catalog.canonical_meta_name(name)
    if canonical is None or canonical not in _callable(catalog, mode):
        given, arguments = arguments, absent_nulls(catalog, name, arguments)
        refused = check_call(catalog, name, arguments)
        if refused is not None:
            return Answer(arguments_dropped(catalog, name, arguments, refused) if mode == "describe" else refused)
        if mode == "dynamic" and session is not None:
            session.touch(name)
        return Forward() if arguments is given else Run(name, cast(dict[str, Any], arguments))
    arguments = absent_nulls(catalog, name, arguments, always=True)
    refused = check_call(catalog, name, arguments, always=True)
    if refused is not None:
        return Answer(refused)
    args = cast(dict[str, Any], arguments or {})
    outcome = HANDLERS[canonical](catalog, args, session if mode == "dynamic" else None)
    if mode == "code" and canonical == SEARCH_TOOLS and isinstance(outcome, Answer):
        return Answer(codemode.with_python_names(catalog, outcome.result), outcome.changed)
    if mode == "code" and canonical == DESCRIBE_TOOLS:  # the tools as the code calls them
        return Answer(codemode.signatures_of(catalog, [str(name) for name in args["names"]]))
    return outcome


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


def check_known_tools(tools: list[Tool], options: Options, declared: Metadata, origin: str | None) -> None:
    """Check tools known before serving: each ``_meta`` summary fits ``summary_chars``, and a configuration
    that names tools or categories names only what they have (a catalog is built for that alone).

    Raises:
        CatalogError: a summary is longer than ``summary_chars``, or the configuration names a tool or
            category the tools lack (``check_configuration``).
    """
    check_author_summaries(tools, options.summary_chars)
    if options.core_tools or any(metadata.tools or metadata.categories for metadata in (options.metadata, declared)):
        check_configuration(Catalog.build(tools, options, declared=declared, origin=origin))
