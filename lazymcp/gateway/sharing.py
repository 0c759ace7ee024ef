"""One server process shared by several sessions of one principal (HTTP): the ids, the handshake and the
routing between them, sans-IO. The process itself is ``lazymcp.run.shared_servers``'s.

Theory of operation. Each session attaches as a numbered lease and speaks to the server as if it were
its own (its ``Upstream`` is unchanged); ``Sharing`` rewrites what crosses:
- Every request a session sends gets a server-side id of the process's own (a counter), and its progress
  token becomes that id; the answer, the progress notifications and a cancellation find their session
  by it and get the session's own id and token back. No session can name another's request.
- The first session's ``initialize`` goes to the server; the server's result is kept, and every later
  session's ``initialize`` is answered with it here (one handshake per process); its ``initialized``
  notification is passed on once.
- A request of the server's (sampling, elicitation, roots/list, ping) goes to one session: the one whose
  request was sent most recently among those still waiting for an answer; when none waits, the one
  that sent a request most recently; with no session attached, it is refused with an error. Its id is
  the server's, unique on this process; the answer must come from the session asked, and a
  cancellation of it from the server goes there too.
- ``notifications/resources/updated`` goes to the sessions subscribed to that resource (a subscription
  reaches the server once, its last unsubscription too); every other notification of the server's
  (``list_changed``, log messages) goes to every session.
- A session that leaves has its requests still in flight cancelled at the server, and the server's
  requests to it answered with an error; all but the first ``initialize``, which is the process's and not
  the session's: the sessions waiting for it still get its answer, and the server ``initialized``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.jsonrpc import Frame

SERVER: Final = 0
"""The destination of a message for the server; sessions' leases are numbered from 1."""

Out = tuple[int, Frame]
"""A message and where it goes: ``SERVER``, or a lease."""


@dataclass
class _Lease:
    number: int
    last_sent: int = 0
    """The order of its last request (higher: more recent)."""
    waiting: dict[tuple[str, object], int] = field(default_factory=lambda: {})
    """Its requests awaiting an answer: its id's key to the server-side id."""


@dataclass
class _Call:
    lease: int
    original: object
    token: object = None
    """The session's own progress token, when it gave one."""
    method: object = None


