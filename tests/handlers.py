"""The ``tools/*`` handlers as the pure-core tests call them: through ``methods.dispatch``, unwrapped."""

from __future__ import annotations

from typing import Any

from lazymcp.protocol.messages import Shape
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import Answer, Caller, ListRequest, Run, dispatch
from lazymcp.surfaces.modes import DynamicSession


def _result(outcome: object) -> dict[str, Any]:
    assert isinstance(outcome, Answer)
    return outcome.result


def list_tools(catalog: Catalog, params: object, *, declared: bool, session: DynamicSession | None) -> dict[str, Any]:
    return _result(dispatch("tools/list", catalog, params, Caller(declared=declared, session=session)))


def call_tool(catalog: Catalog, params: object, *, session: DynamicSession | None) -> Answer | Run | None:
    """The call's outcome; None when the server runs it as it came."""
    outcome = dispatch("tools/call", catalog, params, Caller(session=session))
    return outcome if isinstance(outcome, Answer | Run) else None


def describe(catalog: Catalog, params: object) -> dict[str, Any]:
    return _result(dispatch("tools/describe", catalog, params, Caller(declared=True)))


def describe_batch(catalog: Catalog, params: object) -> dict[str, Any]:
    return _result(dispatch("tools/describe_batch", catalog, params, Caller(declared=True)))


def call_meta_tool(catalog: Catalog, arguments: dict[str, Any]) -> dict[str, Any]:
    """A stock client's ``describe_tools`` call."""
    params = {"name": catalog.meta_tool["name"], "arguments": arguments}
    return _result(dispatch("tools/call", catalog, params, Caller()))


def page(catalog: Catalog, request: ListRequest, shape: Shape) -> dict[str, Any]:
    """One page of a listing of ``shape``, as ``tools/list`` serves it."""
    return catalog.page(shape, request.detail, request.cursor)
