"""The one door of every ``tools/*`` request: ``METHODS`` maps each method to a pure handler.

Each handler takes the catalog, the request's params and the ``Caller`` (era, declaration, dynamic
session) and returns an ``Answer`` (the result, enveloped for its era), a ``Run`` (run this real tool
upstream with these arguments) or ``FORWARD`` (run the call upstream as it came). The SDK adapter,
the proxy and the gateway call ``dispatch`` once per request and carry the outcome to the wire; the modes
(``lazymcp.surfaces.modes``) shape what a stock client's listing and meta-tool calls hold. Every malformed
parameter raises ``InvalidParams`` naming the field (LT-13). No I/O and no SDK here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, cast

from lazymcp.protocol.bridge import Envelope
from lazymcp.protocol.errors import InvalidParams, UnknownTool
from lazymcp.protocol.messages import (
    DESCRIBE,
    DESCRIBE_BATCH,
    DETAILS,
    DRAFT_DESCRIBE,
    DRAFT_MIN_NAMES,
    EXT_ID,
    MANIFEST,
    MANIFEST_CAPABILITY,
    Detail,
    Shape,
    StockDefault,
)
from lazymcp.protocol.names import MAX_NAME
from lazymcp.surfaces import modes
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.hosts import Choice
from lazymcp.surfaces.metatools import DESCRIBE_TOOLS
from lazymcp.surfaces.modes import Answer, DynamicSession, Forward, Outcome, Run
from lazymcp.surfaces.options import Options

__all__ = ["FORWARD", "METHODS", "Answer", "Caller", "Forward", "Run", "dispatch"]

FORWARD: Final = Forward()
"""The outcome of a call that is the server's to run as it came."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a request, as far as the lazy-tools rules care."""

    declared: bool = False
    """The client declared the extension (LT-03)."""
    session: DynamicSession | None = None
    """Its dynamic-mode session, when it can have one (a 2025-11-25 connection with a back channel)."""
    envelope: Envelope | None = None
    """The 2026-07-28 result envelope of the server it talks to; None on 2025-11-25."""
    choice: Choice | None = None
    """The mode its host is served (``lazymcp.surfaces.hosts.choose``); None: the catalog's own."""


@dataclass(frozen=True, slots=True)
class ListRequest:
    """The lazy-tools view of a ``tools/list`` request."""

    cursor: str | None = None
    lazy: bool | None = None
    detail: Detail = "summary"


def declares(extensions: object) -> bool:
    """Does a client's ``capabilities.extensions`` declare the extension (LT-03)?"""
    return isinstance(extensions, Mapping) and EXT_ID in extensions


def advertise(result: Mapping[str, Any], options: Options) -> dict[str, Any]:
    """An ``initialize`` or ``server/discover`` result with the extension advertised (LT-02)."""
    capabilities = dict(cast(Mapping[str, Any], result.get("capabilities") or {}))
    capabilities["extensions"] = {**(capabilities.get("extensions") or {}), EXT_ID: dict(options.settings())}
    if isinstance(capabilities.get("tools"), dict):
        manifest = {MANIFEST_CAPABILITY: {"maxNames": most_names(options)}}
        capabilities["tools"] = {**capabilities["tools"], "listChanged": True, **manifest}
    return {**result, "capabilities": capabilities}


def most_names(options: Options) -> int:
    """The most names one draft ``tools/describe {names}`` takes: ``describeBatchMax``, and never fewer
    than the draft's floor."""
    return max(options.describe_batch_max, DRAFT_MIN_NAMES)


def _object(params: object) -> Mapping[str, Any]:
    """The params object (absent params read as empty).

    Raises:
        InvalidParams: params are present but not a JSON object (JSON-RPC also allows arrays).
    """
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InvalidParams("params", "type", "Invalid params: expected an object")
    return cast(Mapping[str, Any], params)


