"""One server, spoken to as its client: the sans-IO core both the proxy and the gateway hold per server.

Theory of operation. ``Upstream`` owns everything between lazymcp and one MCP server: the handshake
(its own, or the client's passing through), the server's protocol era, its tool list (every page of its
own ``tools/list``, fetched again after each ``list_changed``), every request in flight and every way
the server can fail. It speaks to the server in ``ToServer`` actions and tells its owner what the server
said in events; what the client sees is the owner's to decide:

- ``Reply(frame, pending)``: the server's answer to a request sent through ``forward``, once (a late or
  repeated answer is dropped, so none is duplicated); ``pending`` says what it answers.
- ``Asks(frame)``: the server's request to the client (sampling, elicitation, roots, ping).
- ``Notice(frame)``: a notification for the client. A ``tools/list_changed`` is held back until the
  new tool list is in place, so a client that lists again at once never sees the old one.
- ``Tools(catalog)``: a new tool list is in place (``Say`` names each tool left out of it).
- ``Opened(result, detail)``: the handshake lazymcp made itself ended (``result`` None: refused).
- ``Probed(era)``: the server's era, learnt from its answer to ``server/discover``.
- ``Broke(reason, late)``: the server broke the protocol, hung past the timeout (on request ``late``),
  or listed tools that cannot be served; ``Unlisted(reason)``: its first tool list failed.

lazymcp's own requests carry ids ``lazymcp-<random>-N``, so a client cannot pick one by chance or on
purpose; their answers never reach the client. Every wait is tracked in ``lazymcp.core.waits`` until its
one answer passes: ``fail`` answers each request still owed with an error frame, and ``expire`` finds
what waited too long: a server that hangs, or a client that leaves a request of the server's unanswered
past ``client_timeout`` (the server then gets an error for it, and the client a cancellation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, cast
from uuid import uuid4

from lazymcp.core.actions import Because, Carrying, Catalogued, Say, ToServer
from lazymcp.core.fetch import Broken, UpstreamTools
from lazymcp.core.waits import Pending, Waits
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.bridge import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    MODERN,
    PROTOCOL_VERSION_KEY,
    SUBSCRIPTION_ID_KEY,
    Envelope,
    meta,
)
from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.jsonrpc import Frame, Message, NotJSONRPC, RequestId
from lazymcp.protocol.limits import HELD_CHANGES, MAX_ASKED
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.options import Options

Era = Literal["legacy", "modern"]


@dataclass(slots=True)
class Reply:
    """The server's answer to a request of the client's, the only one it gets (events are handed on within
    one call, never kept: not frozen, which costs a fifth of a microsecond each on this path)."""

    frame: Frame
    pending: Pending


class Asks(Carrying):
    """The server's request to the client."""

    __slots__ = ()


class Notice(Carrying):
    """A notification of the server's for the client."""

    __slots__ = ()


class Tools(Catalogued):
    """The server's new tool list is in place."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Opened:
    """The handshake lazymcp made with the server ended: its result, or (None) why it was refused."""

    result: dict[str, Any] | None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Probed:
    """The server's era is known."""

    era: Era


@dataclass(frozen=True, slots=True)
class Broke(Because):
    """The server cannot be served any longer: it broke the protocol, hung, or its tools cannot be served."""

    late: RequestId | None = None
    """The request it hung on (its id as it was sent), when it hung."""


class Unlisted(Because):
    """The server's first tool list failed: there is no catalog to serve."""

    __slots__ = ()


Event = ToServer | Say | Reply | Asks | Notice | Tools | Opened | Probed | Broke | Unlisted


REFUSED_REQUEST = "the client speaks 2026-07-28, where servers send clients no requests"


def refused_request(request_id: object) -> Frame:
    """The answer to a server's request that a 2026-07-28 client cannot take."""
    text = f"Method not found: {REFUSED_REQUEST}"
    return Frame(jsonrpc.error_message(request_id, ErrorCode.METHOD_NOT_FOUND, text))


def too_many_asked(request_id: object) -> Frame:
    """The answer to a server's request past ``MAX_ASKED`` of its requests awaiting the client."""
    text = f"Too many requests: {MAX_ASKED} of this server's requests already await the client's answer"
    return Frame(jsonrpc.error_message(request_id, ErrorCode.INTERNAL_ERROR, text))


def _server_name(server_info: object) -> str | None:
    name = jsonrpc.field(server_info, "name")
    return name if isinstance(name, str) and name else None


