"""Pure handlers for the lazy-tools methods: JSON params in, JSON result out (spec/lazy-tools.md).

No I/O and no SDK here: the adapters (``lazymcp.sdk``, the proxy) decide who is asking and carry
results to the wire. Every malformed parameter raises ``InvalidParams`` naming the field (LT-13).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from lazymcp.arguments import check_arguments
from lazymcp.catalog import Catalog
from lazymcp.errors import InvalidParams, UnknownTool
from lazymcp.messages import DESCRIBE, DESCRIBE_BATCH, DETAILS, Detail, Shape, StockDefault
from lazymcp.metatools import describe_tools_result


@dataclass(frozen=True, slots=True)
class ListRequest:
    """The lazy-tools view of a ``tools/list`` request."""

    cursor: str | None = None
    lazy: bool | None = None
    detail: Detail = "summary"


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


def list_tools(catalog: Catalog, request: ListRequest, shape: Shape) -> dict[str, Any]:
    """One page of the listing: ``{"tools": [...], "nextCursor"?}``."""
    return catalog.page(shape, request.detail, request.cursor)


def _name_param(params: object, field: str = "name") -> str:
    name = _object(params).get(field)
    if not isinstance(name, str):
        raise InvalidParams(field, "type", f"Invalid params: '{field}' must be a string")
    if not name:
        raise InvalidParams(field, "empty", f"Invalid params: '{field}' must not be empty")
    return name


def describe(catalog: Catalog, params: object) -> dict[str, Any]:
    """``tools/describe``: ``{name}`` -> ``{tool}`` (LT-10).

    Raises:
        InvalidParams: ``name`` is missing or not a non-empty string.
        UnknownTool: no tool has that name.
    """
    name = _name_param(params)
    tool = catalog.get(name)
    if tool is None:
        raise UnknownTool(name, catalog.name_index())
    return {"tool": tool}


def describe_batch(catalog: Catalog, params: object) -> dict[str, Any]:
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
    return {"tools": tools, "unknown": unknown}


def call_meta_tool(catalog: Catalog, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run the stock-client ``describe_tools`` meta-tool; its arguments are already checked."""
    names = [name for name in (arguments or {}).get("names", []) if isinstance(name, str)]
    return describe_tools_result(catalog.get, catalog.name_index(), names)


def check_call(catalog: Catalog, name: str, arguments: object) -> dict[str, Any] | None:
    """The argument check of ``tools/call`` (LT-14): an ``isError`` result, or None to let it run."""
    if not catalog.options.check_arguments:
        return None
    if catalog.get(name) is None and name != catalog.meta_tool["name"]:
        return None  # not ours to judge: the server answers unknown tools its own way
    return check_arguments(name, catalog.validator(name), arguments)


Handler = Callable[[Catalog, object], dict[str, Any]]

METHODS: dict[str, Handler] = {DESCRIBE: describe, DESCRIBE_BATCH: describe_batch}
"""The extension's new request methods, by name."""
