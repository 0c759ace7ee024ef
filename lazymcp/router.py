"""The proxy's sans-IO core: JSON-RPC lines in, decisions out.

Theory of operation. The proxy sits between one client (downstream) and one MCP server (upstream).
``Router.from_client`` and ``Router.from_server`` take one line each and return what to do with it:
``ToClient(line)``, ``ToServer(line)`` (lines without their newline), ``Say(text)`` for the operator,
or ``Fail(reason)`` when the upstream broke the protocol. The I/O adapter carries these out and does
nothing else, so every rule lives here.

- Everything but tool listing passes through as the very bytes that arrived (the fast path):
  resources, prompts, completions, logging, progress, cancellation, and requests the server sends
  the client (sampling, elicitation, roots) with their answers.
- Every ``tools/*`` request goes to ``lazymcp.methods.dispatch`` (the same door as the SDK adapter's),
  over a catalog built from every page of the upstream's own ``tools/list``. What it answers goes to
  the client; a call it leaves to the server goes upstream unchanged, or as the real tool's call
  (``invoke_tool``, same id). A ``dynamic`` session is this router's, since a router serves one
  2025-11-25 client, and a change to its tools is announced with ``list_changed``.
  The configuration's tool names are checked against the first catalog: a name the upstream lacks
  fails the proxy at start-up.
- The catalog follows the upstream: its first fetch follows the client's handshake (2025-11-25) or
  first request (2026-07-28, where the proxy also opens its own ``subscriptions/listen``). An upstream
  ``notifications/tools/list_changed`` starts a refetch, and the notification reaches the client only
  once the new catalog is in place, so a client that re-lists at once never sees the old one.
- Eras. Each side's protocol era is learnt from its first messages (a client's ``initialize`` or
  request envelope; the upstream's answer to ``server/discover``). When both speak the same era, the
  rules above are all there is. When a 2026-07-28 client meets a 2025-11-25-only upstream, the proxy
  bridges: it performs the upstream's handshake itself, strips the request envelope on the way up,
  shapes results as a 2026 server would on the way down (``lazymcp.bridge``), answers ``server/discover``
  and ``subscriptions/listen`` itself, and turns the upstream's change notifications into events on the
  client's listen streams. Requests from the upstream to the client cannot cross into 2026-07-28, where
  servers make none; the proxy declares no client capabilities upstream and refuses any that come.
- The proxy's own requests carry ids of the form ``lazymcp-<random>-N``; their answers never reach the client.
- Every wait is tracked in ``lazymcp.waits`` until its one answer passes: the client's requests
  upstream, the proxy's own, and the upstream's requests to the client (bounded by ``client_timeout``).
  When the upstream dies, hangs past the timeout, or writes garbage, ``upstream_failed`` answers each
  tracked request with an error, so none is left hanging; a late answer to an already-answered request
  is dropped, so none is duplicated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from uuid import uuid4

import orjson

from lazymcp import jsonrpc
from lazymcp.bridge import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LIST_CHANGED,
    MODERN,
    PROTOCOL_VERSION_KEY,
    SUBSCRIPTION_ID_KEY,
    Bridge,
    Envelope,
    Serializer,
    is_modern,
    meta,
)
from lazymcp.catalog import Catalog
from lazymcp.errors import ErrorCode, LazyMCPError
from lazymcp.jsonrpc import Message, NotJSONRPC, RequestId, id_key
from lazymcp.limits import CLIENT_TIMEOUT
from lazymcp.methods import METHODS, Answer, Caller, Run, advertise, declares, dispatch
from lazymcp.modes import DynamicSession
from lazymcp.options import Options
from lazymcp.upstream_tools import Broken, UpstreamTools
from lazymcp.waits import Pending, Waits

TOOL_METHODS = frozenset(METHODS)

Era = Literal["legacy", "modern"]


@dataclass(frozen=True, slots=True)
class _Line:
    data: bytes
    """One JSON-RPC message, without its newline."""


class ToClient(_Line):
    """Write this line to the client."""

    __slots__ = ()


class ToServer(_Line):
    """Write this line to the upstream."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Fail:
    """The upstream broke the protocol; the adapter reports ``reason`` and shuts down."""

    reason: str


@dataclass(frozen=True, slots=True)
class Say:
    """Something the operator should read (on stderr); the session goes on."""

    text: str


Action = ToClient | ToServer | Fail | Say


def _declares(capabilities: object) -> bool:
    return declares(jsonrpc.field(capabilities, "extensions"))


def _server_name(server_info: object) -> str | None:
    name = jsonrpc.field(server_info, "name")
    return name if isinstance(name, str) and name else None