@dataclass
class Upstream:
    """One server's side of a session. ``now`` arguments are monotonic seconds."""

    server: str
    """The server's name, on every ``ToServer``."""
    options: Options = field(default_factory=Options)
    """What its catalog is built with (the proxy's listing options; the gateway needs the tools alone)."""
    timeout: float | None = 300.0
    """Seconds the server may take to answer a request; past it the server counts as hung."""
    client_timeout: float | None = 600.0
    """Seconds the client may take to answer a request of the server's."""
    client_info: dict[str, str] = field(default_factory=lambda: {"name": "lazymcp", "version": "0"})
    """Who lazymcp says it is in its own requests to a 2026-07-28 server."""
    era: Era | None = None
    """The server's protocol era, once known."""
    failed: str | None = None
    """Why the server failed, once it has."""
    envelope: Envelope = field(default_factory=Envelope)
    """A 2026 server's result envelope (its hints and ``serverInfo``), as learnt from its answers."""
    handshake: dict[str, Any] | None = None
    """The server's ``initialize`` result, once a handshake (the client's or lazymcp's) is done."""
    waits: Waits = field(init=False)
    _tools: UpstreamTools = field(init=False)
    _prefix: str = field(default_factory=lambda: f"lazymcp-{uuid4().hex[:12]}-")
    _count: int = 0
    _listen_id: str | None = None
    _held: list[Frame] = field(default_factory=lambda: [])

    def __post_init__(self) -> None:
        self._tools = UpstreamTools(self.options, self.timeout)
        self.waits = Waits(self.timeout, self.client_timeout)

    @property
    def catalog(self) -> Catalog | None:
        """The latest catalog of the server's tools (None until the first is in)."""
        return self._tools.catalog

    @property
    def fetching(self) -> bool:
        """Is a tool list on its way?"""
        return self._tools.fetching

    @property
    def owed(self) -> int:
        """Client requests sent to the server and not yet answered."""
        return len(self.waits.forwarded)

    def owes(self, request_id: object) -> bool:
        """Is the client's request of this id waiting for the server's answer?"""
        return jsonrpc.id_key(request_id) in self.waits.forwarded

    def _to_server(self, frame: Frame) -> ToServer:
        return ToServer(frame, self.server)

    # --- the client's messages, on their way to the server ------------------------------------------

    def forward(self, frame: Frame, now: float, *, bridged: bool = False) -> list[ToServer]:
        """Send a client request, tracked and timed (``bridged``: its answer crosses from 2025 to 2026)."""
        message = frame.message
        method: str = message["method"]
        deadline = self.waits.deadline(now, stream=method == "subscriptions/listen")
        progress = meta(frame.params).get("progressToken")
        self.waits.forward(Pending(message["id"], method, deadline, bridged, progress))
        if method == "initialize" and self.era is None:
            self.era = "legacy"  # the client's own handshake: a 2025 conversation
        return [ToServer(frame, self.server)]

    def settle(self, request_id: object) -> None:
        """The client's request was cancelled: no answer is owed it any more."""
        self.waits.settle(request_id)

    def notify(self, frame: Frame) -> list[ToServer]:
        """Send a client notification (a cancellation settles the request it names)."""
        if frame.method == "notifications/cancelled":
            self.settle(frame.params.get("requestId"))
        return [self._to_server(frame)]

    def answer(self, frame: Frame, now: float) -> list[ToServer]:
        """Send the client's answer to a request of the server's (the server's clock runs again once the
        client owes it nothing)."""
        self.waits.client_answered(frame.id, now)
        return [self._to_server(frame)]

    # --- lazymcp's own requests -----------------------------------------------------------------------

    def _own(self, method: str, params: dict[str, Any], now: float, *, modern: bool | None = None) -> ToServer:
        self._count += 1
        request_id = f"{self._prefix}{self._count}"
        if modern if modern is not None else self.era == "modern":
            envelope = {PROTOCOL_VERSION_KEY: MODERN, CLIENT_INFO_KEY: self.client_info, CLIENT_CAPABILITIES_KEY: {}}
            params = {**params, "_meta": envelope}
        self.waits.own[request_id] = Pending(request_id, method, self.waits.deadline(now))
        return self._to_server(Frame({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))

    def open(self, params: dict[str, Any], now: float) -> list[Event]:
        """lazymcp's own 2025-11-25 handshake with the server (``params``: its ``initialize`` params)."""
        self.era = "legacy"
        return [self._own("initialize", params, now, modern=False)]

    def probe(self, now: float) -> list[Event]:
        """Ask the server for its era (``server/discover``, a 2026-07-28 request)."""
        return [self._own("server/discover", {}, now, modern=True)]

    def fetch(self, now: float) -> list[Event]:
        """Ask for the server's tools (another fetch follows one under way); a 2026 server is also asked
        for a ``subscriptions/listen`` stream of its tool changes, once."""
        params = self._tools.begin(now)
        if params is None:
            return []
        actions: list[Event] = [self._own("tools/list", params, now)]
        if self.era == "modern" and self._listen_id is None:
            listen = self._own("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, now)
            self._listen_id = f"{self._prefix}{self._count}"
            self.waits.own[self._listen_id].deadline = float("inf")  # a stream: answered only when it ends
            actions.append(listen)
        return actions

    # --- the server's messages ------------------------------------------------------------------------

    def receive(self, data: bytes, now: float, *, takes_requests: bool = True) -> list[Event]:
        """What one line from the server means (``takes_requests``: False when the client cannot take the
        server's requests, which are then refused to the server)."""
        try:
            frame = Frame.read(data)
        except NotJSONRPC as exc:
            return [Broke(f"the upstream wrote a line that is not JSON-RPC ({exc}): {data[:80]!r}")]
        message = frame.message
        if "method" in message and "id" not in message:
            return self._notification(frame, now)
        if "method" in message:
            if not takes_requests:  # a 2026-07-28 client takes no requests from its server
                return [self._to_server(refused_request(frame.id))]
            if len(self.waits.asked) >= MAX_ASKED:  # a flood of requests the client does not answer
                return [self._to_server(too_many_asked(frame.id))]
            self.waits.server_asked(frame.id, now)  # the server now waits on the client
            return [Asks(frame)]
        request_id = frame.id
        if isinstance(request_id, str) and request_id in self.waits.own:
            return self._own_answer(request_id, frame.message, now)
        pending = self.waits.settle(request_id)
        if pending is None:
            return []  # already answered (timed out, cancelled) or never asked: never a duplicate
        result = frame.message.get("result")
        if pending.method == "server/discover" and self.era is None:
            self.era = "modern" if isinstance(result, dict) else "legacy"
        if pending.method == "initialize" and isinstance(result, dict):
            self.handshake = cast(dict[str, Any], result)
        return [Reply(frame, pending)]

    def _notification(self, frame: Frame, now: float) -> list[Event]:
        method = frame.method
        params = frame.params
        if method == "notifications/cancelled":  # the server no longer waits on the client for it
            self.waits.client_answered(params.get("requestId"), now)
        elif method == "notifications/progress":
            self.waits.progressed(params.get("progressToken"), now)
        own_stream = self._listen_id is not None and meta(params).get(SUBSCRIPTION_ID_KEY) == self._listen_id
        if method == "notifications/tools/list_changed":
            if not own_stream and len(self._held) < HELD_CHANGES:
                self._held.append(frame)  # told once the new catalog is in place
            return self.fetch(now)
        if own_stream:
            return []  # the acknowledgement of lazymcp's own subscription
        return [Notice(frame)]

    def _own_answer(self, request_id: str, message: Message, now: float) -> list[Event]:
        pending = self.waits.own.pop(request_id)
        result = message.get("result")
        if pending.method == "server/discover":
            self.era = "modern" if isinstance(result, dict) else "legacy"
            return [Probed(self.era)]
        if pending.method == "initialize":
            if not isinstance(result, dict):
                return [Opened(None, str(jsonrpc.field(message.get("error"), "message") or "no result"))]
            self.handshake = cast(dict[str, Any], result)
            if "serverInfo" in self.handshake:
                self.envelope = Envelope(self.envelope.ttl_ms, self.envelope.cache_scope, self.handshake["serverInfo"])
            initialized = Frame({"jsonrpc": "2.0", "method": "notifications/initialized"})
            return [self._to_server(initialized), *self.fetch(now), Opened(self.handshake)]
        if pending.method != "tools/list":
            return []  # lazymcp's listen stream ended
        if self.era == "modern" and isinstance(result, dict):
            self.envelope = self.envelope.learn(cast(dict[str, Any], result))
        origin = _server_name(jsonrpc.field(self.handshake, "serverInfo")) or _server_name(self.envelope.server_info)
        step = self._tools.answered(message, origin, now)
        if isinstance(step, dict):
            return [self._own("tools/list", step, now)]
        if isinstance(step, Broken):
            if step.fatal:
                return [Broke(step.reason)]
            if step.said:
                return [Say(step.reason)]
            return [] if self.catalog is not None else [Unlisted(step.reason)]  # keep serving what we have
        held, self._held = self._held, []
        events: list[Event] = [Say(note) for note in self._tools.take_notes()]
        events += [Notice(frame) for frame in held]
        events.append(Tools(step))
        if self._tools.again():
            events += self.fetch(now)
        return events

    # --- faults -----------------------------------------------------------------------------------------

    def error(self, request_id: RequestId) -> Frame:
        """The answer to a client request the failed server owes."""
        reason = self.failed or "unknown"
        text = f"Upstream server failed: {reason}"
        return Frame(jsonrpc.error_message(request_id, ErrorCode.UPSTREAM_ERROR, text, {"reason": reason}))

    def fail(self, reason: str) -> list[Frame]:
        """The server failed: the answers to every request it still owed, and none waits any more."""
        if self.failed is None:
            self.failed = reason
        return [self.error(request_id) for request_id in self.waits.drop_all()]

    def expire(self, now: float) -> list[Event]:
        """The server counts as hung when a request has waited past the timeout (``Broke``); a request of
        the server's that the client left unanswered past its own timeout gets an error to the server
        and a cancellation to the client, and the server's clock runs again."""
        events: list[Event] = self.fetch(now) if self._tools.due(now) else []
        for request_id in self.waits.expired_asks(now):
            reason = f"the client did not answer within {self.client_timeout:g} s"
            error = jsonrpc.error_message(request_id, ErrorCode.REQUEST_TIMEOUT, f"Request timed out: {reason}")
            events.append(self._to_server(Frame({**error, "id": request_id})))  # its id, as it sent it
            cancel = {"requestId": request_id, "reason": reason}
            events.append(Notice(Frame({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})))
        late = self.waits.overdue(now)
        if late is None or self.failed is not None:
            return events
        return [*events, Broke(f"the upstream did not answer {late.method} within {self.timeout:g} s", late.request_id)]
