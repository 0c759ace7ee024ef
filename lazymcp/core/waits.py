"""Every wait of one server's side of a session and when it ends: the client's requests forwarded to it, the
proxy's own requests, and the upstream's requests to the client (spec/lazy-tools.md, "Limits").

Sans-IO: ``lazymcp.core.upstream`` records and settles waits; ``overdue`` and ``expired_asks`` tell it which ran out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lazymcp.protocol.jsonrpc import RequestId, id_key

Key = tuple[str, object]


@dataclass(slots=True)
class Pending:
    """A request waiting for the upstream's answer."""

    request_id: RequestId
    method: str
    deadline: float
    bridged: bool = False
    progress: object = None
    """The request's progress token: progress on it shows the upstream is working, not hung."""


@dataclass
class Waits:
    """The waits of one connection. ``timeout``: the upstream's time per request; ``client_timeout``:
    the client's time to answer the upstream's requests (None: no limit)."""

    timeout: float | None = None
    client_timeout: float | None = None
    forwarded: dict[Key, Pending] = field(default_factory=lambda: {})
    """The client's requests sent upstream and not yet answered."""
    own: dict[str, Pending] = field(default_factory=lambda: {})
    """The proxy's own requests to the upstream, by id."""
    asked: dict[Key, tuple[float, object]] = field(default_factory=lambda: {})
    """The upstream's requests to the client not yet answered: when each was sent, and its id."""

    def deadline(self, now: float, *, stream: bool = False) -> float:
        """When a request sent now counts as unanswered (a stream is answered only when it ends)."""
        return now + self.timeout if self.timeout and not stream else float("inf")

    def forward(self, pending: Pending) -> None:
        self.forwarded[id_key(pending.request_id)] = pending

    def settle(self, request_id: object) -> Pending | None:
        """The forwarded request this answer is for, no longer waiting; None when none is (never a duplicate)."""
        return self.forwarded.pop(id_key(request_id), None)

    def progressed(self, token: object, now: float) -> None:
        """Progress on a request restarts its clock: it is working, not hung."""
        if self.timeout and token is not None:
            for pending in self.forwarded.values():
                if pending.progress == token:
                    pending.deadline = now + self.timeout

    def server_asked(self, request_id: object, now: float) -> None:
        self.asked[id_key(request_id)] = (now, request_id)

    def client_answered(self, request_id: object, now: float) -> None:
        """The client answered the upstream: once it owes nothing more, the upstream's clock runs again."""
        if self.asked.pop(id_key(request_id), None) is not None and not self.asked:
            self.extend(now)

    def extend(self, now: float) -> None:
        if self.timeout:
            for pending in (*self.forwarded.values(), *self.own.values()):
                pending.deadline = max(pending.deadline, now + self.timeout)

    def expired_asks(self, now: float) -> list[object]:
        """The ids of the upstream's requests the client left unanswered past ``client_timeout``, dropped."""
        if not self.client_timeout:
            return []
        expired = [key for key, (since, _) in self.asked.items() if now - since >= self.client_timeout]
        return [self.asked.pop(key)[1] for key in expired]

    def overdue(self, now: float) -> Pending | None:
        """A request the upstream has not answered in time. Time it spends waiting on the client's
        answer to its own request (a user filling in an elicitation, a sampling call) does not count."""
        if self.asked:
            self.extend(now)
            return None
        return next((p for p in (*self.forwarded.values(), *self.own.values()) if p.deadline <= now), None)

    def drop_all(self) -> list[RequestId]:
        """Forget every wait; the ids of the client's requests that were still owed an answer."""
        owed = [pending.request_id for pending in self.forwarded.values()]
        self.forwarded.clear()
        self.own.clear()
        return owed
