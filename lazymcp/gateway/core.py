"""The gateway's sans-IO core: one client, many servers, one merged lazy catalog.

Theory of operation. ``Gateway.from_client`` and ``Gateway.from_server`` take one line each and return
actions: ``ToClient(data)``, ``Send(server, data)``, ``Start(server)`` (spawn it, then call
``started``), ``Stop(server)`` (it failed: end its process) and ``Save(server, tools, version)``
(store its manifest). The I/O adapter carries them out and does nothing else.

- The gateway is the client's one server: it answers ``initialize``, ``ping`` and every ``tools/*``
  request itself, through ``lazymcp.methods.dispatch`` over one ``Catalog`` of every server's tools
  named ``<server><separator><tool>`` (``lazymcp.gateway.namespace``).
- Each server has a ``Link`` that owns one ``Router``: its handshake (the gateway is its client), its
  catalog fetch and refetch on ``list_changed``, in-flight tracking, timeouts and faults are the
  router's, unchanged. A call the catalog leaves to a server goes into its router as the server's own
  ``tools/call`` under the client's id; what comes back goes to the client.
- A server's tools come from its manifest until it runs; a server without one is started at once and
  the first ``tools/*`` requests wait for its list. Others start on their first call.
- A server that fails (cannot start, exits, hangs, breaks the protocol) fails alone: what it owed is
  answered with an error naming it, its tools stay listed (from its last list), a call to it within
  its backoff is refused at once, and after the backoff the next call starts it again.
- Requests servers make of the client (sampling, elicitation, roots) get gateway ids, so two servers'
  ids never meet; the client's answer goes back to the server that asked, under the server's id.
- A new tool list from any server rebuilds the merged catalog; when what is listed changed, the client
  gets one ``notifications/tools/list_changed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from lazymcp import jsonrpc
from lazymcp.catalog import Catalog
from lazymcp.errors import ErrorCode, LazyMCPError
from lazymcp.gateway.config import ConfigError, ServerEntry
from lazymcp.gateway.link import Action, Link, Save, Send, Start, Stop, ToClient
from lazymcp.gateway.manifest import Manifest
from lazymcp.gateway.merged import DEFAULT_BUDGET, instructions, mark_unavailable, merged_catalog
from lazymcp.gateway.namespace import Namespace
from lazymcp.gateway.passthrough import BY_URI, LISTS, Passthrough
from lazymcp.gateway.passthrough import PREFIX as GATHER_PREFIX
from lazymcp.jsonrpc import Message, NotJSONRPC, RequestId
from lazymcp.messages import DESCRIBE, DESCRIBE_BATCH, Tool
from lazymcp.methods import METHODS, Answer, Caller, Run, advertise, declares, dispatch
from lazymcp.modes import DynamicSession
from lazymcp.options import Options
from lazymcp.router import Action as RouterAction
from lazymcp.router import Fail, Router, Say
from lazymcp.router import ToServer as RouterToServer

LATEST = "2025-11-25"
SUPPORTED = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", LATEST})
"""Protocol versions the gateway's handshake accepts; it answers others with the latest."""
_INIT = "lazymcp-gateway-init"
ROUTED = BY_URI | {"prompts/get", "completion/complete"}


