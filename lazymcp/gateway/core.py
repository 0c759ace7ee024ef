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
- A 2026-07-28 client sends no ``initialize``: its first request lets the servers' handshakes go on,
  ``server/discover`` and ``subscriptions/listen`` are answered here (``lazymcp.bridge``), each request
  loses its envelope on the way to the servers (which the gateway speaks to in 2025-11-25), and each
  answer gets the envelope a 2026 server gives its results. Servers' requests to such a client are
  refused, since 2026 servers make none, and change notifications go to its listen streams.
- ``transparent``: the proxy, a gateway of one server with nothing renamed. Its router meets the client
  itself (handshake, eras, the bytes of everything but tool listing), the server is started at once,
  and its failure ends the session (``Fail``) instead of being retried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from lazymcp import jsonrpc
from lazymcp.bridge import CLIENT_INFO_KEY, LIST_CHANGED, Bridge, Serializer, is_modern, meta
from lazymcp.catalog import Catalog
from lazymcp.errors import ConfigError, ErrorCode, LazyMCPError
from lazymcp.gateway.asked import Asked
from lazymcp.gateway.config import ServerEntry
from lazymcp.gateway.link import Action, Link, Save, Send, Start, Stop, ToClient
from lazymcp.gateway.manifest import Manifest, entries_of
from lazymcp.gateway.merged import DEFAULT_BUDGET, instructions, mark_described, mark_unavailable, merged_catalog
from lazymcp.gateway.modern import ModernClient
from lazymcp.gateway.namespace import Namespace
from lazymcp.gateway.passthrough import BY_URI, LISTS, Passthrough
from lazymcp.gateway.passthrough import PREFIX as GATHER_PREFIX
from lazymcp.jsonrpc import Message, RequestId
from lazymcp.limits import CLIENT_TIMEOUT
from lazymcp.messages import DESCRIBE, DESCRIBE_BATCH, DESCRIBE_TOOLS, SEPARATOR
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
STALE = {
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}
"""The cached lists a server's change notification makes stale."""


@dataclass(frozen=True, slots=True)
class Seed:
    """A merged catalog and its names, built from the manifests ``key`` names (server, fetched, version)."""

    key: tuple[tuple[object, ...], ...]
    catalog: Catalog
    names: Namespace


