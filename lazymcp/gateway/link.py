"""The gateway's vocabulary: the actions its core returns, and ``Link``, one server as the core sees it.

``ToClient``, ``Say`` and ``Fail`` are the router's own: bytes for the client, a line for the operator, and
the end of a transparent gateway's session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lazymcp.catalog import Catalog
from lazymcp.gateway.config import ServerEntry
from lazymcp.gateway.manifest import Listed
from lazymcp.messages import Tool
from lazymcp.router import Fail, Router, Say, ToClient

BACKOFF_FIRST = 1.0
"""Seconds a failed server is refused before the next call starts it again; doubled per failure in a row."""
BACKOFF_MAX = 60.0

__all__ = ["Action", "Fail", "Link", "Save", "Say", "Send", "Start", "Stop", "ToClient"]


@dataclass(frozen=True, slots=True)
class _ForServer:
    server: str
    """The server's name in the configuration."""


class Start(_ForServer):
    """Start the server's process or connection (the I/O then calls ``Gateway.started``)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Send(_ForServer):
    """Write ``data`` (one line) to the server."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Stop(_ForServer):
    """The server failed: end its process, saying ``reason``."""

    reason: str


@dataclass(frozen=True, slots=True)
class Save(_ForServer):
    """Write the server's manifest: its tools, version and other lists."""

    tools: Sequence[Tool]
    version: str | None
    lists: Mapping[str, Listed | list[Any]] = field(default_factory=lambda: {})


Action = ToClient | Send | Start | Stop | Save | Say | Fail


@dataclass
class Link:
    """One server: its entry, its router while it runs, its last known tools and its faults."""

    entry: ServerEntry
    tools: Sequence[Tool] | None = None
    """Its last tool list: the router's, or the manifest's (``Packed``)."""
    version: str | None = None
    router: Router | None = None
    state: str = "idle"
    """idle (not running), spawned (waiting for the client's initialize), starting (handshake under way),
    ready, or down (failed)."""
    queued: list[bytes] = field(default_factory=lambda: [])
    failures: int = 0
    retry_at: float = 0.0
    reason: str | None = None
    seen: Catalog | None = None
    lists: dict[str, Listed | list[Any]] = field(default_factory=lambda: {})
    """Its last prompt, resource and template lists, by method: listed without starting it (bare: fetched
    in this run)."""

    def failed(self, reason: str, now: float) -> None:
        """The server is down: no router, and refused until its backoff has passed."""
        self.router, self.state, self.reason = None, "down", reason
        self.failures += 1
        self.retry_at = now + min(BACKOFF_FIRST * 2 ** (self.failures - 1), BACKOFF_MAX)

    def refused(self, now: float) -> bool:
        """Is it down, within its backoff?"""
        return self.state == "down" and now < self.retry_at
