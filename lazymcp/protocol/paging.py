"""Following ``nextCursor``: the one bounded loop over the pages of a listing, for every caller.

``Pages`` is sans-IO: the caller sends ``pages.params()`` however it sends requests (an SDK session,
a server's own handler, the proxy's upstream) and feeds each page's entries and cursor to
``pages.add``, until it returns False. A cursor that repeats, or pages past ``max_pages``, end the
walk with ``PagingError``: a peer whose cursor never ends cannot hold a request or grow memory forever.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lazymcp.protocol.limits import MAX_PAGES


class PagingError(ValueError):
    """A listing whose cursor loops or never ends."""


class Pages:
    """The state of one walk over a paginated listing requested with ``params``."""

    def __init__(self, params: Mapping[str, Any] | None = None, *, max_pages: int = MAX_PAGES) -> None:
        self.entries: list[Any] = []
        self._params = dict(params or {})
        self._cursor: str | None = None
        self._seen: set[str] = set()
        self._count = 0
        self._max_pages = max_pages

    def params(self) -> dict[str, Any]:
        """The params of the next page's request."""
        return self._params if self._cursor is None else {**self._params, "cursor": self._cursor}

    @property
    def count(self) -> int:
        """Pages read so far."""
        return self._count

    def add(self, entries: Iterable[Any], cursor: object) -> bool:
        """Take one page; True when there is another to request.

        Raises:
            PagingError: the cursor repeats one already followed, or the pages exceed the bound.
        """
        self._count += 1
        self.entries.extend(entries)
        if not isinstance(cursor, str) or not cursor:
            return False
        if self._count >= self._max_pages:
            raise PagingError(f"did not end within {self._max_pages} pages")
        if cursor in self._seen:
            raise PagingError(f"repeated the cursor {cursor[:80]!r}")
        self._seen.add(cursor)
        self._cursor = cursor
        return True