class Sharing:
    """The sessions sharing one server process."""

    def __init__(self) -> None:
        self.leases: dict[int, _Lease] = {}
        self._numbers = itertools.count(1)
        self._ids = itertools.count(1)
        self._order = itertools.count(1)
        self.calls: dict[int, _Call] = {}
        """Server-side ids of the sessions' requests in flight."""
        self.asks: dict[tuple[str, object], int] = {}
        """The server's requests in flight, by its id's key: the lease asked."""
        self.subscribed: dict[str, set[int]] = {}
        self.result: dict[str, Any] | None = None
        """The server's ``initialize`` result, once it answered the first one."""
        self._opening: list[tuple[int, object]] | None = None
        """While the first ``initialize`` is in flight: the later ones, waiting for its answer."""
        self._initialized = False

    @property
    def busy(self) -> bool:
        """Does a request wait for an answer, either way?"""
        return bool(self.calls or self.asks)

    def attach(self) -> int:
        number = next(self._numbers)
        self.leases[number] = _Lease(number)
        return number

    def detach(self, number: int) -> list[Out]:
        """A session leaves: its requests in flight are cancelled, the server's to it refused."""
        lease = self.leases.pop(number, None)
        if lease is None:
            return []
        out: list[Out] = []
        for server_id in lease.waiting.values():
            call = self.calls.get(server_id)
            if call is not None and call.method == "initialize":
                call.lease = SERVER  # the process's handshake, never cancelled: its answer opens it for the rest
                continue
            self.calls.pop(server_id, None)
            params = {"requestId": server_id, "reason": "the session ended"}
            out.append((SERVER, Frame({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})))
        for key, asked in list(self.asks.items()):
            if asked == number:
                del self.asks[key]
                text = "The session the request went to has ended"
                out.append((SERVER, Frame(jsonrpc.error_message(key[1], ErrorCode.INTERNAL_ERROR, text))))
        for uri, numbers in list(self.subscribed.items()):
            numbers.discard(number)
            if not numbers:
                del self.subscribed[uri]
                out.append((SERVER, self._own("resources/unsubscribe", {"uri": uri})))
        if self._opening is not None:
            self._opening = [(n, i) for n, i in self._opening if n != number]
        return out

    def _own(self, method: str, params: dict[str, Any]) -> Frame:
        """A request of the sharing's own, whose answer goes nowhere."""
        server_id = next(self._ids)
        self.calls[server_id] = _Call(SERVER, None, method=method)
        return Frame({"jsonrpc": "2.0", "id": server_id, "method": method, "params": params})

    def from_session(self, number: int, frame: Frame) -> list[Out]:
        lease = self.leases.get(number)
        if lease is None:
            return []
        if frame.is_request:
            return self._request(lease, frame)
        if frame.is_answer:
            key = jsonrpc.id_key(frame.id)
            if self.asks.get(key) != number:
                return []  # not asked of this session: never let it answer another's
            del self.asks[key]
            return [(SERVER, frame)]
        if frame.method == "notifications/initialized":
            if self._initialized:
                return []
            self._initialized = True
            return [(SERVER, frame)]
        if frame.method == "notifications/cancelled":
            server_id = lease.waiting.get(jsonrpc.id_key(frame.params.get("requestId")))
            if server_id is None:
                return []
            return [(SERVER, frame.changed(params={**frame.params, "requestId": server_id}))]
        return [(SERVER, frame)]  # progress of a server's request names the server's own token, and the rest

    def _request(self, lease: _Lease, frame: Frame) -> list[Out]:
        method = frame.method
        if method == "initialize":
            if self.result is not None:
                return [(lease.number, Frame({"jsonrpc": "2.0", "id": frame.id, "result": self.result}))]
            if self._opening is not None:
                self._opening.append((lease.number, frame.id))
                return []
            self._opening = []
        uri = frame.params.get("uri")
        if method == "resources/subscribe" and isinstance(uri, str):
            numbers = self.subscribed.setdefault(uri, set())
            numbers.add(lease.number)
            if len(numbers) > 1:
                return [(lease.number, Frame({"jsonrpc": "2.0", "id": frame.id, "result": {}}))]
        if method == "resources/unsubscribe" and isinstance(uri, str):
            numbers = self.subscribed.get(uri, set())
            numbers.discard(lease.number)
            if numbers:
                return [(lease.number, Frame({"jsonrpc": "2.0", "id": frame.id, "result": {}}))]
            self.subscribed.pop(uri, None)
        server_id = next(self._ids)
        lease.waiting[jsonrpc.id_key(frame.id)] = server_id
        lease.last_sent = next(self._order)
        meta = jsonrpc.params_meta(frame.message)
        token = meta.get("progressToken")
        self.calls[server_id] = _Call(lease.number, frame.id, token, method)
        if token is None:
            return [(SERVER, frame.changed(id=server_id))]
        params = {**frame.params, "_meta": {**meta, "progressToken": server_id}}
        return [(SERVER, frame.changed(id=server_id, params=params))]

    def from_server(self, frame: Frame) -> list[Out]:
        if frame.is_answer:
            return self._answer(frame)
        if frame.is_request:
            number = self._asked()
            if number is None:
                text = "No session of this server's user is open to take the request"
                return [(SERVER, Frame(jsonrpc.error_message(frame.id, ErrorCode.INTERNAL_ERROR, text)))]
            self.asks[jsonrpc.id_key(frame.id)] = number
            return [(number, frame)]
        method = frame.method
        if method == "notifications/progress":
            call = self.calls.get(_int(frame.params.get("progressToken")))
            if call is None or call.token is None:
                return []
            return [(call.lease, frame.changed(params={**frame.params, "progressToken": call.token}))]
        if method == "notifications/cancelled":
            number = self.asks.pop(jsonrpc.id_key(frame.params.get("requestId")), None)
            return [] if number is None else [(number, frame)]
        if method == "notifications/resources/updated":
            uri = frame.params.get("uri")
            return [(n, frame) for n in sorted(self.subscribed.get(uri, ()) if isinstance(uri, str) else ())]
        return [(n, frame) for n in self.leases]

    def _answer(self, frame: Frame) -> list[Out]:
        server_id = _int(frame.id)
        call = self.calls.pop(server_id, None)
        if call is None:
            return []
        out = self._opened(frame, call.lease == SERVER) if call.method == "initialize" else []
        lease = self.leases.get(call.lease)
        if lease is None:
            return out  # its session left, or the sharing's own request
        lease.waiting.pop(jsonrpc.id_key(call.original), None)
        return [(lease.number, frame.changed(id=call.original)), *out]

    def _opened(self, frame: Frame, own: bool) -> list[Out]:
        """The first ``initialize`` is answered: the sessions that waited for it get the same answer (and
        when it was the sharing's own, ``reopen``'s, the server hears ``initialized`` now)."""
        waiting, self._opening = self._opening or [], None
        result = frame.message.get("result")
        if isinstance(result, dict):
            self.result = dict(result)  # pyright: ignore[reportUnknownArgumentType]
        out: list[Out] = [(n, frame.changed(id=request_id)) for n, request_id in waiting if n in self.leases]
        if own and self.result is not None and not self._initialized:
            self._initialized = True
            out.append((SERVER, Frame({"jsonrpc": "2.0", "method": "notifications/initialized"})))
        return out

    def reopen(self, params: dict[str, Any]) -> list[Out]:
        """Open a process started again for sessions that had opened its predecessor (stopped while idle):
        the ``initialize`` with ``params`` is the sharing's own, its answer kept and not passed on."""
        if self.result is not None or self._opening is not None:
            return []  # opened already, or being opened
        self._opening = []
        return [(SERVER, self._own("initialize", params))]

    def _asked(self) -> int | None:
        """The session a server's request goes to (see the module's docstring)."""
        waiting = [lease for lease in self.leases.values() if lease.waiting]
        chosen = _latest(waiting) or _latest(self.leases.values())
        return None if chosen is None else chosen.number


def _latest(leases: Iterable[_Lease]) -> _Lease | None:
    return max(leases, key=lambda lease: (lease.last_sent, lease.number), default=None)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
