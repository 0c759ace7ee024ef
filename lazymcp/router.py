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
  for the ``describe_tools`` meta-tool and for arguments that fail the tool's schema; every other
  call goes upstream unchanged.
- The catalog follows the upstream: its first fetch follows the client's handshake (2025-11-25) or
  first request (2026-07-28, where the proxy also opens its own ``subscriptions/listen``). An upstream
  ``notifications/tools/list_changed`` starts a refetch, and the notification reaches the client only
  once the new catalog is in place, so a client that re-lists at once never sees the old one.
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

from lazymcp import jsonrpc
from lazymcp.catalog import Catalog
from lazymcp.errors import CatalogError, LazyMCPError
from lazymcp.jsonrpc import Message, NotJSONRPC, RequestId, id_key
from lazymcp.messages import EXT_ID, Tool
from lazymcp.methods import METHODS, call_meta_tool, check_call, list_tools, parse_list_params, resolve_shape
from lazymcp.options import Options

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
MODERN_VERSION = "2026-07-28"
MAX_PAGES = 10_000
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


Action = ToClient | ToServer | Fail


@dataclass(slots=True)
class _Pending:
    request_id: RequestId
    method: str
    deadline: float


def _meta(params: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = params.get("_meta")
    return cast(Mapping[str, Any], meta) if isinstance(meta, dict) else {}


def _field(value: object, key: str) -> object:
    """``value[key]`` when ``value`` is a JSON object, else None."""
    return cast(dict[str, object], value).get(key) if isinstance(value, dict) else None


def _declares(capabilities: object) -> bool:
    extensions = _field(capabilities, "extensions")
    return isinstance(extensions, dict) and EXT_ID in extensions


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

    catalog: Catalog | None = None
    era: Era | None = None
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

    # --- client -> server ----------------------------------------------------------------------

    def from_client(self, line: bytes, now: float) -> list[Action]:
        """Decide what to do with one line from the client."""
        try:
            message = jsonrpc.parse(line)
        except NotJSONRPC:
            return [ToClient(jsonrpc.error_line(None, jsonrpc.PARSE_ERROR, "Parse error: not a JSON-RPC message"))]
        method = message.get("method")
        if method is None:  # the client's answer to a server-initiated request
            return [ToServer(line)]
        if "id" not in message:
            return self._client_notification(message, line, now)
        request_id = message["id"]
        if not isinstance(method, str) or not isinstance(request_id, int | str) or isinstance(request_id, bool):
            return [ToClient(jsonrpc.error_line(None, jsonrpc.INVALID_REQUEST, "Invalid request"))]
        if self.failed is not None:
            return [ToClient(self._failure_line(request_id))]
        params = _params(message)
        if self.era is None:
            if method == "initialize":
                self.era = "legacy"
            elif PROTOCOL_VERSION_KEY in _meta(params) and method != "server/discover":
                self.era = "modern"
        if method == "initialize":
            self._declared = _declares(params.get("capabilities"))
            self._init_key = id_key(request_id)
        elif method in TOOL_METHODS:
            if self.catalog is None:
                self._waiting.append((message, line))
                return self._start_fetch(now) if self.era == "modern" else []
            return self._answer(message, line, now)
        return self._forward(request_id, method, line, now)

    def _client_notification(self, message: Message, line: bytes, now: float) -> list[Action]:
        actions: list[Action] = [ToServer(line)]
        method = message.get("method")
        if method == "notifications/initialized" and self.era == "legacy":
            actions += self._start_fetch(now)
        elif method == "notifications/cancelled":
            cancelled = _params(message).get("requestId")
            self._in_flight.pop(id_key(cancelled), None)  # no answer is owed for a cancelled request
        return actions

    def _forward(self, request_id: RequestId, method: str, line: bytes, now: float) -> list[Action]:
        deadline = now + self.timeout if self.timeout else float("inf")
        self._in_flight[id_key(request_id)] = _Pending(request_id, method, deadline)
        return [ToServer(line)]

    def _answer(self, message: Message, line: bytes, now: float) -> list[Action]:
        """Serve a tool method from the catalog, or forward a ``tools/call`` that is the upstream's to run."""
        catalog = self.catalog
        assert catalog is not None
        request_id: RequestId = message["id"]
        method: str = message["method"]
        raw = message.get("params")
        if raw is not None and not isinstance(raw, dict):
            error = jsonrpc.error_line(request_id, -32602, "Invalid params: not an object", {"field": "params"})
            return [ToClient(error)]
        params = _params(message)
        modern = PROTOCOL_VERSION_KEY in _meta(params)
        try:
            if method == "tools/list":
                request = parse_list_params(params)
                declared = self._client_declared(params, modern)
                shape = resolve_shape(request, declared=declared, stock_default=self.options.stock_default)
                result = self._stamp(list_tools(catalog, request, shape), modern, cacheable=True)
            elif method == "tools/call":
                name = params.get("name")
                if not isinstance(name, str):
                    return self._forward(request_id, method, line, now)  # malformed: the upstream answers
                arguments = params.get("arguments")
                refused = check_call(catalog, name, arguments)
                if refused is not None:
                    result = self._stamp(refused, modern, cacheable=False)
                elif name == catalog.meta_tool["name"] and catalog.get(name) is None:
                    answer = call_meta_tool(catalog, cast(Mapping[str, Any] | None, arguments))
                    result = self._stamp(answer, modern, cacheable=False)
                else:
                    return self._forward(request_id, method, line, now)
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
            if "id" in message:  # a request to the client: sampling, elicitation, roots, ping
                return [ToClient(line)]
            return self._server_notification(message, line, now)
        request_id = message.get("id")
        if isinstance(request_id, str) and request_id in self._own:
            return self._own_response(request_id, message, now)
        key = id_key(request_id)
        pending = self._in_flight.pop(key, None)
        if pending is None:
            return []  # already answered (timed out, cancelled) or never asked: never a duplicate
        result = message.get("result")
        if isinstance(result, dict) and (key == self._init_key or pending.method == "server/discover"):
            return [ToClient(jsonrpc.encode({**message, "result": self._advertise(cast(dict[str, Any], result))}))]
        return [ToClient(line)]

    def _server_notification(self, message: Message, line: bytes, now: float) -> list[Action]:
        method = message.get("method")
        subscription = _meta(_params(message)).get(SUBSCRIPTION_ID_KEY)
        own_stream = self._listen_id is not None and subscription == self._listen_id
        if method == "notifications/tools/list_changed":
            if not own_stream:
                self._held.append(line)  # delivered once the new catalog is in place
            return self._start_fetch(now)
        if own_stream:
            return []  # the acknowledgement of the proxy's own subscription
        return [ToClient(line)]

    def _advertise(self, result: dict[str, Any]) -> dict[str, Any]:
        """Add the extension to an ``initialize`` or ``server/discover`` result (LT-02)."""
        capabilities = dict(cast(dict[str, Any], result.get("capabilities") or {}))
        capabilities["extensions"] = {**(capabilities.get("extensions") or {}), EXT_ID: dict(self.options.settings())}
        if isinstance(capabilities.get("tools"), dict):
            capabilities["tools"] = {**capabilities["tools"], "listChanged": True}
        return {**result, "capabilities": capabilities}

    # --- the catalog ---------------------------------------------------------------------------

    def _own_request(self, method: str, params: dict[str, Any], now: float) -> ToServer:
        self._own_count += 1
        request_id = f"lazymcp-{self._own_count}"
        if self.era == "modern":
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
        # lazy=false: an upstream that is itself lazy must hand over its full tools.
        actions: list[Action] = [self._own_request("tools/list", {"lazy": False}, now)]
        if self.era == "modern" and self._listen_id is None:
            listen = self._own_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, now)
            self._listen_id = f"lazymcp-{self._own_count}"
            self._own[self._listen_id].deadline = float("inf")  # a stream: answered only when it ends
            actions.append(listen)
        return actions

    def _own_response(self, request_id: str, message: Message, now: float) -> list[Action]:
        pending = self._own.pop(request_id)
        if pending.method != "tools/list":
            return []  # the proxy's listen stream ended
        result = message.get("result")
        if not isinstance(result, dict):
            detail = _field(message.get("error"), "message") or "no result"
            return self._fetch_failed(f"the upstream's tools/list failed: {detail}")
        result = cast(dict[str, Any], result)
        tools = result.get("tools")
        if not isinstance(tools, list):
            return self._fetch_failed("the upstream's tools/list result has no 'tools' list")
        self._pages.extend(cast(list[Tool], tools))
        if self.era == "modern":
            self._remember_envelope(result)
        cursor = result.get("nextCursor")
        if isinstance(cursor, str) and cursor and len(self._pages) < MAX_PAGES * 1000:
            return [self._own_request("tools/list", {"lazy": False, "cursor": cursor}, now)]
        try:
            self.catalog = Catalog.build(self._pages, self.options)
        except CatalogError as exc:
            return self._fetch_failed(f"the upstream's tools cannot be served: {exc.message}")
        self._fetching = False
        actions: list[Action] = [ToClient(line) for line in self._held]
        self._held = []
        waiting, self._waiting = self._waiting, []
        for waiting_message, waiting_line in waiting:
            actions += self._answer(waiting_message, waiting_line, now)
        if self._refetch:
            self._refetch = False
            actions += self._start_fetch(now)
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
        self._in_flight.clear()
        self._waiting.clear()
        self._own.clear()
        return [ToClient(self._failure_line(request_id)) for request_id in owed]

    def expire(self, now: float) -> list[Action]:
        """Fail the upstream when a request has waited past the timeout (it hangs)."""
        overdue = [p for p in (*self._in_flight.values(), *self._own.values()) if p.deadline <= now]
        if not overdue or self.failed is not None:
            return []
        late = overdue[0]
        return [Fail(f"the upstream did not answer {late.method} within {self.timeout:g} s")]

    @property
    def owed(self) -> int:
        """Requests forwarded upstream and not yet answered."""
        return len(self._in_flight) + len(self._waiting)
