"""A server's catalog of its tools, for the proxy and the gateway alike: every page of the server's own
``tools/list`` (``lazy: false``) built into a ``Catalog``, and built again after a ``list_changed`` (at most
once every ``REFETCH_EVERY`` seconds: the changes of a server that churns are gathered).

Sans-IO: ``lazymcp.core.upstream`` sends the requests this asks for and hands it each answer. A listing is bounded
in pages and time, and a bad tool is left out of the catalog (``Catalog.build(rejected=...)``), not fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import CatalogError, ErrorCode
from lazymcp.protocol.jsonrpc import Message
from lazymcp.protocol.limits import REFETCH_EVERY
from lazymcp.protocol.messages import Tool
from lazymcp.protocol.paging import Pages, PagingError
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.modes import check_configuration
from lazymcp.surfaces.options import Options


@dataclass(frozen=True, slots=True)
class Broken:
    """The fetch failed. ``fatal``: there is no catalog to serve and none will come (the proxy stops);
    ``said``: the last catalog stays, and the operator is told why the new one did not come."""

    reason: str
    fatal: bool = False
    said: bool = False


@dataclass
class UpstreamTools:
    """The latest catalog of the upstream's tools, and the fetch under way."""

    options: Options
    timeout: float | None = None
    """Seconds one listing may take, all pages together."""
    catalog: Catalog | None = None
    fetching: bool = False
    _again: bool = False
    _deferred: bool = False
    _done: float = float("-inf")  # when the last catalog came in
    _pages: Pages = field(default_factory=Pages)
    _started: float = 0.0
    _notes: list[str] = field(default_factory=lambda: [])
    _quarantined: set[str] = field(default_factory=lambda: set())

    def begin(self, now: float) -> dict[str, Any] | None:
        """The params of a fetch's first request, or None when one is under way (another follows it)."""
        if self.fetching:
            self._again = True
            return None
        if self.catalog is not None and now < self._done + REFETCH_EVERY:
            self._deferred = True  # a server that keeps changing is listed once a second at most (``due``)
            return None
        self._deferred = False
        self.fetching = True
        self._started = now
        # lazy=false: an upstream that is itself lazy must hand over its full tools.
        self._pages = Pages({"lazy": False})
        return self._pages.params()

    def take_notes(self) -> list[str]:
        """What the operator should read about the last catalog: each tool left out, once."""
        notes, self._notes = self._notes, []
        return notes

    def due(self, now: float) -> bool:
        """Is a fetch put off by ``REFETCH_EVERY`` due now?"""
        return self._deferred and not self.fetching and now >= self._done + REFETCH_EVERY

    def again(self) -> bool:
        """Was a fetch asked for while the last one was under way? (Asks only once.)"""
        again, self._again = self._again, False
        return again

    def answered(self, message: Message, origin: str | None, now: float) -> dict[str, Any] | Catalog | Broken:
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
        upstream = f"the upstream {origin!r}" if origin else "the upstream"
        try:
            more = self._pages.add(cast(list[Tool], tools), result.get("nextCursor"))
            if more and self.timeout and now - self._started > self.timeout:
                raise PagingError(f"did not end within {self.timeout:g} s")
        except PagingError as exc:
            self.fetching = False  # the first catalog fails the upstream; a later one keeps the last
            return Broken(f"{upstream}'s tools/list {exc}", fatal=self.catalog is None, said=True)
        if more:
            return self._pages.params()
        rejected: list[str] = []  # a bad tool is left out and named, never fatal
        catalog = Catalog.build(
            self._pages.entries, self.options, origin=origin, rejected=rejected, owner="the upstream"
        )
        if self.catalog is None:  # start-up: the configuration must name what the upstream has
            try:
                check_configuration(catalog)
            except CatalogError as exc:
                self.fetching = False
                return Broken(exc.message, fatal=True)
        self._notes += [note for note in rejected if note not in self._quarantined]
        self._quarantined.update(rejected)
        self.catalog = catalog
        self.fetching = False
        self._done = now
        self._pages = Pages()
        return catalog

    def _broken(self, reason: str) -> Broken:
        self.fetching = False
        return Broken(reason)