def parse_list_params(params: object) -> ListRequest:
    """Read ``lazy``, ``detail`` and ``cursor`` from ``tools/list`` params, checked in that order.

    Raises:
        InvalidParams: a parameter has the wrong type or an unknown value.
    """
    params = _object(params)
    lazy = params.get("lazy")
    if lazy is not None and not isinstance(lazy, bool):
        raise InvalidParams("lazy", "type", "Invalid params: 'lazy' must be a boolean")
    detail = params.get("detail")
    if detail is None:
        detail = "summary"
    if not isinstance(detail, str):
        raise InvalidParams("detail", "type", "Invalid params: 'detail' must be a string")
    if detail not in DETAILS:
        raise InvalidParams(
            "detail", "unknown_value", f"Invalid params: 'detail' must be one of {', '.join(DETAILS)}", allowed=DETAILS
        )
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidParams("cursor", "type", "Invalid params: 'cursor' must be a string")
    return ListRequest(cursor=cursor, lazy=lazy, detail=detail)


def resolve_shape(request: ListRequest, *, declared: bool, stock_default: StockDefault) -> Shape:
    """Which listing a client gets (LT-04): explicit ``lazy`` wins, then the client's declaration."""
    lazy = request.lazy
    if lazy is None:
        lazy = declared or stock_default == "lazy"
    if not lazy:
        return "full"
    return "bare" if declared else "stock"


# --- the handlers --------------------------------------------------------------------------------


def list_tools(catalog: Catalog, params: object, caller: Caller) -> Answer:
    """``tools/list``: the extension's listing (§4), or the mode's for a stock client (§17).

    Raises:
        InvalidParams: a malformed ``lazy``, ``detail`` or ``cursor``.
    """
    request = parse_list_params(params)
    options = catalog.options
    mode = modes.effective_mode(catalog, caller.session)
    if caller.declared or request.lazy is not None or (mode == "describe" and options.stock_default == "lazy"):
        shape = resolve_shape(request, declared=caller.declared, stock_default=options.stock_default)
        if shape != "stock" or options.stock_meta_tools == (DESCRIBE_TOOLS,):
            return Answer(catalog.page(shape, request.detail, request.cursor))
        return Answer(modes.stock_listing(catalog, mode, request.detail, request.cursor))
    return Answer(modes.mode_listing(catalog, mode, request.detail, request.cursor, caller.session))


def call_tool(catalog: Catalog, params: object, caller: Caller) -> Outcome:
    """``tools/call``: a meta-tool's answer, a refusal of bad arguments (LT-14), or the call to run."""
    params = _object(params)
    name = params.get("name")
    if not isinstance(name, str):
        return FORWARD  # malformed: the server's own validation answers it
    return modes.call(catalog, name, params.get("arguments"), caller.session)


def _name_param(params: object, field: str = "name") -> str:
    name = _object(params).get(field)
    if not isinstance(name, str):
        raise InvalidParams(field, "type", f"Invalid params: '{field}' must be a string")
    if not name:
        raise InvalidParams(field, "empty", f"Invalid params: '{field}' must not be empty")
    return name


def describe(catalog: Catalog, params: object, caller: Caller | None = None) -> Answer:
    """``tools/describe``: ``{name}`` -> ``{tool}`` (LT-10), or the draft's ``{names}`` -> ``{tools}`` (§18).

    Raises:
        InvalidParams: ``name`` is missing or not a non-empty string (or the draft's errors).
        UnknownTool: no tool has that name.
    """
    fields = _object(params)
    if "names" in fields:
        if "name" in fields:
            raise InvalidParams("names", "type", "Invalid params: give 'name' or 'names', not both")
        return describe_names(catalog, fields["names"])
    name = _name_param(params)
    tool = catalog.get(name)
    if tool is None:
        raise UnknownTool(name, catalog.name_index())
    return Answer({"tool": tool})


def describe_batch(catalog: Catalog, params: object, caller: Caller | None = None) -> Answer:
    """``tools/describe_batch``: ``{names}`` -> ``{tools, unknown}`` in request order (LT-11).

    A name given twice is described once, at its first position.

    Raises:
        InvalidParams: ``names`` is not a list of 1 to ``describe_batch_max`` strings.
    """
    limit = catalog.options.describe_batch_max
    names = _object(params).get("names")
    if not isinstance(names, list):
        raise InvalidParams("names", "type", "Invalid params: 'names' must be an array of strings")
    if not names:
        raise InvalidParams("names", "empty", f"Invalid params: 'names' must hold 1 to {limit} names", limit=limit)
    if len(names) > limit:  # pyright: ignore[reportUnknownArgumentType]
        raise InvalidParams("names", "too_many", f"Invalid params: 'names' holds more than {limit} names", limit=limit)
    tools: list[Any] = []
    unknown: list[str] = []
    seen: set[str] = set()
    for position, name in enumerate(names):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not isinstance(name, str):
            raise InvalidParams("names", "type", f"Invalid params: 'names[{position}]' must be a string")
        if name in seen:
            continue
        seen.add(name)
        tool = catalog.get(name)
        if tool is None:
            unknown.append(name)
        else:
            tools.append(tool)
    return Answer({"tools": tools, "unknown": unknown})


