"""The gateway's sans-IO core, client side: one client, many servers, one merged lazy catalog.

Theory of operation. ``Gateway.from_client`` and ``Gateway.from_server`` take one message each and return
actions (``lazymcp.core.actions``); the driver carries them out. The servers' lives are
``lazymcp.gateway.servers``'s; this front decides what the client gets.

- The gateway is the client's one server: it answers ``initialize``, ``ping`` and every ``tools/*``
  request itself, through ``lazymcp.surfaces.methods.dispatch`` over one ``Catalog`` of every server's tools
  named ``<server><separator><tool>`` (``lazymcp.gateway.namespace``). A call the catalog leaves to a
  server goes to it as the server's own ``tools/call`` under the client's id; its answer comes back as
  it came. The ``tools/*`` requests, their rate limits and the report of each call are
  ``lazymcp.gateway.tool_requests``'s.
- A server's tools come from its manifest until it runs; a server without one is started at once and
  the first ``tools/*`` requests wait for its list, ``first_list_wait`` seconds at most: past it they are
  answered without it, it is named on stderr and in ``describe_tools`` (``unlisted``), and its tools are
  announced with ``list_changed`` when they come. Others start on their first call.
- A server that fails fails alone (``lazymcp.gateway.lifecycle``): what it owed is answered with an
  error naming it, its tools stay listed, and ``tools/describe`` marks them unavailable.
- Requests servers make of the client (sampling, elicitation, roots) get session ids, so two servers'
  ids never meet; the client's answer goes back to the server that asked, under the server's id. These
  and the notifications either way are relayed by ``lazymcp.gateway.relay``.
- Prompts and resources are routed and gathered by ``lazymcp.gateway.passthrough``.
- A new tool list from any server rebuilds the merged catalog; when what is listed changed, the client
  gets one ``notifications/tools/list_changed``.
- A 2026-07-28 client sends no ``initialize``: its first request lets the servers' handshakes go on,
  ``server/discover`` and ``subscriptions/listen`` are answered here, each request loses its envelope on
  the way to the servers (which the gateway speaks to in 2025-11-25), and every answer gets the envelope
  a 2026 server gives its results (``_answer``, the one door of answers). Servers' requests to such a
  client are refused, and change notifications go to its listen streams.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from lazymcp.access.policy import ANONYMOUS, Grant, Principal
from lazymcp.access.ratelimit import Limiter
from lazymcp.core.actions import Action, Save, Say, Stop, ToClient
from lazymcp.core.entries import ServerEntry
from lazymcp.core.session import ClientSession
from lazymcp.core.upstream import Asks, Notice, Reply, Tools
from lazymcp.gateway.handshake import LATEST, Handshakes
from lazymcp.gateway.merged import DEFAULT_BUDGET, Merged, Seed
from lazymcp.gateway.namespace import Namespace
from lazymcp.gateway.passthrough import LISTS, ROUTED, Passthrough
from lazymcp.gateway.passthrough import PREFIX as GATHER_PREFIX
from lazymcp.gateway.progress import StartUp
from lazymcp.gateway.relay import Relay
from lazymcp.gateway.servers import STALE, Down, Happened, Heard, Servers
from lazymcp.gateway.tool_requests import LIST_CHANGED_TOOLS, ToolRequests
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.bridge import Envelope, Serializer, is_modern, legacy_params
from lazymcp.protocol.errors import ConfigError, ErrorCode
from lazymcp.protocol.jsonrpc import Frame, RequestId
from lazymcp.protocol.limits import CLIENT_TIMEOUT, FIRST_LIST_WAIT
from lazymcp.protocol.messages import SEPARATOR, Tool
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import METHODS
from lazymcp.surfaces.options import Options
from lazymcp.tools.manifest import Manifest


def _result(request_id: RequestId, result: dict[str, Any]) -> Frame:
    return Frame({"jsonrpc": "2.0", "id": request_id, "result": result})


def _error(request_id: object, code: ErrorCode, text: str, data: object = None) -> Frame:
    return Frame(jsonrpc.error_message(request_id, code, text, data))


@dataclass
class Gateway:
    """The decisions of one gateway session. ``now`` arguments are monotonic seconds."""

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
    client_timeout: float | None = CLIENT_TIMEOUT
    """Seconds the client may take to answer a server's request (sampling, elicitation)."""
    serialize: Serializer | None = None
    """The 2026 wire model results bridged to a 2026 client go through."""
    seed: Seed | None = None
    """The catalog of a gateway over the same manifests (an earlier HTTP session's): used, not rebuilt."""
    first_list_wait: float | None = FIRST_LIST_WAIT
    """Seconds a ``tools/*`` request waits for the first lists of starting servers (None: no bound but theirs)."""
    grant: Grant | None = None
    """The tools this session's principal may use (``lazymcp.access.policy``): the only ones it sees; None: all."""
    principal: Principal = ANONYMOUS
    """Who this session serves."""
    limiter: Limiter | None = None
    """The rate limits its calls count against (``lazymcp.access.ratelimit``), shared by every session; None: none."""
    observe: bool = False
    """Report each answered ``tools/call`` (``Called``: the audit line, the metrics)."""
    command: str = "gateway"
    isolates_servers: bool = True
    servers: Servers = field(init=False)
    merged: Merged = field(init=False)
    session: ClientSession = field(init=False)
    passthrough: Passthrough = field(init=False)
    relay: Relay = field(init=False)
    tool_requests: ToolRequests = field(init=False)
    handshakes: Handshakes = field(init=False)
    startup: StartUp = field(init=False, default_factory=StartUp)

    def __post_init__(self) -> None:
        self.servers = Servers(
            self.entries, self.manifests, self.timeout, self.client_timeout, self.client_info, self.first_list_wait
        )
        self.merged = Merged(self.options, self.separator, self.mode, self.budget, seed=self.seed, grant=self.grant)
        key = tuple((name, m.fetched, m.version) if m else (name,) for name, m in self.manifests.items())
        self.merged.build(self.servers.tool_lists(), key)
        self.seed = self.merged.seed
        self.passthrough = Passthrough([s.name for s in self.servers], Namespace(self.separator), grant=self.grant)
        entries = [s.entry for s in self.servers]
        by_server, grant = self.merged.tools_by_server, self.grant
        self.handshakes = Handshakes(entries, self.separator, self.options, self.client_info, by_server, grant)
        self.session = ClientSession.of(self.serialize)
        self.relay = Relay(self.servers, self.session)
        self.session.bridge.upstream_init = self.handshakes.result(LATEST)  # what server/discover tells
        envelope = Envelope(server_info=self.client_info)  # what a 2026 client's results are stamped with
        self.tool_requests = ToolRequests(
            self.merged, self.servers, self.session, envelope, self._call, self.principal, self.limiter, self.observe
        )

    def entry(self, server: str) -> ServerEntry:
        return self.servers[server].entry

    @property
    def discovering(self) -> bool:
        return self.servers.discovering

    @property
    def owed(self) -> int:
        """Client requests not answered yet."""
        return (
            len(self.session.waiting) + self.servers.owed + len(self.session.relist) + len(self.tool_requests.running)
        )

    # --- start-up -------------------------------------------------------------------------------------

    def launch(self, eager: bool = False) -> list[Action]:
        """Start what must run now: servers without a manifest (or a stale one), or all with ``eager``."""
        starting = [s.name for s in self.servers if eager or s.tools is None or s.name in self.stale]
        self.startup.launched(starting)
        return self._happened([h for name in starting for h in self.servers.start(name)], 0.0)

    def started(self, server: str, now: float) -> list[Action]:
        """The server's process runs: the gateway, as its client, opens the handshake (or waits for the
        client's ``initialize``)."""
        handshake = self.handshakes.params(self.session.record.initialize, wait=self.wait_for_client)
        self.startup.started(now)
        return self._happened(self.servers.started(server, handshake, now), now)

    def start_failed(self, server: str, reason: str, now: float) -> list[Action]:
        return self._happened(self.servers.start_failed(server, reason, now), now)

    def _open_waiting(self, now: float) -> list[Action]:
        """The client is known: the servers started before it came open their handshakes."""
        handshake = self.handshakes.params(self.session.record.initialize, wait=self.wait_for_client)
        assert handshake is not None
        return self._happened(self.servers.open_waiting(handshake, now), now)

    # --- client -> servers ----------------------------------------------------------------------------

    def from_client(self, data: bytes | Frame, now: float) -> list[Action]:
        """Decide what to do with one message from the client (its line, or its frame when parsed)."""
        frame = jsonrpc.client_frame(data)
        if frame is None:
            return [ToClient(jsonrpc.parse_refusal())]
        message = frame.message
        if "method" not in message:  # the client's answer to a server's request
            return self._happened(self.relay.answer(frame, now), now)
        if "id" not in message:
            cancels = frame.method == "notifications/cancelled"
            stop = self.tool_requests.code_cancelled(frame.params.get("requestId")) if cancels else []
            return stop or self._happened(self.relay.notification(frame), now)
        refused = jsonrpc.request_refusal(frame)
        if refused is not None:
            return [ToClient(refused)]
        if is_modern(frame.params):
            return self._modern_request(frame, now)
        return self._request(frame, now)

    def _request(self, frame: Frame, now: float) -> list[Action]:
        """A client request, of either era (a 2026 one without its envelope)."""
        message = frame.message
        request_id: RequestId = message["id"]
        method: str = message["method"]
        params = frame.params
        if not self.session.known and self.wait_for_client and method not in ("initialize", "ping"):
            # Its servers wait for the client's handshake: so would this request, with no end.
            text = "Invalid request: send initialize first"
            return [self._answer(_error(request_id, ErrorCode.INVALID_REQUEST, text))]
        if method == "initialize":
            self.session.initialized(params)
            result = self.handshakes.result(params.get("protocolVersion"), self.merged.code_tools(self.session))
            return [self._answer(_result(request_id, result)), *self._open_waiting(now)]
        if method in ("ping", "logging/setLevel"):
            return [self._answer(_result(request_id, {}))]
        if method in METHODS:
            return self.tool_requests.request(frame, now)
        if method in LISTS:
            return self._gather(request_id, method, params, now)
        if method in ROUTED:
            routed = self.passthrough.route(method, params)
            if isinstance(routed, str):
                return [self._answer(_error(request_id, ErrorCode.INVALID_PARAMS, routed))]
            server, routed_params = routed
            return self._call(server, frame if routed_params == params else frame.changed(params=routed_params), now)
        return [self._answer(_error(request_id, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}"))]

    def _modern_request(self, frame: Frame, now: float) -> list[Action]:
        """A 2026-07-28 request: discover and listen answered here, the rest as a 2025 one, enveloped."""
        actions: list[Action] = []
        params = frame.params
        first = not self.session.known
        self.session.met(params, self.client_info)
        if first:  # the servers' handshakes go on without the client's
            actions = self._open_waiting(now)
        answer = self.session.bridge.answer(frame.message, lambda: self.session.bridge.upstream_init)
        if answer is not None:
            return [*actions, ToClient(Frame(answer))]
        if frame.method not in METHODS:  # answered by a server, or by the gateway: enveloped on the way out
            self.session.sent_on(frame.id, cast(str, frame.method))
        return actions + self._request(frame.changed(params=legacy_params(params)), now)

    def _call(self, server: str, frame: Frame, now: float) -> list[Action]:
        """Send a request the gateway has decided to its server."""
        if self.servers[server].life.refused(now):
            return [self._answer(self.servers[server].unavailable(frame.message["id"]))]
        if not frame.fits():
            return [self._answer(jsonrpc.too_deep(frame.message["id"]))]
        return self._happened(self.servers.call(server, frame, now), now)

    def _gather(self, request_id: RequestId, method: str, params: dict[str, Any], now: float) -> list[Action]:
        """A list every server answers a part of: asked of each, answered when all parts are in."""
        if not Frame({"params": params}).fits():  # no server could be asked: refused in words, at once
            return [self._answer(jsonrpc.too_deep(request_id))]
        asked = self.passthrough.begin(request_id, method, params)
        if not asked:  # no server, or none whose entries of this list the principal may see
            return [self._answer(_result(request_id, {LISTS[method]: []}))]
        actions: list[Action] = []
        for name, request in asked:
            cached = self.servers[name].cached(method, now)
            if cached is not None:  # from its manifest: not started
                part = {"id": request["id"], "result": {LISTS[method]: cached}}
                actions += self._joined(self.passthrough.part(name, part))
            else:
                actions += self._call(name, Frame(request), now)
        return actions

    def _joined(self, answer: jsonrpc.Message | None) -> list[Action]:
        """The client's answer to a gathered list, once every part is in, and what joining the parts told
        the operator (a URI two servers list)."""
        if answer is None:
            return []
        return [*(Say(note) for note in self.passthrough.take_notes()), self._answer(Frame(answer))]

    # --- servers -> client ----------------------------------------------------------------------------

    def from_server(self, server: str, data: bytes, now: float) -> list[Action]:
        """Decide what to do with one line from a server."""
        takes_requests = not self.session.modern  # a 2026 client takes no requests from its servers
        return self._happened(self.servers.receive(server, data, now, takes_requests=takes_requests), now)

    def _happened(self, happened: Sequence[Happened], now: float) -> list[Action]:
        """What the servers did and said, as actions: their answers and notices shaped for the client."""
        actions: list[Action] = []
        for item in happened:
            if isinstance(item, Heard):
                actions += self._heard(item.server, item.event, now)
            elif isinstance(item, Down):
                actions += self._down(item, now)
            else:
                actions.append(item)
        return actions

    def _heard(self, server: str, event: Reply | Asks | Notice | Tools, now: float) -> list[Action]:
        if isinstance(event, Reply):
            return self._reply(server, event.frame, now)
        if isinstance(event, Asks):  # a request to the client: sampling, elicitation, roots, ping
            return self._happened(self.relay.ask(server, event.frame, now), now)
        if isinstance(event, Tools):
            return self._new_tools(server, event.catalog.tools, now)
        return self.relay.notice(server, event.frame)

    def _reply(self, server: str, frame: Frame, now: float) -> list[Action]:
        """A server's answer: a part of a gathered list, or the client's (a watched call's reported)."""
        request_id = frame.id
        if isinstance(request_id, str) and request_id.startswith(GATHER_PREFIX):
            return self._part(server, frame)
        called = self.tool_requests.answered(frame, now)
        return [self._answer(frame)] if called is None else [self._answer(frame), called]

    def code_result(self, request_id: RequestId, result: dict[str, Any], now: float) -> list[Action]:
        """A ``run_code``'s answer (``lazymcp.run.sandbox``), when it is still owed, and its report."""
        answer = _result(request_id, result)
        reported = self.tool_requests.code_answered(request_id, answer, now)
        return [] if reported is None else [self._answer(answer), *reported]

    def _answer(self, frame: Frame) -> ToClient:
        """The one door of answers to the client (a 2026 client's get their envelope here)."""
        return ToClient(self.session.shaped(frame, self.client_info))

    def _part(self, server: str, frame: Frame) -> list[Action]:
        """A server's answer to its part of a list: kept for its manifest, and the client's answer once
        every part is in."""
        listed = self.passthrough.listed(server, frame.message)
        saved = self.servers[server].listed(*listed) if listed is not None else []
        return [*saved, *self._joined(self.passthrough.part(server, frame.message))]

    def learned(self, name: str, tools: Sequence[Tool], now: float) -> list[Action]:
        """A server's tool list seen elsewhere (another gateway instance's process of it, shared through
        its manifest): listed as if this session's had said so, and the client told when it changed.
        Nothing is saved: the list comes from a saved manifest."""
        if all(server.name != name for server in self.servers):
            return []
        return [action for action in self._new_tools(name, tools, now) if not isinstance(action, Save)]

    def changed_elsewhere(self, name: str, notification: str) -> list[Action]:
        """A server's prompts or resources changed, as another gateway instance's process of it said
        (``notifications/prompts/list_changed`` or ``.../resources/list_changed``): its lists here go
        stale, and the client is told as if this session's process had said so. Nothing is saved."""
        if notification not in STALE or all(server.name != name for server in self.servers):
            return []
        self.servers[name].changed_elsewhere(notification)
        if not self.session.known:
            return []
        return self.relay.announce(Frame({"jsonrpc": "2.0", "method": notification}))

    def _new_tools(self, name: str, tools: Sequence[Tool], now: float) -> list[Action]:
        """A server's new tool list: the merged catalog is rebuilt, and the client told when it changed."""
        server = self.servers[name]
        previous, server.tools = server.tools, tools
        before = self.catalog.version
        try:
            self.merged.rebuild(self.servers.tool_lists())
        except ConfigError as exc:  # its new list takes another server's tool name: it fails alone
            server.tools = previous
            self.merged.rebuild(self.servers.tool_lists())
            return self._happened(self.servers.fail(name, exc.message.removeprefix(f"server {name!r}: "), now), now)
        actions: list[Action] = [
            *server.saved(),
            *self.startup.answered(name, len(tools), len(self.catalog), now),
        ]
        if self.catalog.version != before and self.session.known:
            method = LIST_CHANGED_TOOLS.message["method"]
            changed = self.session.listeners(method) if self.session.modern else [LIST_CHANGED_TOOLS]
            actions += [ToClient(frame) for frame in changed]
        return actions + self.tool_requests.release(now)

    # --- faults ---------------------------------------------------------------------------------------

    def _down(self, down: Down, now: float) -> list[Action]:
        """A server failed: what it owed is answered, and its tools stay listed (none waits for them)."""
        self.session.asked.forget(down.server)  # a late answer of the client's must not reach its successor
        actions: list[Action] = []
        for answer in down.answers:
            actions += self._reply(down.server, answer, now)
        actions += self.startup.answered(down.server, None, len(self.catalog), now)
        if self.servers[down.server].tools is None:  # no list to show for it: the others are not kept waiting
            actions += self.tool_requests.release(now)
        return actions

    def interrupt(self, reason: str, now: float) -> list[Action]:
        """The session ends now: every request still owed an answer gets an error naming ``reason``."""
        actions: list[Action] = [ToClient(held) for held in self.session.relist.relisted()]
        for server in self.servers:
            if server.life.running:
                happened = self.servers.fail(server.name, reason, now)
                actions += [a for a in self._happened(happened, now) if not isinstance(a, Stop)]
        return actions + self.tool_requests.interrupted(reason)

    def expire(self, now: float) -> list[Action]:
        """Fail every server that has left a request unanswered past the timeout; answer the ``tools/*``
        requests that waited ``first_list_wait`` for the first lists without the servers still starting."""
        actions: list[Action] = [ToClient(held) for held in self.session.relist.due(now)]
        return actions + self.tool_requests.overdue(now) + self._happened(self.servers.expire(now), now)

    # --- the merged catalog ---------------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        return self.merged.catalog

    @property
    def names(self) -> Namespace:
        return self.merged.names