@dataclass
class Gateway:
    """The decisions of one gateway connection. ``now`` arguments are monotonic seconds."""

    entries: Sequence[ServerEntry]
    options: Options = field(default_factory=Options)
    manifests: Mapping[str, Manifest | None] = field(default_factory=lambda: {})
    separator: str = SEPARATOR
    timeout: float | None = 300.0
    mode: str | None = None
    """``auto``: the describe listing while its stubs fit ``budget`` tokens, the proxy surface beyond."""
    budget: int = DEFAULT_BUDGET
    stale: frozenset[str] = frozenset()
    """Servers whose manifest is past its TTL: started at launch to refresh it."""
    client_info: dict[str, str] = field(default_factory=lambda: {"name": "lazymcp-gateway", "version": "0"})
    wait_for_client: bool = True
    """Hold a started server's handshake until the client's ``initialize``, whose capabilities it passes on."""
    transparent: bool = False
    """The proxy: one server, started at once, whose router meets the client itself (its handshake,
    eras and bytes pass through); its failure ends the session with ``Fail``."""
    client_timeout: float | None = CLIENT_TIMEOUT
    """Seconds the client may take to answer a server's request (sampling, elicitation)."""
    serialize: Serializer | None = None
    """The 2026 wire model results bridged to a 2026 client go through."""
    links: dict[str, Link] = field(init=False)
    catalog: Catalog = field(init=False)
    names: Namespace = field(init=False)
    _client: dict[str, Any] | None = None  # the client's initialize params
    _declared: bool = False
    _asked: Asked = field(default_factory=Asked)  # servers' requests to the client, under gateway ids
    _waiting: list[Message] = field(default_factory=lambda: [])  # tools/* before the first lists
    _session: DynamicSession = field(default_factory=DynamicSession)
    passthrough: Passthrough = field(init=False)
    _modern: ModernClient = field(init=False)  # the client, when it speaks 2026-07-28
    seed: Seed | None = None
    """The catalog of a gateway over the same manifests (an earlier HTTP session's): used, not rebuilt."""

    def __post_init__(self) -> None:
        if self.transparent and len(self.entries) != 1:
            raise ValueError("a transparent gateway has exactly one server")
        self.names = Namespace(self.separator, prefixed=True)
        self.links = {}
        for entry in self.entries:
            manifest = self.manifests.get(entry.name)
            link = Link(entry)
            if manifest is not None:
                link.tools, link.version, link.lists = manifest.tools, manifest.version, dict(manifest.lists)
            self.links[entry.name] = link
        key = tuple((name, m.fetched, m.version) if m else (name,) for name, m in self.manifests.items())
        if self.seed is not None and self.seed.key == key:
            self.catalog, self.names = self.seed.catalog, self.seed.names  # neither is changed in place
        else:
            self.catalog = self._build()
        self.seed = Seed(key, self.catalog, self.names)
        self.passthrough = Passthrough(list(self.links), Namespace(self.separator))
        self._modern = ModernClient(self.client_info, Bridge(self.serialize, self._init_result(LATEST)))

    # --- start-up ------------------------------------------------------------------------------

    def launch(self, eager: bool = False) -> list[Action]:
        """Start what must run now: servers without a manifest (or a stale one), or all with ``eager``."""
        return [
            Start(name)
            for name, link in self.links.items()
            if eager or self.transparent or link.tools is None or name in self.stale
            for _ in [self._spawn(link)]
        ]

    def _spawn(self, link: Link) -> None:
        link.state, link.queued = "starting", []
        # Behind a gateway a router lists everything to the gateway, which does the listing and checking.
        options = self.options if self.transparent else replace(self.options, mode="eager", check_arguments=False)
        link.router = Router(
            options,
            timeout=self.timeout,
            client_info=self.client_info,
            serialize=self.serialize,
            client_timeout=self.client_timeout,
        )
        link.seen = None

    @property
    def _only(self) -> Link:
        return next(iter(self.links.values()))

    @property
    def upstream_catalog(self) -> Catalog | None:
        """A transparent gateway's catalog: its one server's, once listed."""
        router = self._only.router if self.transparent else None
        return router.catalog if router is not None else None

    @property
    def discovering(self) -> bool:
        """Is a server's first tool list still awaited?"""
        return any(
            link.tools is None and link.state != "down" and link.router is not None for link in self.links.values()
        )

    def _started(self, server: str, now: float) -> list[Action]:
        """The server's process runs: the gateway, as its client, opens the handshake."""
        link = self.links[server]
        if self.transparent:  # the client's own handshake goes through
            link.state = "ready"
            queued, link.queued = link.queued, []
            actions: list[Action] = []
            for line in queued:
                actions += self._through(link, line, now)
            return actions
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

    def _start_failed(self, server: str, reason: str, now: float) -> list[Action]:
        """The server could not be started or went away."""
        link = self.links[server]
        if self.transparent:
            return [Fail(reason)]
        if link.state in ("idle", "down"):
            return []
        return self._down(link, reason, now)

    # --- client -> servers ---------------------------------------------------------------------

    def _from_client(self, line: bytes, now: float, message: Message | None = None) -> list[Action]:
        """Decide what to do with one line from the client (``message``: the line, when already parsed)."""
        if self.transparent:
            link = self._only
            if link.state != "ready" or link.router is None:
                link.queued.append(line)  # the server is being started
                return []
            return self._relay(link, link.router.from_client(line, now, message), now)
        parsed = jsonrpc.parse_or_refuse(line, message)
        if isinstance(parsed, bytes):
            return [ToClient(parsed)]
        message = parsed
        method = message.get("method")
        if "method" not in message:
            return self._client_answer(message, now)
        if "id" not in message:
            return self._client_notification(message, now)
        request_id = message["id"]
        if not isinstance(method, str) or not jsonrpc.valid_id(request_id):
            return [ToClient(jsonrpc.error_line(None, ErrorCode.INVALID_REQUEST, "Invalid request"))]
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            error = jsonrpc.error_line(request_id, ErrorCode.INVALID_PARAMS, "Invalid params: expected an object")
            return [ToClient(error)]
        if params is not None and is_modern(cast(dict[str, Any], params)):
            return self._modern_request(message, cast(dict[str, Any], params), now)
        return self._request(message, line, now)

    def _request(self, message: Message, line: bytes | None, now: float) -> list[Action]:
        """A client request, of either era (a 2026 one without its envelope)."""
        request_id: RequestId = message["id"]
        method: str = message["method"]
        params = message.get("params")
        if self._client is None and self.wait_for_client and method not in ("initialize", "ping"):
            # Its servers wait for the client's handshake: so would this request, with no end.
            text = "Invalid request: send initialize first"
            return [ToClient(jsonrpc.error_line(request_id, ErrorCode.INVALID_REQUEST, text))]
        if method == "initialize":
            result = self._initialize(cast(dict[str, Any], params or {}))
            return [ToClient(jsonrpc.result_line(request_id, result)), *self._handshakes(now)]
        if method == "ping":
            return [ToClient(jsonrpc.result_line(request_id, {}))]
        if method in METHODS:
            if self.discovering:
                self._waiting.append(message)
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
        return self._init_result(version if isinstance(version, str) and version in SUPPORTED else LATEST)

    def _modern_request(self, message: Message, params: dict[str, Any], now: float) -> list[Action]:
        """A 2026-07-28 request: discover and listen answered here, the rest as a 2025 one, enveloped."""
        actions: list[Action] = []
        if self._client is None:  # the first: the servers' handshakes go on without the client's
            info = meta(params).get(CLIENT_INFO_KEY)
            self._client = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": info or self.client_info}
            actions = self._handshakes(now)
        legacy = self._modern.request(message, params)
        if isinstance(legacy, bytes):
            return [*actions, ToClient(legacy)]
        if message["method"] not in METHODS:  # answered by a server
            self._modern.sent_on(message["id"], message["method"])
        return actions + self._request(legacy, None, now)

    def _handshakes(self, now: float) -> list[Action]:
        """The client is known: the servers started before it came open their handshakes."""
        actions: list[Action] = []
        for name, link in self.links.items():
            if link.state == "spawned":
                actions += self._started(name, now)
        return actions

    def _init_result(self, version: str) -> dict[str, Any]:
        result = {
            "protocolVersion": version,
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
            self._modern.cancelled(params.get("requestId"))  # no answer, or listen stream, is owed it now
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
        asked = self._asked.settle(str(message.get("id")))
        if asked is None:
            return []
        server, original = asked
        link = self.links[server]
        if link.router is None:
            return []
        return self._through(link, jsonrpc.encode({**message, "id": original}), now)

    def _caller(self) -> Caller:
        if self._modern.active:
            return self._modern.caller()
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
                result = mark_unavailable(result, self._down_reasons(), self.names)
            elif message["method"] == "tools/call" and jsonrpc.field(message.get("params"), "name") == DESCRIBE_TOOLS:
                result = mark_described(result, self._down_reasons(), self.names)
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
        if self._modern.active:
            self._modern.sent_on(request_id, "tools/call")
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
            cached = link.lists.get(method)
            if link.refused(now) or (cached is not None and link.state in ("idle", "down")):
                part = {LISTS[method]: entries_of(cached)}
                answer = self.passthrough.part(server, {"id": request["id"], "result": part})
                actions += [ToClient(answer)] if answer is not None else []  # from its manifest: not started
            else:
                actions += self._call(link, request, now)
        return actions

    def _part(self, link: Link, message: Message) -> list[Action]:
        """A server's answer to its part of a list: kept for its manifest, and the client's answer once
        every part is in."""
        actions: list[Action] = []
        method = self.passthrough.method_of(link.entry.name, message.get("id"))
        error = message.get("error")
        if method is not None and ("result" in message or jsonrpc.field(error, "code") == ErrorCode.METHOD_NOT_FOUND):
            entries = jsonrpc.field(message.get("result"), LISTS[method])
            entries = cast(list[Any], entries) if isinstance(entries, list) else []  # none, or no such method
            if entries_of(link.lists.get(method)) != entries or method not in link.lists:
                link.lists[method] = entries  # fetched now
                actions += self._save(link)
        answer = self.passthrough.part(link.entry.name, message)
        return actions + ([ToClient(answer)] if answer is not None else [])

    def _down_reasons(self) -> dict[str, str]:
        """Why each failed server is down, by name."""
        return {name: link.reason or "" for name, link in self.links.items() if link.state == "down"}

    def _save(self, link: Link) -> list[Action]:
        """Write the server's manifest: its tools and its lists (those from the manifest keep their time)."""
        if link.tools is None:
            return []
        return [Save(link.entry.name, link.tools, link.version, dict(link.lists))]

    def _unavailable(self, link: Link, request_id: RequestId) -> bytes:
        reason = link.reason or "not running"
        text = f"Server {link.entry.name!r} is unavailable: {reason}"
        return jsonrpc.error_line(request_id, ErrorCode.UPSTREAM_ERROR, text, {"server": link.entry.name})

    # --- servers -> client ---------------------------------------------------------------------

    def _from_server(self, server: str, line: bytes, now: float) -> list[Action]:
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
            elif self.transparent:
                out.append(action)  # the router speaks to the client itself; its failure ends the session
                if isinstance(action, Fail):
                    return out
            elif isinstance(action, Fail):
                return out + self._down(link, action.reason, now)
            elif isinstance(action, Say):
                out.append(Say(f"server {link.entry.name!r}: {action.text}"))
            else:
                out += self._to_client(link, action.data, now)
        if not self.transparent and link.router is not None and link.router.catalog is not link.seen:
            out += self._new_tools(link, now)
        return out

    def _to_client(self, link: Link, data: bytes, now: float) -> list[Action]:
        if b'"method"' not in data and b"lazymcp-gateway-" not in data and b"\\u" not in data:
            return [ToClient(data)]  # the answer to a client request: as it came (the router checked it)
        message = jsonrpc.parse(data)
        method = message.get("method")
        if method is None:
            request_id = message.get("id")
            if request_id == _INIT:
                return self._handshake(link, message, now)
            if isinstance(request_id, str) and request_id.startswith(GATHER_PREFIX):
                return self._part(link, message)
            return [ToClient(data)]
        if "id" in message and self._modern.active:  # a 2026 client takes no requests from its server
            refusal = "the client speaks 2026-07-28, where servers send clients no requests"
            error = jsonrpc.error_line(message["id"], ErrorCode.METHOD_NOT_FOUND, f"Method not found: {refusal}")
            return [Send(link.entry.name, error)]
        if "id" in message:  # a request to the client: sampling, elicitation, roots, ping
            gateway_id = self._asked.ask(link.entry.name, message["id"])
            return [ToClient(jsonrpc.encode({**message, "id": gateway_id}))]
        if method == "notifications/tools/list_changed":
            return []  # the gateway announces its own, once its catalog is rebuilt
        if method == "notifications/cancelled":
            return self._server_cancelled(link, message)
        stale = [link.lists.pop(listed) for listed in STALE.get(method, ()) if listed in link.lists]
        saved = self._save(link) if stale else []  # asked of the server again at the next listing
        if self._modern.active and method in LIST_CHANGED:
            return [*saved, *self._modern.events(method)]
        return [*saved, ToClient(data)]

    def _server_cancelled(self, link: Link, message: Message) -> list[Action]:
        """A server gives up on its request to the client: the client hears it under the id it was given."""
        params = cast(dict[str, Any], message.get("params") or {})
        gateway_id = self._asked.cancelled(link.entry.name, params.get("requestId"))
        if gateway_id is None:
            return []  # not a request of its to the client: nothing to cancel there
        return [ToClient(jsonrpc.notification_line("notifications/cancelled", {**params, "requestId": gateway_id}))]

    def _handshake(self, link: Link, message: Message, now: float) -> list[Action]:
        if link.state != "starting":
            return []  # it failed before answering: already said
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
        actions: list[Action] = self._save(link)
        if self.catalog.version != before and self._client is not None:
            actions += self._tools_changed()
        return actions + self._release_waiting(now)

    def _tools_changed(self) -> list[Action]:
        if self._modern.active:
            return list(self._modern.events("notifications/tools/list_changed"))
        return [ToClient(jsonrpc.notification_line("notifications/tools/list_changed"))]

    # --- faults --------------------------------------------------------------------------------

    def _down(self, link: Link, reason: str, now: float) -> list[Action]:
        """The server failed: answer what it owed, refuse it for a backoff, and keep its tools listed."""
        name = link.entry.name
        reason = f"server {name!r}: {reason}"
        actions: list[Action] = [Stop(name, reason)]
        owed = [jsonrpc.parse(line)["id"] for line in link.queued]
        link.queued = []
        router = link.router
        link.failed(reason, now)  # first: the answers below are not taken for its handshake's
        self._asked.forget(name)  # a late answer of the client's must not reach its successor
        if router is not None:
            for failure in router.upstream_failed(reason):
                if isinstance(failure, ToClient):
                    actions += self._to_client(link, failure.data, now)
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
        for message in waiting:
            actions += self._tools(message, now)
        return actions

    def _interrupt(self, reason: str, now: float) -> list[Action]:
        """The session ends now: every request still owed an answer gets an error naming ``reason``."""
        actions: list[Action] = []
        for link in self.links.values():
            if self.transparent and link.router is not None:
                actions += [a for a in link.router.upstream_failed(reason) if isinstance(a, ToClient)]
                queued, link.queued = link.queued, []
                for line in queued:  # a failed router answers each request at once
                    actions += [a for a in link.router.from_client(line, now) if isinstance(a, ToClient)]
            elif link.state not in ("idle", "down"):
                actions += [a for a in self._down(link, reason, now) if not isinstance(a, Stop)]
        waiting, self._waiting = self._waiting, []
        for message in waiting:
            text = f"The gateway stopped: {reason}"
            actions.append(ToClient(jsonrpc.error_line(message["id"], ErrorCode.UPSTREAM_ERROR, text)))
        return actions

    @property
    def owed(self) -> int:
        """Client requests not answered yet."""
        count = len(self._waiting)
        for link in self.links.values():
            count += sum(1 for line in link.queued if b'"id"' in line and b'"method"' in line)
            if link.router is not None:
                count += link.router.owed
        return count

    def _expire(self, now: float) -> list[Action]:
        """Fail every server that has left a request unanswered past the timeout."""
        actions: list[Action] = []
        for link in self.links.values():
            if link.router is not None:
                actions += self._relay(link, link.router.expire(now), now)
        return actions

    # --- what the I/O calls: each answer to a 2026 client enveloped on the way out -----------------

    def started(self, server: str, now: float) -> list[Action]:
        """The server's process runs: the gateway, as its client, opens the handshake."""
        return self._modern.envelop(self._started(server, now))

    def start_failed(self, server: str, reason: str, now: float) -> list[Action]:
        """The server could not be started or went away."""
        return self._modern.envelop(self._start_failed(server, reason, now))

    def from_client(self, line: bytes, now: float, message: Message | None = None) -> list[Action]:
        """Decide what to do with one line from the client (``message``: the line, when already parsed)."""
        return self._modern.envelop(self._from_client(line, now, message))

    def from_server(self, server: str, line: bytes, now: float) -> list[Action]:
        """Decide what to do with one line from a server."""
        return self._modern.envelop(self._from_server(server, line, now))

    def interrupt(self, reason: str, now: float) -> list[Action]:
        """The session ends now: every request still owed an answer gets an error naming ``reason``."""
        return self._modern.envelop(self._interrupt(reason, now))

    def expire(self, now: float) -> list[Action]:
        """Fail every server that has left a request unanswered past the timeout."""
        return self._modern.envelop(self._expire(now))

    # --- the merged catalog --------------------------------------------------------------------

    def _build(self) -> Catalog:
        self.names = Namespace(self.separator, prefixed=True)
        servers = [(link.entry, link.tools or ()) for link in self.links.values()]
        return merged_catalog(servers, self.options, self.names, auto=self.mode == "auto", budget=self.budget)
