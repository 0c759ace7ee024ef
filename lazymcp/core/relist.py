"""A dynamic session's answer to a call that changed its tool list, held until the client has listed
its tools again, or ``RELIST_WAIT`` has passed.

The client is told of the change (``notifications/tools/list_changed``) before the answer. A client
that builds its next request from the answer before its re-list completes (Claude Code over HTTP)
calls a tool it does not see yet ("No such tool available"); holding the answer until the client's
next ``tools/list`` has been answered, half a second or so at most, makes the new tools visible at once.
A client that does not re-list loses only that bounded wait.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from lazymcp.protocol.jsonrpc import Frame

RELIST_WAIT: Final = 0.75
"""Seconds an answer waits at most for the client's re-list (the driver looks every 0.25 s: under 1 s)."""


@dataclass
class Relist:
    """The answers held for a re-list, each with its deadline."""

    held: list[tuple[Frame, float]] = field(default_factory=lambda: [])

    def __len__(self) -> int:
        return len(self.held)

    def hold(self, answer: Frame, now: float) -> None:
        self.held.append((answer, now + RELIST_WAIT))

    def relisted(self) -> list[Frame]:
        """The client's re-list is answered: every held answer goes now."""
        held, self.held = self.held, []
        return [answer for answer, _ in held]

    def due(self, now: float) -> list[Frame]:
        """The answers whose wait is over."""
        due = [answer for answer, deadline in self.held if deadline <= now]
        self.held = [(answer, deadline) for answer, deadline in self.held if deadline > now]
        return due