def describe_names(catalog: Catalog, names: object) -> Answer:
    """The draft's ``tools/describe {names}`` -> ``{tools}``: one tool per name, in request order, or an
    error naming every unknown name (all or nothing).

    Raises:
        InvalidParams: ``names`` is not a list of 1 to ``most_names`` strings (``reason`` ``"type"``,
            ``"empty"`` or ``"maxNames"``), or names tools the catalog does not have (``unknownNames``).
    """
    limit = most_names(catalog.options)
    if not isinstance(names, list):
        raise InvalidParams("names", "type", "Invalid params: 'names' must be an array of strings")
    if not names:
        raise InvalidParams("names", "empty", "Invalid params: 'names' must not be empty", maxNames=limit)
    if len(names) > limit:  # pyright: ignore[reportUnknownArgumentType]
        text = f"Invalid params: 'names' holds more than {limit} names"
        raise InvalidParams("names", "maxNames", text, maxNames=limit)
    tools: list[Any] = []
    unknown: dict[str, None] = {}
    for position, name in enumerate(cast(list[object], names)):
        if not isinstance(name, str):
            raise InvalidParams("names", "type", f"Invalid params: 'names[{position}]' must be a string")
        tool = catalog.get(name)
        if tool is None:
            unknown[name if len(name) <= MAX_NAME else name[:MAX_NAME] + "…"] = None
        elif not unknown:
            tools.append(tool)
    if unknown:
        shown = ", ".join(repr(name) for name in list(unknown)[:3]) + (", ..." if len(unknown) > 3 else "")
        text = f"Unknown tools: {shown}"
        raise InvalidParams("names", "unknown_tool", text, unknownNames=list(unknown))
    return Answer({"tools": tools})


def manifest(catalog: Catalog, params: object, caller: Caller | None = None) -> Answer:
    """``tools/manifest``: ``{entries: [{name, title?, digest, size, annotations?}]}``, paged as
    ``tools/list`` is (§18).

    Raises:
        InvalidParams: a malformed or stale ``cursor``.
    """
    cursor = _object(params).get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidParams("cursor", "type", "Invalid params: 'cursor' must be a string")
    page = catalog.paginate(catalog.manifest(), cursor)
    entries = page.pop("tools")
    return Answer({"entries": entries, **page})


Handler = Callable[[Catalog, object, Caller], Outcome]

METHODS: Final[dict[str, Handler]] = {
    "tools/list": list_tools,
    "tools/call": call_tool,
    DESCRIBE: describe,
    DESCRIBE_BATCH: describe_batch,
    DRAFT_DESCRIBE: describe,
    MANIFEST: manifest,
}
"""Every ``tools/*`` method lazymcp answers, by name."""

NEW_METHODS: Final = frozenset({DESCRIBE, DESCRIBE_BATCH, DRAFT_DESCRIBE, MANIFEST})
"""The methods the extension adds (a server registers a handler for each)."""


def dispatch(method: str, catalog: Catalog, params: object, caller: Caller) -> Outcome:
    """Run ``method``'s handler; an answer is enveloped for a 2026-07-28 caller (LT-15).

    Raises:
        LazyMCPError: the request is malformed (the adapter turns it into a JSON-RPC error).
        KeyError: ``method`` is not in ``METHODS``.
    """
    if caller.choice is not None:
        catalog = catalog.serving(caller.choice.mode, caller.choice.hint)
    return enveloped(method, METHODS[method](catalog, params, caller), caller)


def enveloped(method: str, outcome: Outcome, caller: Caller) -> Outcome:
    """An answer to ``method`` as ``caller`` is sent it: enveloped for a 2026-07-28 caller (LT-15)."""
    if isinstance(outcome, Answer) and caller.envelope is not None:
        result = caller.envelope.stamp(outcome.result, cacheable=method != "tools/call")
        return replace(outcome, result=result)  # a subclass (code mode's ``Code``) stays itself
    return outcome