def _params(message: Message) -> dict[str, Any]:
    params = message.get("params")
    return cast(dict[str, Any], params) if isinstance(params, dict) else {}


@dataclass
class Router:
    """The decisions of one proxy connection. ``now`` arguments are monotonic seconds."""

    options: Options = field(default_factory=Options)
    timeout: float | None = 300.0
    """Seconds the upstream may take to answer a request; past it the upstream counts as hung."""
    client_info: dict[str, str] = field(default_factory=lambda: {"name": "lazymcp-proxy", "version": "0"})
    serialize: Serializer | None = None
    """The 2026 wire model bridged results go through (the adapter injects the SDK's)."""
    client_timeout: float | None = CLIENT_TIMEOUT
    """Seconds the client may take to answer a request of the upstream's (a user filling in a form)."""

    era: Era | None = None
    """The client's protocol era."""
    upstream_era: Era | None = None
    failed: str | None = None
    _declared: bool = False  # the 2025 client declared the extension at initialize
    _init_key: tuple[str, object] | None = None
    _waits: Waits = field(init=False)
    _own_count: int = 0
    _listen_id: str | None = None
    _tools: UpstreamTools = field(init=False)
    _waiting: list[tuple[Message, bytes]] = field(default_factory=lambda: [])
    _held: list[bytes] = field(default_factory=lambda: [])
    _envelope: Envelope = field(default_factory=Envelope)  # the upstream's 2026 hints and serverInfo
    _own_prefix: str = field(default_factory=lambda: f"lazymcp-{uuid4().hex[:12]}-")
    """The proxy's own request ids: random, so a client cannot pick one of them by chance or on purpose."""
    _probing: bool = False
    _queued: list[bytes] = field(default_factory=lambda: [])  # client lines waiting for the upstream's era
    _bridge: Bridge = field(default_factory=Bridge)
    _session: DynamicSession = field(default_factory=DynamicSession)  # the one 2025 client's dynamic-mode tools
    _server_name: str | None = None  # the upstream's serverInfo.name: a derived category (§17.6)

    def __post_init__(self) -> None:
        self._bridge.serialize = self.serialize
        self._tools = UpstreamTools(self.options, self.timeout)
        self._waits = Waits(self.timeout, self.client_timeout)

    @property
    def catalog(self) -> Catalog | None:
        """The latest catalog of the upstream's tools (None until the first is built)."""
        return self._tools.catalog

    @property
    def bridging(self) -> bool:
        """A 2026-07-28 client in front of a 2025-11-25 upstream."""
        return self.era == "modern" and self.upstream_era == "legacy"

    # --- client -> server ----------------------------------------------------------------------

    def from_client(self, line: bytes, now: float, message: Message | None = None) -> list[Action]:
        """Decide what to do with one line from the client (``message``: the line, when already parsed)."""
        parsed = jsonrpc.parse_or_refuse(line, message)
        if isinstance(parsed, bytes):
            return [ToClient(parsed)]
        message = parsed
        method = message.get("method")
        if "method" not in message:  # the client's answer to a server-initiated request
            self._waits.client_answered(message.get("id"), now)
            return [ToServer(line)]
        if "id" not in message:
            return self._client_notification(message, line, now)
        request_id = message["id"]
        if not isinstance(method, str) or not jsonrpc.valid_id(request_id):
            return [ToClient(jsonrpc.error_line(None, ErrorCode.INVALID_REQUEST, "Invalid request"))]
        if self.failed is not None:
            return [ToClient(self._failure_line(request_id))]
        if "params" in message and not isinstance(message["params"], dict):
            # MCP params are objects; servers built on the SDK drop anything else unanswered, which
            # would leave the request hanging until the proxy counted the upstream as hung.
            data = {"field": "params", "reason": "type"}
            error = jsonrpc.error_line(request_id, ErrorCode.INVALID_PARAMS, "Invalid params: expected an object", data)
            return [ToClient(error)]
        params = _params(message)
        if self.era is None:
            if method == "initialize":
                self.era = self.upstream_era = "legacy"
            elif is_modern(params) and method != "server/discover":
                self.era = "modern"
        if self._upstream_pending():
            self._queued.append(line)  # nothing goes up before the upstream's era is known and met
            return self._probe(now)
        if self.bridging:
            answer = self._bridge.answer(message, lambda: advertise(self._bridge.upstream_init, self.options))
            if answer is not None:
                return [ToClient(answer)]
        if method == "initialize" and not self.bridging:
            self._declared = _declares(params.get("capabilities"))
            self._init_key = id_key(request_id)
        elif method in TOOL_METHODS:
            if self.catalog is None:
                if self.era != "modern" and not self._tools.fetching:  # would wait for an initialized never sent
                    return [ToClient(_too_early(request_id))]
                self._waiting.append((message, line))
                return self._start_fetch(now) if self.era == "modern" and not self.bridging else []
            return self._answer(message, line, now)
        return self._forward(message, line, now)

    def _client_notification(self, message: Message, line: bytes, now: float) -> list[Action]:
        if self._upstream_pending():
            self._queued.append(line)
            return []
        method = message.get("method")
        if self.bridging:
            if method == "notifications/cancelled":
                self._bridge.cancelled(_params(message).get("requestId"))
            line = self._bridge.upstream_line(message)
        actions: list[Action] = [ToServer(line)]
        if method == "notifications/initialized" and self.era == "legacy":
            actions += self._start_fetch(now)
        elif method == "notifications/cancelled":
            self._waits.settle(_params(message).get("requestId"))  # no answer is owed for a cancelled request
        return actions

    def forward(self, message: Message, line: bytes | None, now: float) -> list[Action]:
        """Send upstream a client request another core has already decided (a gateway's routed call):
        tracked, timed and failed like any other, without being looked at again."""
        return self._forward(message, line, now)

    def owes(self, request_id: object) -> bool:
        """Is the client's request of this id waiting for the upstream's answer?"""
        return id_key(request_id) in self._waits.forwarded

    def _forward(self, message: Message, line: bytes | None, now: float) -> list[Action]:
        """Send a client request upstream (``line``: its bytes as they came, None: encode ``message``)."""
        request_id: RequestId = message["id"]
        method: str = message["method"]
        deadline = self._waits.deadline(now, stream=method == "subscriptions/listen")
        progress = meta(_params(message)).get("progressToken")
        self._waits.forward(Pending(request_id, method, deadline, self.bridging, progress))
        try:
            if self.bridging:  # the envelope stays behind: a 2025 server does not know it
                line = self._bridge.upstream_line(message)
            elif line is None:
                line = jsonrpc.encode(message)
        except orjson.JSONEncodeError:
            self._waits.settle(request_id)
            error = jsonrpc.error_line(request_id, ErrorCode.INVALID_REQUEST, "Invalid request: nested too deeply")
            return [ToClient(error)]
        return [ToServer(line)]

    def _answer(self, message: Message, line: bytes, now: float) -> list[Action]:
        """A ``tools/*`` request through the one door: answered here, or the call the upstream runs."""
        catalog = self.catalog
        assert catalog is not None
        request_id: RequestId = message["id"]
        method: str = message["method"]
        params: object = message.get("params")
        modern = is_modern(_params(message))
        caller = Caller(
            declared=self._client_declared(_params(message), modern),
            session=None if modern or self.options.mode != "dynamic" else self._session,
            envelope=self._envelope if modern else None,
        )
        try:
            outcome = dispatch(method, catalog, params, caller)
        except LazyMCPError as exc:
            return [ToClient(jsonrpc.error_from(request_id, exc))]
        if isinstance(outcome, Run):  # invoke_tool: the real tool's call, under the same id
            call = {**message, "params": {**_params(message), "name": outcome.name, "arguments": outcome.arguments}}
            return self._forward(call, None, now)
        if not isinstance(outcome, Answer):
            return self._forward(message, line, now)
        answer = ToClient(jsonrpc.result_line(request_id, outcome.result))
        if outcome.changed:  # only a 2025 session changes: tell it before it reads the answer
            return [ToClient(jsonrpc.notification_line("notifications/tools/list_changed")), answer]
        return [answer]

    def _client_declared(self, params: Mapping[str, Any], modern: bool) -> bool:
        if not modern:
            return self._declared
        return _declares(meta(params).get(CLIENT_CAPABILITIES_KEY))

    # --- server -> client ----------------------------------------------------------------------

    def from_server(self, line: bytes, now: float) -> list[Action]:
        """Decide what to do with one line from the upstream."""
        try:
            message = jsonrpc.parse(line)
        except NotJSONRPC as exc:
            return [Fail(f"the upstream wrote a line that is not JSON-RPC ({exc}): {line[:80]!r}")]
        method = message.get("method")
        if method is not None:
            if "id" not in message:
                return self._server_notification(message, line, now)
            if self.bridging:  # a 2026 client takes no requests from its server
                refusal = "the client speaks 2026-07-28, where servers send clients no requests"
                error = jsonrpc.error_line(message["id"], ErrorCode.METHOD_NOT_FOUND, f"Method not found: {refusal}")
                return [ToServer(error)]
            self._waits.server_asked(message["id"], now)  # the upstream now waits on the client
            return [ToClient(line)]  # a request to the client: sampling, elicitation, roots, ping
        request_id = message.get("id")
        if isinstance(request_id, str) and request_id in self._waits.own:
            return self._own_response(request_id, message, now)
        key = id_key(request_id)
        pending = self._waits.settle(request_id)
        if pending is None:
            return []  # already answered (timed out, cancelled) or never asked: never a duplicate
        result = message.get("result")
        if pending.method == "server/discover" and self.upstream_era is None:
            self.upstream_era = "modern" if isinstance(result, dict) else "legacy"
        if isinstance(result, dict) and key == self._init_key:
            self._server_name = _server_name(jsonrpc.field(cast(object, result), "serverInfo"))
        if isinstance(result, dict) and (key == self._init_key or pending.method == "server/discover"):
            advertised = advertise(cast(dict[str, Any], result), self.options)
            return [ToClient(jsonrpc.encode({**message, "result": advertised}))]
        if pending.bridged and isinstance(result, dict):
            shaped = self._bridge.result(pending.method, cast(dict[str, Any], result), self._envelope.server_info)
            return [ToClient(jsonrpc.encode({**message, "result": shaped}))]
        return [ToClient(line)]

    def _server_notification(self, message: Message, line: bytes, now: float) -> list[Action]:
        method = message.get("method")
        if method == "notifications/cancelled":  # the upstream no longer waits on the client for it
            self._waits.client_answered(_params(message).get("requestId"), now)
        if method == "notifications/progress":
            self._waits.progressed(_params(message).get("progressToken"), now)
        subscription = meta(_params(message)).get(SUBSCRIPTION_ID_KEY)
        own_stream = self._listen_id is not None and subscription == self._listen_id
        if method == "notifications/tools/list_changed":
            if not own_stream:
                self._held.append(line)  # delivered once the new catalog is in place
            return self._start_fetch(now)
        if own_stream:
            return []  # the acknowledgement of the proxy's own subscription
        if self.bridging and isinstance(method, str) and method in LIST_CHANGED:
            return [ToClient(event) for event in self._bridge.to_listeners(method)]
        return [ToClient(line)]

    def _release_held(self) -> list[Action]:
        held, self._held = self._held, []
        if self.bridging:
            events = self._bridge.to_listeners("notifications/tools/list_changed") if held else []
            return [ToClient(event) for event in events]
        return [ToClient(line) for line in held]

    # --- the catalog ---------------------------------------------------------------------------

    def _own_request(self, method: str, params: dict[str, Any], now: float, *, modern: bool | None = None) -> ToServer:
        self._own_count += 1
        request_id = f"{self._own_prefix}{self._own_count}"
        if modern if modern is not None else self.upstream_era == "modern":
            envelope = {PROTOCOL_VERSION_KEY: MODERN, CLIENT_INFO_KEY: self.client_info, CLIENT_CAPABILITIES_KEY: {}}
            params = {**params, "_meta": envelope}
        self._waits.own[request_id] = Pending(request_id, method, self._waits.deadline(now))
        return ToServer(jsonrpc.request_line(request_id, method, params))

    def _start_fetch(self, now: float) -> list[Action]:
        params = self._tools.begin(now)
        if params is None:
            return []
        actions: list[Action] = [self._own_request("tools/list", params, now)]
        if self.upstream_era == "modern" and self._listen_id is None:
            listen = self._own_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, now)
            self._listen_id = f"{self._own_prefix}{self._own_count}"
            self._waits.own[self._listen_id].deadline = float("inf")  # a stream: answered only when it ends
            actions.append(listen)
        return actions

    def _own_response(self, request_id: str, message: Message, now: float) -> list[Action]:
        pending = self._waits.own.pop(request_id)
        if pending.method == "server/discover":
            return self._probed(message, now)
        if pending.method == "initialize":
            return self._upstream_initialized(message, now)
        if pending.method != "tools/list":
            return []  # the proxy's listen stream ended
        result = message.get("result")
        if self.upstream_era == "modern" and isinstance(result, dict):
            self._envelope = self._envelope.learn(cast(dict[str, Any], result))
        step = self._tools.answered(message, self._server_name or _server_name(self._envelope.server_info), now)
        if isinstance(step, dict):
            return [self._own_request("tools/list", step, now)]
        if isinstance(step, Broken):
            if step.fatal:
                return [Fail(step.reason)]
            if step.said:
                return [Say(step.reason)]
            return [] if self.catalog is not None else self.upstream_failed(step.reason)  # keep serving what we have
        actions: list[Action] = [Say(note) for note in self._tools.take_notes()]
        actions += self._release_held()
        waiting, self._waiting = self._waiting, []
        for waiting_message, waiting_line in waiting:
            actions += self._answer(waiting_message, waiting_line, now)
        if self._tools.again():
            actions += self._start_fetch(now)
        return actions

    def _upstream_pending(self) -> bool:
        """Is a 2026 client waiting for the upstream's era to be learnt, or for the bridge's handshake?"""
        if self.era != "modern":
            return False
        return self.upstream_era is None or (self.upstream_era == "legacy" and not self._bridge.upstream_init)

    def _probe(self, now: float) -> list[Action]:
        """Learn the upstream's era, then (for a 2025 upstream) perform its handshake; once."""
        if self._probing:
            return []
        self._probing = True
        if self.upstream_era is None:
            return [self._own_request("server/discover", {}, now, modern=True)]
        return self._initialize_upstream(now)

    def _probed(self, message: Message, now: float) -> list[Action]:
        if isinstance(message.get("result"), dict):
            self.upstream_era = "modern"
            return self._replay(now)
        self.upstream_era = "legacy"
        return self._initialize_upstream(now)

    def _initialize_upstream(self, now: float) -> list[Action]:
        """The bridge: the proxy becomes the 2025 upstream's client."""
        return [self._own_request("initialize", self._bridge.handshake(self.client_info), now, modern=False)]

    def _upstream_initialized(self, message: Message, now: float) -> list[Action]:
        result = message.get("result")
        if not isinstance(result, dict):
            detail = jsonrpc.field(message.get("error"), "message") or "no result"
            return self.upstream_failed(f"the upstream refused the proxy's initialize: {detail}")
        init = self._bridge.upstream_init = cast(dict[str, Any], result)
        if "serverInfo" in init:
            self._envelope = Envelope(self._envelope.ttl_ms, self._envelope.cache_scope, init["serverInfo"])
        actions: list[Action] = [ToServer(jsonrpc.notification_line("notifications/initialized"))]
        return actions + self._start_fetch(now) + self._replay(now)

    def _replay(self, now: float) -> list[Action]:
        queued, self._queued = self._queued, []
        actions: list[Action] = []
        for line in queued:
            actions += self.from_client(line, now)
        return actions

    # --- faults --------------------------------------------------------------------------------

    def _failure_line(self, request_id: RequestId) -> bytes:
        reason = self.failed or "unknown"
        return jsonrpc.error_line(
            request_id, ErrorCode.UPSTREAM_ERROR, f"Upstream server failed: {reason}", {"reason": reason}
        )

    def upstream_failed(self, reason: str) -> list[Action]:
        """Answer every request still owed an answer with an error; later requests get one at once."""
        if self.failed is None:
            self.failed = reason
        owed = self._waits.drop_all()
        owed += [message["id"] for message, _ in self._waiting]
        for line in self._queued:
            queued = jsonrpc.parse(line)
            if "id" in queued and "method" in queued:
                owed.append(queued["id"])
        self._queued.clear()
        self._waiting.clear()
        return [ToClient(self._failure_line(request_id)) for request_id in owed]

    def expire(self, now: float) -> list[Action]:
        """Fail the upstream when a request has waited past the timeout (it hangs); a request of the
        upstream's that the client left unanswered past its own timeout gets an error upstream and a
        cancellation to the client, and the upstream's clock runs again."""
        actions: list[Action] = []
        for request_id in self._waits.expired_asks(now):
            reason = f"the client did not answer within {self.client_timeout:g} s"
            error = jsonrpc.error_message(request_id, ErrorCode.REQUEST_TIMEOUT, f"Request timed out: {reason}")
            actions.append(ToServer(jsonrpc.encode({**error, "id": request_id})))  # the upstream's id, as it sent it
            cancel = {"requestId": request_id, "reason": reason}
            actions.append(ToClient(jsonrpc.notification_line("notifications/cancelled", cancel)))
        late = self._waits.overdue(now)
        if late is None or self.failed is not None:
            return actions
        return [*actions, Fail(f"the upstream did not answer {late.method} within {self.timeout:g} s")]

    @property
    def owed(self) -> int:
        """Requests forwarded upstream and not yet answered."""
        queued = sum(1 for line in self._queued if b'"method"' in line and b'"id"' in line)
        return len(self._waits.forwarded) + len(self._waiting) + queued


def _too_early(request_id: RequestId) -> bytes:
    reason = "tools are listed once the client has sent notifications/initialized"
    return jsonrpc.error_line(request_id, ErrorCode.INVALID_REQUEST, f"Invalid request: {reason}")
