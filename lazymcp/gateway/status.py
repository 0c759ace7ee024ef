"""What the status of a running gateway says of each server (``lazymcp.run.status`` gathers the rest):
one server's state as the sessions that can be seen have it, merged into one line of plain data.

A server has a life in each session (``lazymcp.gateway.lifecycle``); over HTTP a principal's sessions
share its process, and a viewer granted ``metrics`` sees every principal's. The line says the most
alive of them: ``running`` (ready, with its processes' ids and since when) before ``starting`` before
``failed`` (with the reason of the latest failure, and until when it is refused, while its backoff lasts)
before ``not_started``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from lazymcp.gateway.lifecycle import Lifecycle, State

NOT_STARTED: Final = "not_started"
STARTING: Final = "starting"
RUNNING: Final = "running"
FAILED: Final = "failed"
RANK: Final = {State.READY: 3, State.SPAWNING: 2, State.WAITING: 2, State.OPENING: 2, State.DOWN: 1, State.IDLE: 0}
NAMES: Final = {3: RUNNING, 2: STARTING, 1: FAILED, 0: NOT_STARTED}


@dataclass(frozen=True, slots=True)
class Seen:
    """One session's server: its life, and its process (id, and when it started, in wall-clock seconds)."""

    life: Lifecycle
    pid: int | None = None
    since: float | None = None


def server_state(name: str, seen: Sequence[Seen], now: float, wall: float) -> dict[str, Any]:
    """The status of server ``name`` over the sessions that have it (none: not started). ``now`` is the
    monotonic time the lives count in; ``wall`` the wall-clock time at ``now``: the times it gives are
    wall-clock seconds."""
    rank = max((RANK[one.life.state] for one in seen), default=0)
    state: dict[str, Any] = {"name": name, "state": NAMES[rank]}
    alive = [one for one in seen if RANK[one.life.state] == rank]
    if rank >= RANK[State.SPAWNING]:
        state["pids"] = sorted({one.pid for one in alive if one.pid is not None})
        started = [one.since for one in alive if one.since is not None]
        state["since"] = min(started) if started else None
    failed = [one.life for one in seen if one.life.reason is not None and one.life.failed_at is not None]
    if failed:
        last = max(failed, key=lambda life: life.failed_at or 0.0)
        assert last.reason is not None and last.failed_at is not None
        state["reason"] = _own(name, last.reason)
        state["failed_at"] = wall - (now - last.failed_at)
        state["failures"] = max(life.failures for life in failed)
        if rank == RANK[State.DOWN] and last.refused(now):
            state["retry_at"] = wall + (last.retry_at - now)
    return state


def _own(name: str, reason: str) -> str:
    """A failure's reason without the server's name, which the line already says."""
    prefix = f"server {name!r}: "
    return reason[len(prefix) :] if reason.startswith(prefix) else reason
