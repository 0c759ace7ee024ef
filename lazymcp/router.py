"""The proxy's sans-IO core: JSON-RPC lines in, decisions out.

Theory of operation. The proxy sits between one client (downstream) and one MCP server (upstream).
``Router.from_client`` and ``Router.from_server`` take one line each and return what to do with it:
``ToClient(line)``, ``ToServer(line)`` (lines without their newline), or ``Fail(reason)`` when the
upstream broke the protocol. The I/O adapter carries these out and does nothing else, so every rule lives here.

- Everything but tool listing passes through as the very bytes that arrived (the fast path):
  resources, prompts, completions, logging, progress, cancellation, and requests the server sends
  the client (sampling, elicitation, roots) with their answers.
- ``tools/list``, ``tools/describe`` and ``tools/describe_batch`` are answered here from a catalog
  built from every page of the upstream's own ``tools/list``. ``tools/call`` is answered here only
  for the meta-tools and for arguments that fail the tool's schema; ``invoke_tool`` goes upstream as
  the real tool's call (same id), and every other call goes upstream unchanged. The mode (§17, in
  ``lazymcp.modes``) shapes a stock client's listing; a ``dynamic`` session is this router's, since a
  router serves one 2025-11-25 client, and a change to its tools is announced with ``list_changed``.
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
  shapes results as a 2026 server would on the way down (``lazymcp.eras``), answers ``server/discover``
  and ``subscriptions/listen`` itself, and turns the upstream's change notifications into events on the
  client's listen streams. Requests from the upstream to the client cannot cross into 2026-07-28, where
  servers make none; the proxy declares no client capabilities upstream and refuses any that come.
- The proxy's own requests carry ids of the form ``lazymcp-N``; their answers never reach the client.
- Every client request forwarded upstream is tracked until its one response passes back. When the
  upstream dies, hangs past the timeout, or writes garbage, ``upstream_failed`` answers each tracked
  request with an error, so none is left hanging; a late answer to an already-answered request is
  dropped, so none is duplicated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from uuid import uuid4

import orjson

from lazymcp import eras, jsonrpc
from lazymcp.catalog import Catalog
from lazymcp.eras import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
)
from lazymcp.eras import MODERN as MODERN_VERSION
from lazymcp.errors import CatalogError, ErrorCode, LazyMCPError
from lazymcp.jsonrpc import Message, NotJSONRPC, RequestId, id_key
from lazymcp.limits import CLIENT_TIMEOUT, MAX_PAGES
from lazymcp.messages import EXT_ID, Tool
from lazymcp.methods import METHODS
from lazymcp.modes import Answer, Run, Session, call_tool, check_configuration, list_tools
from lazymcp.options import Options
from lazymcp.quarantine import quarantine

LEGACY_VERSION = "2025-11-25"
TOOL_METHODS = frozenset({"tools/list", "tools/call", *METHODS})

Era = Literal["legacy", "modern"]


@dataclass(frozen=True, slots=True)
class ToClient:
    data: bytes


@dataclass(frozen=True, slots=True)
class ToServer:
    data: bytes


@dataclass(frozen=True, slots=True)
class Fail:
    """The upstream broke the protocol; the adapter reports ``reason`` and shuts down."""

    reason: str


@dataclass(frozen=True, slots=True)
class Say:
    """Something the operator should read (on stderr); the session goes on."""

    text: str


Action = ToClient | ToServer | Fail | Say


@dataclass(slots=True)
class _Pending:
    request_id: RequestId
    method: str
    deadline: float
    bridged: bool = False
    progress: object = None
    """The request's progress token: progress on it shows the upstream is working, not hung."""


