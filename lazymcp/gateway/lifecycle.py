"""A server's life behind the gateway, as one state machine: its states, the one table of legal moves,
and the backoff of a server that failed.

Theory of operation. A server is ``IDLE`` until something needs it (its tools come from its manifest
meanwhile). Starting it makes it ``SPAWNING``; once its process or connection runs it is ``OPENING``
(the gateway's ``initialize`` sent), or ``WAITING`` first when the client has not yet said who it is
(the handshake passes on the client's capabilities). Its answer makes it ``READY``. Any failure while
it runs makes it ``DOWN``: refused for a backoff (``BACKOFF_FIRST`` seconds, doubled for each failure,
at most ``BACKOFF_MAX``), after which the next call starts it again. Every move goes through
``Lifecycle.move``, which refuses one the table does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

BACKOFF_FIRST = 1.0
"""Seconds a failed server is refused before the next call starts it again; doubled per failure."""
BACKOFF_MAX = 60.0


class State(Enum):
    IDLE = "idle"
    """Not running: its tools come from its manifest."""
    SPAWNING = "spawning"
    """Its process or connection is being started."""
    WAITING = "waiting"
    """Running; its handshake waits for the client's ``initialize``."""
    OPENING = "opening"
    """The gateway's ``initialize`` is sent; calls wait for its answer."""
    READY = "ready"
    """Calls go straight to it."""
    DOWN = "down"
    """It failed: refused until its backoff has passed."""


TRANSITIONS: Final[dict[State, frozenset[State]]] = {
    State.IDLE: frozenset({State.SPAWNING}),
    State.SPAWNING: frozenset({State.WAITING, State.OPENING, State.DOWN}),
    State.WAITING: frozenset({State.OPENING, State.DOWN}),
    State.OPENING: frozenset({State.READY, State.DOWN}),
    State.READY: frozenset({State.DOWN}),
    State.DOWN: frozenset({State.SPAWNING}),
}
"""Every legal move, by the state it leaves."""


class IllegalMove(RuntimeError):
    """A move the table does not hold: a bug of the gateway's, never a server's doing."""


@dataclass
class Lifecycle:
    """Where one server is in its life, and its failures."""

    state: State = State.IDLE
    failures: int = 0
    retry_at: float = 0.0
    reason: str | None = None
    """Why it last failed."""
    failed_at: float | None = None
    """When it last failed."""

    def move(self, to: State) -> None:
        """Go to ``to``.

        Raises:
            IllegalMove: the table has no such move.
        """
        if to not in TRANSITIONS[self.state]:
            raise IllegalMove(f"a server cannot go from {self.state.value} to {to.value}")
        self.state = to

    def fail(self, reason: str, now: float) -> None:
        """The server is down, refused until its backoff has passed."""
        self.move(State.DOWN)
        self.reason = reason
        self.failed_at = now
        self.failures += 1
        self.retry_at = now + min(BACKOFF_FIRST * 2 ** (self.failures - 1), BACKOFF_MAX)

    @property
    def running(self) -> bool:
        """Is its process or connection started (whatever its handshake's progress)?"""
        return self.state in (State.SPAWNING, State.WAITING, State.OPENING, State.READY)

    @property
    def stopped(self) -> bool:
        """Idle or down: the next call starts it (once a failed server's backoff has passed)."""
        return self.state in (State.IDLE, State.DOWN)

    def refused(self, now: float) -> bool:
        """Is it down, within its backoff?"""
        return self.state is State.DOWN and now < self.retry_at
