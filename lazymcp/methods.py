"""Pure handlers for the lazy-tools methods: JSON params in, JSON result out (spec/lazy-tools.md).

No I/O and no SDK here: the adapters (``lazymcp.sdk``, the proxy) decide who is asking and carry
results to the wire. Every malformed parameter raises ``InvalidParams`` naming the field (LT-13).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lazymcp.arguments import check_arguments
from lazymcp.catalog import Catalog
from lazymcp.errors import InvalidParams, UnknownTool
from lazymcp.messages import DESCRIBE, DESCRIBE_BATCH, DETAILS, Detail, Shape, StockDefault
from lazymcp.metatools import describe_tools_result

MAX_NAME_CHARS = 1024
"""Longer names are refused before any lookup: no tool is called that, and it bounds the work."""


@dataclass(frozen=True, slots=True)
class ListRequest:
    """The lazy-tools view of a ``tools/list`` request."""

    cursor: str | None = None
    lazy: bool | None = None
    detail: Detail = "summary"


def parse_list_params(params: Mapping[str, Any] | None) -> ListRequest:
    """Read ``cursor``, ``lazy`` and ``detail`` from ``tools/list`` params.

    Raises:
        InvalidParams: a parameter has the wrong type or an unknown value.
    """
    if params is None:
        return ListRequest()
    lazy = params.get("lazy")
    if lazy is not None and not isinstance(lazy, bool):
        raise InvalidParams("lazy", "type", "Invalid params: 'lazy' must be a boolean")
    detail = params.get("detail", "summary")
    if detail is None:
        detail = "summary"
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


def list_tools(catalog: Catalog, request: ListRequest, shape: Shape) -> dict[str, Any]:
    """One page of the listing: ``{"tools": [...], "nextCursor"?}``."""
    return catalog.page(shape, request.detail, request.cursor)


def _name_param(params: Mapping[str, Any] | None, field: str = "name") -> str:
    name = None if params is None else params.get(field)
    if not isinstance(name, str):
        raise InvalidParams(field, "type", f"Invalid params: '{field}' must be a string")
    if not name:
        raise InvalidParams(field, "empty", f"Invalid params: '{field}' must not be empty")
    return name


def describe(catalog: Catalog, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``tools/describe``: ``{name}`` -> ``{tool}`` (LT-10).

    Raises:
        InvalidParams: ``name`` is missing or not a non-empty string.
        UnknownTool: no tool has that name.
    """
    name = _name_param(params)
    tool = catalog.get(name) if len(name) <= MAX_NAME_CHARS else None
    if tool is None:
        raise UnknownTool(name, catalog.index)
    return {"tool": tool}


def describe_batch(catalog: Catalog, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``tools/describe_batch``: ``{names}`` -> ``{tools, unknown}`` in request order (LT-11).

    A name given twice is described once, at its first position.

    Raises:
        InvalidParams: ``names`` is not a list of 1 to ``describe_batch_max`` strings.
    """
    limit = catalog.options.describe_batch_max
    names = None if params is None else params.get("names")
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
    return {"tools": tools, "unknown": unknown}


def call_meta_tool(catalog: Catalog, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run the stock-client ``describe_tools`` meta-tool; its arguments are already checked."""
    names = [name for name in (arguments or {}).get("names", []) if isinstance(name, str)]
    return describe_tools_result(catalog.get, catalog.index, names)


def check_call(catalog: Catalog, name: str, arguments: object) -> dict[str, Any] | None:
    """The argument check of ``tools/call`` (LT-14): an ``isError`` result, or None to let it run."""
    if not catalog.options.check_arguments:
        return None
    if catalog.get(name) is None and name != catalog.meta_tool["name"]:
        return None  # not ours to judge: the server answers unknown tools its own way
    return check_arguments(name, catalog.validator(name), arguments)


Handler = Callable[[Catalog, Mapping[str, Any] | None], dict[str, Any]]

METHODS: dict[str, Handler] = {DESCRIBE: describe, DESCRIBE_BATCH: describe_batch}
"""The extension's new request methods, by name."""