def _meta(params: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = params.get("_meta")
    return cast(Mapping[str, Any], meta) if isinstance(meta, dict) else {}


def _declares(capabilities: object) -> bool:
    extensions = jsonrpc.field(capabilities, "extensions")
    return isinstance(extensions, dict) and EXT_ID in extensions


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
    client_timeout: float | None = CLIENT_TIMEOUT
    """Seconds the client may take to answer a request of the upstream's (a user filling in a form)."""

    catalog: Catalog | None = None
    era: Era | None = None
    """The client's protocol era."""
    upstream_era: Era | None = None
    failed: str | None = None
    _declared: bool = False  # the 2025 client declared the extension at initialize
    _init_key: tuple[str, object] | None = None
    _in_flight: dict[tuple[str, object], _Pending] = field(default_factory=lambda: {})
    _own: dict[str, _Pending] = field(default_factory=lambda: {})
    _own_count: int = 0
    _listen_id: str | None = None
    _pages: list[Tool] = field(default_factory=lambda: [])
    _fetching: bool = False
    _refetch: bool = False
    _waiting: list[tuple[Message, bytes]] = field(default_factory=lambda: [])
    _held: list[bytes] = field(default_factory=lambda: [])
    _envelope: dict[str, Any] = field(default_factory=lambda: {})  # 2026 hints and serverInfo of the upstream
    _own_prefix: str = field(default_factory=lambda: f"lazymcp-{uuid4().hex[:12]}-")
    """The proxy's own request ids: random, so a client cannot pick one of them by chance or on purpose."""
    _client_owes: dict[tuple[str, object], tuple[float, object]] = field(default_factory=lambda: {})
    """The upstream's requests to the client not yet answered: when each was sent, and its id."""
    _page_count: int = 0
    _cursors: set[str] = field(default_factory=lambda: set())
    _fetch_started: float = 0.0
    _quarantined: set[str] = field(default_factory=lambda: set())
    _probing: bool = False
    _queued: list[bytes] = field(default_factory=lambda: [])  # client lines waiting for the upstream's era
    _upstream_init: dict[str, Any] = field(default_factory=lambda: {})  # a bridged upstream's initialize result
    _listens: dict[tuple[str, object], tuple[RequestId, frozenset[str]]] = field(default_factory=lambda: {})
    _session: Session = field(default_factory=Session)  # the one 2025 client's dynamic-mode tools
    _server_name: str | None = None  # the upstream's serverInfo.name: a derived category (§17.6)

    @property
    def bridging(self) -> bool:
        """A 2026-07-28 client in front of a 2025-11-25 upstream."""
        return self.era == "modern" and self.upstream_era == "legacy"

    # --- client -> server ----------------------------------------------------------------------

    def from_client(self, line: bytes, now: float, message: Message | None = None) -> list[Action]:
        """Decide what to do with one line from the client (``message``: the line, when already parsed)."""
        if message is None:
            try:
                message = jsonrpc.parse(line)
            except NotJSONRPC:
                return [
                    ToClient(jsonrpc.error_line(None, ErrorCode.PARSE_ERROR, "Parse error: not a JSON-RPC message"))
                ]
        method = message.get("method")
        if "method" not in message:  # the client's answer to a server-initiated request
            if self._client_owes.pop(id_key(message.get("id")), None) is not None and not self._client_owes:
                self._extend_deadlines(now)  # the upstream waited on the client: its clock starts again
            return [ToServer(line)]
        if "id" not in message:
            return self._client_notification(message, line, now)
        request_id = message["id"]
        if not isinstance(method, str) or not isinstance(request_id, int | str) or isinstance(request_id, bool):
            return [ToClient(jsonrpc.error_line(None, ErrorCode.INVALID_REQUEST, "Invalid request"))]
        if self.failed is not None:
            return [ToClient(self._failure_line(request_id))]
        if "params" in message and not isinstance(message["params"], dict):
            # MCP params are objects; servers built on the SDK drop anything else unanswered, which
            # would leave the request hanging until the proxy counted the upstream as hung.
            return [
                ToClient(
                    jsonrpc.error_line(
                        request_id,
                        ErrorCode.INVALID_PARAMS,
                        "Invalid params: expected an object",
                        {"field": "params", "reason": "type"},
                    )
                )
            ]
        params = _params(message)
        if self.era is None:
            if method == "initialize":
                self.era = self.upstream_era = "legacy"
            elif PROTOCOL_VERSION_KEY in _meta(params) and method != "server/discover":
                self.era = "modern"
        if self._upstream_pending():
            self._queued.append(line)  # nothing goes up before the upstream's era is known and met
            return self._probe(now)
        if self.bridging:
            return self._bridge_request(message, params, line, now)
        if method == "initialize":
            self._declared = _declares(params.get("capabilities"))
            self._init_key = id_key(request_id)
        elif method in TOOL_METHODS:
            if self.catalog is None:
                if self.era != "modern" and not self._fetching:  # would wait for an initialized never sent
                    return [ToClient(_too_early(request_id))]
                self._waiting.append((message, line))
                return self._start_fetch(now) if self.era == "modern" else []
            return self._answer(message, line, now)
        return self._forward(request_id, method, line, now, message)

    def _client_notification(self, message: Message, line: bytes, now: float) -> list[Action]:
        if self._upstream_pending():
            self._queued.append(line)
            return []
        method = message.get("method")
        if self.bridging:
            if method == "notifications/cancelled":
                self._listens.pop(id_key(_params(message).get("requestId")), None)
            line = jsonrpc.encode({**message, "params": eras.legacy_params(_params(message))})
        actions: list[Action] = [ToServer(line)]
        if method == "notifications/initialized" and self.era == "legacy":
            actions += self._start_fetch(now)
        elif method == "notifications/cancelled":
            cancelled = _params(message).get("requestId")
            self._in_flight.pop(id_key(cancelled), None)  # no answer is owed for a cancelled request
        return actions

    def _forward(self, request_id: RequestId, method: str, line: bytes, now: float, message: Message) -> list[Action]:
        streams = method == "subscriptions/listen"  # answered only when the stream ends: no deadline
        deadline = now + self.timeout if self.timeout and not streams else float("inf")
        progress = _meta(_params(message)).get("progressToken") if b"progressToken" in line else None
        self._in_flight[id_key(request_id)] = _Pending(request_id, method, deadline, self.bridging, progress)
        if self.bridging:  # the envelope stays behind: a 2025 server does not know it
            try:
                line = jsonrpc.encode({**message, "params": eras.legacy_params(_params(message))})
            except orjson.JSONEncodeError:
                del self._in_flight[id_key(request_id)]
                return [
                    ToClient(
                        jsonrpc.error_line(request_id, ErrorCode.INVALID_REQUEST, "Invalid request: nested too deeply")
                    )
                ]
        return [ToServer(line)]

    def _bridge_request(self, message: Message, params: dict[str, Any], line: bytes, now: float) -> list[Action]:
        """A 2026 client's request to a 2025 upstream: answered here, or forwarded without its envelope."""
        request_id: RequestId = message["id"]
        method: str = message["method"]
        if method == "server/discover":
            capabilities = self._advertise(self._upstream_init)["capabilities"]
            return [ToClient(jsonrpc.result_line(request_id, eras.discover_result(self._upstream_init, capabilities)))]
        if method == "subscriptions/listen":
            wanted = jsonrpc.field(params, "notifications")
            honored = frozenset(key for key in eras.LIST_CHANGED.values() if jsonrpc.field(wanted, key) is True)
            self._listens[id_key(request_id)] = (request_id, honored)
            ack = {"notifications": dict.fromkeys(sorted(honored), True), "_meta": {SUBSCRIPTION_ID_KEY: request_id}}
            return [ToClient(jsonrpc.notification_line("notifications/subscriptions/acknowledged", ack))]
        if method in TOOL_METHODS:
            if self.catalog is None:
                self._waiting.append((message, line))
                return []
            return self._answer(message, line, now)
        return self._forward(request_id, method, line, now, message)

    def _answer(self, message: Message, line: bytes, now: float) -> list[Action]:
        """Serve a tool method from the catalog, or forward a ``tools/call`` that is the upstream's to run."""
        catalog = self.catalog
        assert catalog is not None
        request_id: RequestId = message["id"]
        method: str = message["method"]
        raw = message.get("params")
        if raw is not None and not isinstance(raw, dict):
            error = jsonrpc.error_line(
                request_id, ErrorCode.INVALID_PARAMS, "Invalid params: not an object", {"field": "params"}
            )
            return [ToClient(error)]
        params = _params(message)
        modern = PROTOCOL_VERSION_KEY in _meta(params)
        session = None if modern or self.options.mode != "dynamic" else self._session
        try:
            if method == "tools/list":
                declared = self._client_declared(params, modern)
                listing = list_tools(catalog, params, declared=declared, session=session)
                result = self._stamp(listing, modern, cacheable=True)
            elif method == "tools/call":
                outcome = call_tool(catalog, params, session=session)
                if isinstance(outcome, Run):  # invoke_tool: the real tool's call, under the same id
                    call = {**message, "params": {**params, "name": outcome.name, "arguments": outcome.arguments}}
                    return self._forward(request_id, method, jsonrpc.encode(call), now, call)
                if not isinstance(outcome, Answer):
                    return self._forward(request_id, method, line, now, message)
                answer = ToClient(jsonrpc.result_line(request_id, self._stamp(outcome.result, modern, cacheable=False)))
                if outcome.changed:  # only a 2025 session changes: tell it before it reads the answer
                    return [ToClient(jsonrpc.notification_line("notifications/tools/list_changed")), answer]
                return [answer]
            else:
                result = self._stamp(METHODS[method](catalog, params), modern, cacheable=True)
        except LazyMCPError as exc:
            return [ToClient(jsonrpc.error_from(request_id, exc))]
        return [ToClient(jsonrpc.result_line(request_id, result))]

    def _client_declared(self, params: Mapping[str, Any], modern: bool) -> bool:
        if not modern:
            return self._declared
        return _declares(_meta(params).get(CLIENT_CAPABILITIES_KEY))

    def _stamp(self, result: dict[str, Any], modern: bool, *, cacheable: bool) -> dict[str, Any]:
        """The 2026-era envelope of a result the proxy makes itself, in the upstream's own terms."""
        if not modern:
            return result
        if cacheable:
            hints = {"ttlMs": self._envelope.get("ttlMs", 0), "cacheScope": self._envelope.get("cacheScope", "private")}
            result = {**hints, **result}
        result["resultType"] = "complete"
        if "serverInfo" in self._envelope:
            result["_meta"] = {SERVER_INFO_KEY: self._envelope["serverInfo"]}
        return result

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
                return [
                    ToServer(
                        jsonrpc.error_line(message["id"], ErrorCode.METHOD_NOT_FOUND, f"Method not found: {refusal}")
                    )
                ]
            self._client_owes[id_key(message["id"])] = (now, message["id"])  # the upstream now waits on the client
            return [ToClient(line)]  # a request to the client: sampling, elicitation, roots, ping
        request_id = message.get("id")
        if isinstance(request_id, str) and request_id in self._own:
            return self._own_response(request_id, message, now)
        key = id_key(request_id)
        pending = self._in_flight.pop(key, None)
        if pending is None:
            return []  # already answered (timed out, cancelled) or never asked: never a duplicate
        result = message.get("result")
        if pending.method == "server/discover" and self.upstream_era is None:
            self.upstream_era = "modern" if isinstance(result, dict) else "legacy"
        if isinstance(result, dict) and key == self._init_key:
            self._server_name = _server_name(jsonrpc.field(cast(object, result), "serverInfo"))
        if isinstance(result, dict) and (key == self._init_key or pending.method == "server/discover"):
            return [ToClient(jsonrpc.encode({**message, "result": self._advertise(cast(dict[str, Any], result))}))]
        if pending.bridged and isinstance(result, dict):
            shaped = eras.modern_result(pending.method, cast(dict[str, Any], result), self._envelope.get("serverInfo"))
            return [ToClient(jsonrpc.encode({**message, "result": shaped}))]
        return [ToClient(line)]

    def _server_notification(self, message: Message, line: bytes, now: float) -> list[Action]:
        method = message.get("method")
        if method == "notifications/cancelled":  # the upstream no longer waits on the client for it
            self._client_owes.pop(id_key(_params(message).get("requestId")), None)
        if method == "notifications/progress" and self.timeout:
            token = _params(message).get("progressToken")
            for pending in self._in_flight.values():
                if pending.progress is not None and pending.progress == token:
                    pending.deadline = now + self.timeout  # it is working: its clock starts again
        subscription = _meta(_params(message)).get(SUBSCRIPTION_ID_KEY)
        own_stream = self._listen_id is not None and subscription == self._listen_id
        if method == "notifications/tools/list_changed":
            if not own_stream:
                self._held.append(line)  # delivered once the new catalog is in place
            return self._start_fetch(now)
        if own_stream:
            return []  # the acknowledgement of the proxy's own subscription
        if self.bridging and isinstance(method, str) and method in eras.LIST_CHANGED:
            return self._to_listeners(method)
        return [ToClient(line)]

    def _to_listeners(self, method: str) -> list[Action]:
        """A change notification as an event on each 2026 listen stream that asked for it."""
        key = eras.LIST_CHANGED[method]
        return [
            ToClient(jsonrpc.notification_line(method, {"_meta": {SUBSCRIPTION_ID_KEY: request_id}}))
            for request_id, honored in self._listens.values()
            if key in honored
        ]

    def _release_held(self) -> list[Action]:
        held, self._held = self._held, []
        if self.bridging:
            return self._to_listeners("notifications/tools/list_changed") if held else []
        return [ToClient(line) for line in held]

    def _advertise(self, result: dict[str, Any]) -> dict[str, Any]:
        """Add the extension to an ``initialize`` or ``server/discover`` result (LT-02)."""
        capabilities = dict(cast(dict[str, Any], result.get("capabilities") or {}))
        capabilities["extensions"] = {**(capabilities.get("extensions") or {}), EXT_ID: dict(self.options.settings())}
        if isinstance(capabilities.get("tools"), dict):
            capabilities["tools"] = {**capabilities["tools"], "listChanged": True}
        return {**result, "capabilities": capabilities}

    # --- the catalog ---------------------------------------------------------------------------

    def _own_request(self, method: str, params: dict[str, Any], now: float, *, modern: bool | None = None) -> ToServer:
        self._own_count += 1
        request_id = f"{self._own_prefix}{self._own_count}"
        if modern if modern is not None else self.upstream_era == "modern":
            params = {
                **params,
                "_meta": {
                    PROTOCOL_VERSION_KEY: MODERN_VERSION,
                    CLIENT_INFO_KEY: self.client_info,
                    CLIENT_CAPABILITIES_KEY: {},
                },
            }
        deadline = now + self.timeout if self.timeout else float("inf")
        self._own[request_id] = _Pending(request_id, method, deadline)
        return ToServer(jsonrpc.request_line(request_id, method, params))

    def _start_fetch(self, now: float) -> list[Action]:
        if self._fetching:
            self._refetch = True
            return []
        self._fetching = True
        self._pages = []
        self._page_count = 0
        self._cursors = set()
        self._fetch_started = now
        # lazy=false: an upstream that is itself lazy must hand over its full tools.
        actions: list[Action] = [self._own_request("tools/list", {"lazy": False}, now)]
        if self.upstream_era == "modern" and self._listen_id is None:
            listen = self._own_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, now)
            self._listen_id = f"{self._own_prefix}{self._own_count}"
            self._own[self._listen_id].deadline = float("inf")  # a stream: answered only when it ends
            actions.append(listen)
        return actions

    def _own_response(self, request_id: str, message: Message, now: float) -> list[Action]:
        pending = self._own.pop(request_id)
        if pending.method == "server/discover":
            return self._probed(message, now)
        if pending.method == "initialize":
            return self._upstream_initialized(message, now)
        if pending.method != "tools/list":
            return []  # the proxy's listen stream ended
        result = message.get("result")
        if jsonrpc.field(message.get("error"), "code") == ErrorCode.METHOD_NOT_FOUND:
            result = {"tools": cast(list[Tool], [])}  # a server without tools: nothing to list, the rest to relay
        if not isinstance(result, dict):
            detail = jsonrpc.field(message.get("error"), "message") or "no result"
            return self._fetch_failed(f"the upstream's tools/list failed: {detail}")
        result = cast(dict[str, Any], result)
        tools = result.get("tools")
        if not isinstance(tools, list):
            return self._fetch_failed("the upstream's tools/list result has no 'tools' list")
        self._pages.extend(cast(list[Tool], tools))
        if self.upstream_era == "modern":
            self._remember_envelope(result)
        cursor = result.get("nextCursor")
        origin = self._server_name or _server_name(self._envelope.get("serverInfo"))
        if isinstance(cursor, str) and cursor:
            endless = self._endless_listing(cursor, now, origin)
            if endless is not None:  # the first catalog fails the upstream; a later one keeps the last
                self._fetching = False
                return [Say(endless)] if self.catalog is not None else [Fail(endless)]
            return [self._own_request("tools/list", {"lazy": False, "cursor": cursor}, now)]
        first = self.catalog is None
        kept, rejected = quarantine(self._pages)
        notes: list[Action] = [Say(text) for text in rejected if text not in self._quarantined]
        self._quarantined.update(rejected)
        try:
            catalog = Catalog.build(kept, self.options, origin=origin)
        except CatalogError as exc:
            return self._fetch_failed(f"the upstream's tools cannot be served: {exc.message}")
        if first:  # start-up: the configuration must name what the upstream has
            try:
                check_configuration(catalog)
            except CatalogError as exc:
                self._fetching = False
                return [Fail(exc.message)]
        self.catalog = catalog
        self._fetching = False
        actions = notes + self._release_held()
        waiting, self._waiting = self._waiting, []
        for waiting_message, waiting_line in waiting:
            actions += self._answer(waiting_message, waiting_line, now)
        if self._refetch:
            self._refetch = False
            actions += self._start_fetch(now)
        return actions

    def _endless_listing(self, cursor: str, now: float, origin: str | None) -> str | None:
        """Why the upstream's listing must stop here (too many pages, a cursor seen before, too long)."""
        self._page_count += 1
        upstream = f"the upstream {origin!r}" if origin else "the upstream"
        if self._page_count >= MAX_PAGES:
            return f"{upstream}'s tools/list did not end within {MAX_PAGES} pages"
        if cursor in self._cursors:
            return f"{upstream}'s tools/list repeated the cursor {cursor[:80]!r}"
        if self.timeout and now - self._fetch_started > self.timeout:
            return f"{upstream}'s tools/list did not end within {self.timeout:g} s"
        self._cursors.add(cursor)
        return None

    def _upstream_pending(self) -> bool:
        """Is a 2026 client waiting for the upstream's era to be learnt, or for the bridge's handshake?"""
        if self.era != "modern":
            return False
        return self.upstream_era is None or (self.upstream_era == "legacy" and not self._upstream_init)

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
        """The bridge: the proxy becomes the 2025 upstream's client (with no client capabilities)."""
        init = {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": self.client_info}
        return [self._own_request("initialize", init, now, modern=False)]

    def _upstream_initialized(self, message: Message, now: float) -> list[Action]:
        result = message.get("result")
        if not isinstance(result, dict):
            detail = jsonrpc.field(message.get("error"), "message") or "no result"
            return self.upstream_failed(f"the upstream refused the proxy's initialize: {detail}")
        self._upstream_init = cast(dict[str, Any], result)
        if "serverInfo" in self._upstream_init:
            self._envelope["serverInfo"] = self._upstream_init["serverInfo"]
        actions: list[Action] = [ToServer(jsonrpc.notification_line("notifications/initialized"))]
        return actions + self._start_fetch(now) + self._replay(now)

    def _replay(self, now: float) -> list[Action]:
        queued, self._queued = self._queued, []
        actions: list[Action] = []
        for line in queued:
            actions += self.from_client(line, now)
        return actions

    def _remember_envelope(self, result: dict[str, Any]) -> None:
        for key in ("ttlMs", "cacheScope"):
            if key in result:
                self._envelope[key] = result[key]
        server_info = _meta(result).get(SERVER_INFO_KEY)
        if server_info is not None:
            self._envelope["serverInfo"] = server_info

    def _fetch_failed(self, reason: str) -> list[Action]:
        self._fetching = False
        if self.catalog is not None:
            return []  # keep serving the catalog we have
        return self.upstream_failed(reason)

    # --- faults --------------------------------------------------------------------------------

    def _failure_line(self, request_id: RequestId) -> bytes:
        reason = self.failed or "unknown"
        return jsonrpc.error_line(request_id, jsonrpc.UPSTREAM, f"Upstream server failed: {reason}", {"reason": reason})

    def upstream_failed(self, reason: str) -> list[Action]:
        """Answer every request still owed an answer with an error; later requests get one at once."""
        if self.failed is None:
            self.failed = reason
        owed = [pending.request_id for pending in self._in_flight.values()]
        owed += [message["id"] for message, _ in self._waiting]
        for line in self._queued:
            queued = jsonrpc.parse(line)
            if "id" in queued and "method" in queued:
                owed.append(queued["id"])
        self._queued.clear()
        self._in_flight.clear()
        self._waiting.clear()
        self._own.clear()
        return [ToClient(self._failure_line(request_id)) for request_id in owed]

    def _extend_deadlines(self, now: float) -> None:
        if self.timeout:
            for pending in (*self._in_flight.values(), *self._own.values()):
                pending.deadline = max(pending.deadline, now + self.timeout)

    def expire(self, now: float) -> list[Action]:
        """Fail the upstream when a request has waited past the timeout (it hangs).

        Time the upstream spends waiting on the client's answer to its own request (a user filling
        in an elicitation, a sampling call) does not count; progress on a request restarts its clock.
        """
        actions: list[Action] = []
        if self._client_owes:
            actions = self._expire_client_owes(now)
        if self._client_owes:
            self._extend_deadlines(now)
            return actions
        overdue = [p for p in (*self._in_flight.values(), *self._own.values()) if p.deadline <= now]
        if not overdue or self.failed is not None:
            return actions
        late = overdue[0]
        return [*actions, Fail(f"the upstream did not answer {late.method} within {self.timeout:g} s")]

    def _expire_client_owes(self, now: float) -> list[Action]:
        """A request of the upstream's that the client has not answered within the timeout: the
        upstream gets an error for it and the client a cancellation, and the proxy's clock runs again."""
        if not self.client_timeout:
            return []
        actions: list[Action] = []
        for key, (since, request_id) in list(self._client_owes.items()):
            if now - since < self.client_timeout:
                continue
            del self._client_owes[key]
            reason = f"the client did not answer within {self.client_timeout:g} s"
            actions.append(ToServer(_error_line(request_id, ErrorCode.REQUEST_TIMEOUT, f"Request timed out: {reason}")))
            cancel = {"requestId": request_id, "reason": reason}
            actions.append(ToClient(jsonrpc.notification_line("notifications/cancelled", cancel)))
        return actions

    @property
    def owed(self) -> int:
        """Requests forwarded upstream and not yet answered."""
        queued = sum(1 for line in self._queued if b'"method"' in line and b'"id"' in line)
        return len(self._in_flight) + len(self._waiting) + queued


def _too_early(request_id: RequestId) -> bytes:
    reason = "tools are listed once the client has sent notifications/initialized"
    return jsonrpc.error_line(request_id, ErrorCode.INVALID_REQUEST, f"Invalid request: {reason}")


def _error_line(request_id: object, code: ErrorCode, message: str) -> bytes:
    """An error for an id of any JSON type (the upstream's ids are its own)."""
    return jsonrpc.encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": int(code), "message": message}})
