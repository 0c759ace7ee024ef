"""The proxy's catalog of its upstream's tools: every page of the upstream's own ``tools/list``
(``lazy: false``) built into a ``Catalog``, and built again after each ``list_changed``.

Sans-IO: the router sends the requests this asks for and hands it each answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from lazymcp import jsonrpc
from lazymcp.catalog import Catalog
from lazymcp.errors import CatalogError, ErrorCode
from lazymcp.jsonrpc import Message
from lazymcp.messages import Tool
from lazymcp.modes import check_configuration
from lazymcp.options import Options
from lazymcp.paging import Pages, PagingError


@dataclass(frozen=True, slots=True)
class Broken:
    """The fetch failed; ``fatal``: the first catalog does not have what the configuration names."""

    reason: str
    fatal: bool = False


@dataclass
class UpstreamTools:
    """The latest catalog of the upstream's tools, and the fetch under way."""

    options: Options
    catalog: Catalog | None = None
    fetching: bool = False
    _again: bool = False
    _pages: Pages = field(default_factory=Pages)

    def begin(self) -> dict[str, Any] | None:
        """The params of a fetch's first request, or None when one is under way (another follows it)."""
        if self.fetching:
            self._again = True
            return None
        self.fetching = True
        # lazy=false: an upstream that is itself lazy must hand over its full tools.
        self._pages = Pages({"lazy": False})
        return self._pages.params()

    def again(self) -> bool:
        """Was a fetch asked for while the last one was under way? (Asks only once.)"""
        again, self._again = self._again, False
        return again

    def answered(self, message: Message, origin: str | None) -> dict[str, Any] | Catalog | Broken:
        """Take the upstream's answer to a ``tools/list`` page; ``origin``: the upstream's name.

        Returns the next page's params, the new catalog (now in place), or why the fetch failed.
        """
        result: object = message.get("result")
        error = message.get("error")
        if jsonrpc.field(error, "code") == ErrorCode.METHOD_NOT_FOUND:
            result = {"tools": []}  # a server without tools: nothing to list, the rest to relay
        if not isinstance(result, dict):
            return self._broken(f"the upstream's tools/list failed: {jsonrpc.field(error, 'message') or 'no result'}")
        result = cast(dict[str, Any], result)
        tools = result.get("tools")
        if not isinstance(tools, list):
            return self._broken("the upstream's tools/list result has no 'tools' list")
        try:
            if self._pages.add(cast(list[Tool], tools), result.get("nextCursor")):
                return self._pages.params()
        except PagingError as exc:
            return self._broken(f"the upstream's tools/list cannot be read: {exc}")
        try:
            catalog = Catalog.build(self._pages.entries, self.options, origin=origin)
            if self.catalog is None:  # start-up: the configuration must name what the upstream has
                try:
                    check_configuration(catalog)
                except CatalogError as exc:
                    self.fetching = False
                    return Broken(exc.message, fatal=True)
        except CatalogError as exc:
            return self._broken(f"the upstream's tools cannot be served: {exc.message}")
        self.catalog = catalog
        self.fetching = False
        self._pages = Pages()
        return catalog

    def _broken(self, reason: str) -> Broken:
        self.fetching = False
        return Broken(reason)