@dataclass
class Gateway:
    """The decisions of one gateway connection. ``now`` arguments are monotonic seconds."""

    entries: Sequence[ServerEntry]
    options: Options = field(default_factory=Options)
    manifests: Mapping[str, Manifest | None] = field(default_factory=lambda: {})
    separator: str = "__"
    timeout: float | None = 300.0
    mode: str | None = None
    """``auto``: the describe listing while its stubs fit ``budget`` tokens, the proxy surface beyond."""
    budget: int = DEFAULT_BUDGET
    stale: frozenset[str] = frozenset()
    """Servers whose manifest is past its TTL: started at launch to refresh it."""
    client_info: dict[str, str] = field(default_factory=lambda: {"name": "lazymcp-gateway", "version": "0"})
    wait_for_client: bool = True
    """Hold a started server's handshake until the client's ``initialize``, whose capabilities it passes on."""
    links: dict[str, Link] = field(init=False)
    catalog: Catalog = field(init=False)
    names: Namespace = field(init=False)
    _client: dict[str, Any] | None = None  # the client's initialize params
    _declared: bool = False
    _asked: dict[str, tuple[str, RequestId]] = field(default_factory=lambda: {})  # gateway id -> server, its id
    _asked_count: int = 0
    _waiting: list[tuple[Message, bytes]] = field(default_factory=lambda: [])  # tools/* before the first lists
    _session: DynamicSession = field(default_factory=DynamicSession)
    passthrough: Passthrough = field(init=False)

    def __post_init__(self) -> None:
        self.names = Namespace(self.separator, prefixed=True)
        self.links = {}
        for entry in self.entries:
            manifest = self.manifests.get(entry.name)
            link = Link(entry)
            if manifest is not None:
                link.tools, link.version = cast(tuple[Tool, ...], manifest.tools), manifest.version  # a Packed
            self.links[entry.name] = link
        self.catalog = self._build()
        self.passthrough = Passthrough(list(self.links), Namespace(self.separator))

    # --- start-up ------------------------------------------------------------------------------

    def launch(self, eager: bool = False) -> list[Action]:
        """Start what must run now: servers without a manifest (or a stale one), or all with ``eager``."""
        return [
            Start(name)
            for name, link in self.links.items()
            if eager or link.tools is None or name in self.stale
            for _ in [self._spawn(link)]
        ]

    def _spawn(self, link: Link) -> None:
        link.state, link.queued = "starting", []
        link.router = Router(replace(self.options, mode="eager", check_arguments=False), self.timeout, self.client_info)
        link.seen = None

    @property
    def discovering(self) -> bool:
        """Is a server's first tool list still awaited?"""
        return any(
            link.tools is None and link.state != "down" and link.router is not None for link in self.links.values()
        )

    def started(self, server: str, now: float) -> list[Action]:
        """The server's process runs: the gateway, as its client, opens the handshake."""
        link = self.links[server]
        if self.wait_for_client and self._client is None:
            link.state = "spawned"
            return []
        link.state = "starting"
        client: dict[str, Any] = self._client or {}
        capabilities = cast(dict[str, Any], client.get("capabilities") or {})
        params: dict[str, Any] = {
            "protocolVersion": client.get("protocolVersion") if client.get("protocolVersion") in SUPPORTED else LATEST,
            "capabilities": {k: v for k, v in capabilities.items() if k != "extensions"},
            "clientInfo": client.get("clientInfo") or self.client_info,
        }
        return self._through(link, jsonrpc.request_line(_INIT, "initialize", params), now)

    def start_failed(self, server: str, reason: str, now: float) -> list[Action]:
        """The server could not be started or went away."""
        link = self.links[server]
        if link.state in ("idle", "down"):
            return []
        return self._down(link, reason, now)

    # --- client -> servers ---------------------------------------------------------------------

    def from_client(self, line: bytes, now: float) -> list[Action]:
        """Decide what to do with one line from the client."""
        try:
            message = jsonrpc.parse(line)
        except NotJSONRPC:
            return [ToClient(jsonrpc.error_line(None, ErrorCode.PARSE_ERROR, "Parse error: not a JSON-RPC message"))]
        method = message.get("method")
        if "method" not in message:
            return self._client_answer(message, now)
        if "id" not in message:
            return self._client_notification(message, now)
        request_id = message["id"]
        if not isinstance(method, str) or not isinstance(request_id, int | str) or isinstance(request_id, bool):
            return [ToClient(jsonrpc.error_line(None, ErrorCode.INVALID_REQUEST, "Invalid request"))]
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            error = jsonrpc.error_line(request_id, ErrorCode.INVALID_PARAMS, "Invalid params: expected an object")
            return [ToClient(error)]
        if method == "initialize":
            result = self._initialize(cast(dict[str, Any], params or {}))
            actions: list[Action] = [ToClient(jsonrpc.result_line(request_id, result))]
            for name, link in self.links.items():
                if link.state == "spawned":
                    actions += self.started(name, now)
            return actions
        if method == "ping":
            return [ToClient(jsonrpc.result_line(request_id, {}))]
        if method in METHODS:
            if self.discovering:
                self._waiting.append((message, line))
                return []
            return self._tools(message, now)
        if method == "logging/setLevel":
            return [ToClient(jsonrpc.result_line(request_id, {}))]
        if method in LISTS:
            return self._gather(request_id, method, cast(dict[str, Any], params or {}), now)
        if method in ROUTED:
            routed = self.passthrough.route(method, cast(dict[str, Any], params or {}))
            if isinstance(routed, str):
                return [ToClient(jsonrpc.error_line(request_id, ErrorCode.INVALID_PARAMS, routed))]
            server, routed_params = routed
            if routed_params == params:
                return self._call(self.links[server], message, now, line)  # as it came
            return self._call(self.links[server], {**message, "params": routed_params}, now)
        error = jsonrpc.error_line(request_id, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")
        return [ToClient(error)]

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        self._client = params
        self._declared = declares(jsonrpc.field(params.get("capabilities"), "extensions"))
        version = params.get("protocolVersion")
        result = {
            "protocolVersion": version if version in SUPPORTED else LATEST,
            "capabilities": {
                "tools": {"listChanged": True},
                "prompts": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True},
                "completions": {},
                "logging": {},
            },
            "serverInfo": self.client_info,
            "instructions": instructions([link.entry for link in self.links.values()], self.separator),
        }
        return advertise(result, self.options)

    def _client_notification(self, message: Message, now: float) -> list[Action]:
        method = message.get("method")
        params = cast(dict[str, Any], message.get("params") or {})
        if method == "notifications/cancelled":
            for link in self.links.values():
                if link.router is not None and link.router.owes(params.get("requestId")):
                    return self._through(link, jsonrpc.encode(message), now)
            return []
        if method in ("notifications/roots/list_changed", "notifications/progress"):
            actions: list[Action] = []
            for link in self.links.values():
                if link.state == "ready":
                    actions += self._through(link, jsonrpc.encode(message), now)
            return actions
        return []  # notifications/initialized is the gateway's; the servers get their own

    def _client_answer(self, message: Message, now: float) -> list[Action]:
        asked = self._asked.pop(str(message.get("id")), None)
        if asked is None:
            return []
        server, original = asked
        link = self.links[server]
        if link.router is None:
            return []
        return self._through(link, jsonrpc.encode({**message, "id": original}), now)

    def _caller(self) -> Caller:
        dynamic = self.catalog.options.mode == "dynamic"
        return Caller(declared=self._declared, session=self._session if dynamic else None)

    def _tools(self, message: Message, now: float) -> list[Action]:
        request_id: RequestId = message["id"]
        try:
            outcome = dispatch(message["method"], self.catalog, message.get("params"), self._caller())
        except LazyMCPError as exc:
            return [ToClient(jsonrpc.error_from(request_id, exc))]
        if isinstance(outcome, Answer):
            result = outcome.result
            if message["method"] in (DESCRIBE, DESCRIBE_BATCH):
                down = {name: link.reason or "" for name, link in self.links.items() if link.state == "down"}
                result = mark_unavailable(result, down, self.names)
            answer = ToClient(jsonrpc.result_line(request_id, result))
            if outcome.changed:
                return [ToClient(jsonrpc.notification_line("notifications/tools/list_changed")), answer]
            return [answer]
        params = cast(dict[str, Any], message.get("params") or {})
        name, arguments = (outcome.name, outcome.arguments) if isinstance(outcome, Run) else (params.get("name"), None)
        owner = self.names.owner(name) if isinstance(name, str) else None
        if owner is None:
            text = f"Unknown tool: {name!r}"
            return [ToClient(jsonrpc.error_line(request_id, ErrorCode.INVALID_PARAMS, text, {"name": name}))]
        server, original = owner
        call_params = {**params, "name": original}
        if arguments is not None:
            call_params["arguments"] = arguments
        return self._call(self.links[server], {**message, "params": call_params}, now)

    def _call(self, link: Link, message: Message, now: float, line: bytes | None = None) -> list[Action]:
        """Send a request the gateway has decided to its server (``line``: its bytes as they came)."""
        if link.refused(now):
            return [ToClient(self._unavailable(link, message["id"]))]
        if link.state == "ready" and link.router is not None:
            return self._relay(link, link.router.forward(message, line, now), now)
        starting = link.state in ("idle", "down")
        if starting:
            self._spawn(link)  # a new router, and a new queue
        link.queued.append(line or jsonrpc.encode(message))
        return [Start(link.entry.name)] if starting else []

    def _gather(self, request_id: RequestId, method: str, params: dict[str, Any], now: float) -> list[Action]:
        """A list every server answers a part of: asked of each, answered when all parts are in."""
        if not self.links:
            return [ToClient(jsonrpc.result_line(request_id, {LISTS[method]: []}))]
        actions: list[Action] = []
        for server, request in self.passthrough.begin(request_id, method, params):
            link = self.links[server]
            if link.refused(now):
                answer = self.passthrough.part(server, {"id": request["id"]})
                actions += [ToClient(answer)] if answer is not None else []
            else:
                actions += self._call(link, request, now)
        return actions

    def _unavailable(self, link: Link, request_id: RequestId) -> bytes:
        reason = link.reason or "not running"
        text = f"Server {link.entry.name!r} is unavailable: {reason}"
        return jsonrpc.error_line(request_id, ErrorCode.UPSTREAM_ERROR, text, {"server": link.entry.name})

    # --- servers -> client ---------------------------------------------------------------------

    def from_server(self, server: str, line: bytes, now: float) -> list[Action]:
        """Decide what to do with one line from a server."""
        link = self.links[server]
        if link.router is None:
            return []
        return self._relay(link, link.router.from_server(line, now), now)

    def _through(self, link: Link, line: bytes, now: float) -> list[Action]:
        assert link.router is not None
        return self._relay(link, link.router.from_client(line, now), now)

    def _relay(self, link: Link, actions: Sequence[RouterAction], now: float) -> list[Action]:
        """A router's actions as the gateway's: its answers and requests to the client, mapped."""
        out: list[Action] = []
        for action in actions:
            if isinstance(action, RouterToServer):
                out.append(Send(link.entry.name, action.data))
            elif isinstance(action, Fail):
                return out + self._down(link, action.reason, now)
            elif isinstance(action, Say):
                out.append(Say(f"server {link.entry.name!r}: {action.text}"))
            else:
                out += self._to_client(link, action.data, now)
        if link.router is not None and link.router.catalog is not link.seen:
            out += self._new_tools(link, now)
        return out

    def _to_client(self, link: Link, data: bytes, now: float) -> list[Action]:
        if b'"method"' not in data and b"lazymcp-gateway-" not in data:
            return [ToClient(data)]  # the answer to a client request: as it came (the router checked it)
        message = jsonrpc.parse(data)
        method = message.get("method")
        if method is None:
            request_id = message.get("id")
            if request_id == _INIT:
                return self._handshake(link, message, now)
            if isinstance(request_id, str) and request_id.startswith(GATHER_PREFIX):
                answer = self.passthrough.part(link.entry.name, message)
                return [ToClient(answer)] if answer is not None else []
            return [ToClient(data)]
        if "id" in message:  # a request to the client: sampling, elicitation, roots, ping
            self._asked_count += 1
            gateway_id = f"lazymcp-gateway-{self._asked_count}"
            self._asked[gateway_id] = (link.entry.name, message["id"])
            return [ToClient(jsonrpc.encode({**message, "id": gateway_id}))]
        if method == "notifications/tools/list_changed":
            return []  # the gateway announces its own, once its catalog is rebuilt
        return [ToClient(data)]

    def _handshake(self, link: Link, message: Message, now: float) -> list[Action]:
        result = message.get("result")
        if not isinstance(result, dict):
            detail = jsonrpc.field(message.get("error"), "message") or "no result"
            return self._down(link, f"it refused the gateway's initialize: {detail}", now)
        version = jsonrpc.field(cast(dict[str, Any], result).get("serverInfo"), "version")
        link.version = version if isinstance(version, str) else None
        link.state = "ready"
        actions = self._through(link, jsonrpc.notification_line("notifications/initialized"), now)
        queued, link.queued = link.queued, []
        for line in queued:
            actions += self._through(link, line, now)
        return actions

    def _new_tools(self, link: Link, now: float) -> list[Action]:
        assert link.router is not None
        catalog = link.seen = link.router.catalog
        if catalog is None:
            return []
        previous, link.tools = link.tools, catalog.tools
        before = self.catalog.version
        try:
            self.catalog = self._build()
        except ConfigError as exc:  # its new list takes another server's tool name: it fails alone
            link.tools = previous
            self.catalog = self._build()
            return self._down(link, exc.message.removeprefix(f"server {link.entry.name!r}: "), now)
        actions: list[Action] = [Save(link.entry.name, catalog.tools, link.version)]
        if self.catalog.version != before and self._client is not None:
            actions.append(ToClient(jsonrpc.notification_line("notifications/tools/list_changed")))
        return actions + self._release_waiting(now)

    # --- faults --------------------------------------------------------------------------------

    def _down(self, link: Link, reason: str, now: float) -> list[Action]:
        """The server failed: answer what it owed, refuse it for a backoff, and keep its tools listed."""
        name = link.entry.name
        reason = f"server {name!r}: {reason}"
        actions: list[Action] = [Stop(name, reason)]
        owed = [jsonrpc.parse(line)["id"] for line in link.queued]
        link.queued = []
        if link.router is not None:
            for failure in link.router.upstream_failed(reason):
                if isinstance(failure, ToClient):
                    actions += self._to_client(link, failure.data, now)
        link.failed(reason, now)
        for request_id in owed:
            if isinstance(request_id, str) and request_id.startswith(GATHER_PREFIX):
                answer = self.passthrough.part(name, {"id": request_id})
                actions += [ToClient(answer)] if answer is not None else []
            else:
                actions.append(ToClient(self._unavailable(link, request_id)))
        if link.tools is None:
            link.tools = ()  # no list to show for it: the others are not kept waiting
            actions += self._release_waiting(now)
        return actions

    def _release_waiting(self, now: float) -> list[Action]:
        """Answer the ``tools/*`` requests that waited for the first lists, once none is awaited."""
        if self.discovering:
            return []
        waiting, self._waiting = self._waiting, []
        actions: list[Action] = []
        for message, _ in waiting:
            actions += self._tools(message, now)
        return actions

    def expire(self, now: float) -> list[Action]:
        """Fail every server that has left a request unanswered past the timeout."""
        actions: list[Action] = []
        for link in self.links.values():
            if link.router is not None:
                actions += self._relay(link, link.router.expire(now), now)
        return actions

    # --- the merged catalog --------------------------------------------------------------------

    def _build(self) -> Catalog:
        self.names = Namespace(self.separator, prefixed=True)
        servers = [(link.entry, link.tools or ()) for link in self.links.values()]
        return merged_catalog(servers, self.options, self.names, auto=self.mode == "auto", budget=self.budget)
