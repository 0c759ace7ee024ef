"""The proxy's sans-IO core: one client, one server, nothing renamed.

Theory of operation. ``Proxy.from_client`` and ``Proxy.from_server`` take one message each and return
actions (``lazymcp.core.actions``); the driver carries them out. The server's side of the conversation
(handshake, era, tool list, waits, faults) is ``lazymcp.core.upstream.Upstream``'s; this core decides
what the client gets.

- Everything but tool listing passes through as the very bytes that arrived: resources, prompts,
  completions, logging, progress, cancellation, the client's own handshake, and requests the server
  sends the client (sampling, elicitation, roots) with their answers. The ``initialize`` (and
  ``server/discover``) result gains the extension's advertisement.
- Every ``tools/*`` request goes to ``lazymcp.surfaces.methods.dispatch`` (the same door as the SDK adapter's and
  the gateway's) over the catalog of the server's own tools. What it answers goes to the client; a call
  it leaves to the server goes upstream as it came, or as the real tool's call (``invoke_tool``, same
  id). A ``dynamic`` session is the client session's; a change to its tools is announced with
  ``list_changed``. The first catalog is checked against the configuration: a tool name the server
  lacks fails the proxy at start-up.
- Eras. The client's era is learnt from its first messages, the server's from its answer to
  ``server/discover``. When a 2026-07-28 client meets a 2025-11-25-only server, the proxy bridges: it
  performs the server's handshake itself, strips the request envelope on the way up, shapes results as
  a 2026 server would on the way down (``lazymcp.protocol.bridge``), answers ``server/discover`` and
  ``subscriptions/listen`` itself, and turns the server's change notifications into events on the
  client's listen streams. Requests from the server cannot cross into 2026-07-28, where servers make
  none: they are refused.
- The server is started at once; what the client sends meanwhile waits for it. Its failure ends the
  session (``Fail``): every request still owed gets an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from lazymcp.core.actions import Action, Fail, Ready, Say, Start, ToClient, ToServer
from lazymcp.core.entries import ServerEntry
from lazymcp.core.session import ClientSession
from lazymcp.core.upstream import Asks, Broke, Event, Notice, Opened, Probed, Reply, Tools, Unlisted, Upstream
from lazymcp.core.waits import Pending
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.bridge import LIST_CHANGED, Serializer, is_modern, legacy_params
from lazymcp.protocol.errors import ErrorCode, LazyMCPError
from lazymcp.protocol.jsonrpc import Frame, RequestId
from lazymcp.protocol.limits import CLIENT_TIMEOUT, DEFAULT_TIMEOUT
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.instructions import catalog_instructions
from lazymcp.surfaces.methods import METHODS, Answer, Run, advertise, dispatch
from lazymcp.surfaces.options import Options

TOOL_METHODS = frozenset(METHODS)


@dataclass
class Proxy:
    """The decisions of one proxy session. ``now`` arguments are monotonic seconds."""

    server: ServerEntry
    options: Options = field(default_factory=Options)
    timeout: float | None = DEFAULT_TIMEOUT
    client_timeout: float | None = CLIENT_TIMEOUT
    client_info: dict[str, str] = field(default_factory=lambda: {"name": "lazymcp-proxy", "version": "0"})
    serialize: Serializer | None = None
    """The 2026 wire model results bridged to a 2026 client go through."""
    command: str = "proxy"
    isolates_servers: bool = False
    session: ClientSession = field(init=False)
    upstream: Upstream = field(init=False)
    _running: bool = False
    _starting: list[Frame] = field(default_factory=lambda: [])  # the client's, while the server starts
    _held: list[Frame] = field(default_factory=lambda: [])  # a 2026 client's, until the server's era is met
    _probing: bool = False
    _ready: bool = False

    def __post_init__(self) -> None:
        self.session = ClientSession.of(self.serialize)
        self.upstream = Upstream(
            self.server.name,
            self.options,
            timeout=self.timeout,
            client_timeout=self.client_timeout,
            client_info=self.client_info,
        )

    @property
    def catalog(self) -> Catalog | None:
        """The server's catalog, once listed."""
        return self.upstream.catalog

    @property
    def bridging(self) -> bool:
        """A 2026-07-28 client in front of a 2025-11-25 server."""
        return self.session.modern and self.upstream.era == "legacy"

    def entry(self, server: str) -> ServerEntry:
        return self.server

    # --- the server's process ---------------------------------------------------------------------------

    def launch(self, eager: bool = False) -> list[Action]:
        """The server starts at once."""
        return [Start(self.server.name)]

    def started(self, server: str, now: float) -> list[Action]:
        """The server runs: what the client sent meanwhile goes on."""
        self._running = True
        starting, self._starting = self._starting, []
        actions: list[Action] = []
        for frame in starting:
            actions += self._client(frame, now)
        return actions

    def start_failed(self, server: str, reason: str, now: float) -> list[Action]:
        return [Fail(reason)]

    # --- client -> server -------------------------------------------------------------------------------

    def from_client(self, data: bytes | Frame, now: float) -> list[Action]:
        """Decide what to do with one message from the client (its line, or its frame when parsed)."""
        frame = jsonrpc.client_frame(data)
        if frame is None:
            return [ToClient(jsonrpc.parse_refusal())]
        if not self._running:
            self._starting.append(frame)
            return []
        return self._client(frame, now)

    def _client(self, frame: Frame, now: float) -> list[Action]:
        if frame.is_answer:  # the client's answer to a request of the server's
            return self._events(self.upstream.answer(frame, now), now)
        if frame.is_notification:
            return self._notification(frame, now)
        refused = jsonrpc.request_refusal(frame)
        if refused is not None:
            return [ToClient(refused)]
        message = frame.message
        request_id: RequestId = message["id"]
        method: str = message["method"]
        if self.upstream.failed is not None:
            return [ToClient(self.upstream.error(request_id))]
        params = frame.params
        if self.session.era is None:
            if method == "initialize":
                self.session.initialized(params)
            elif is_modern(params) and method != "server/discover":
                self.session.met(params, self.client_info)
        if self._era_pending():
            self._held.append(frame)  # nothing goes up before the server's era is known and met
            return self._probe(now)
        if self.bridging:
            bridge = self.session.bridge
            answer = bridge.answer(message, lambda: advertise(bridge.upstream_init, self.options))
            if answer is not None:
                return [ToClient(Frame(answer))]
        if method == "initialize" and not self.bridging:
            self.session.initialized(params)
        elif method in TOOL_METHODS:
            if self.catalog is None:
                if not self.session.modern and not self.upstream.fetching:  # would wait for an initialized never sent
                    return [ToClient(_too_early(request_id))]
                self.session.waiting.append(frame)
                return self._events(self.upstream.fetch(now), now) if self.session.modern and not self.bridging else []
            return self._tools(frame, now)
        return self._forward(frame, now)

    def _notification(self, frame: Frame, now: float) -> list[Action]:
        if self._era_pending():
            self._held.append(frame)
            return []
        method = frame.method
        if method == "notifications/cancelled" and self.session.withdraw(frame.params.get("requestId")):
            self.session.cancelled(frame.params.get("requestId"))
            return []  # it waited for the catalog: never answered now, and the server never had it
        if self.bridging:
            if method == "notifications/cancelled":
                self.session.cancelled(frame.params.get("requestId"))
            frame = frame.changed(params=legacy_params(frame.params))
            if not frame.fits():
                return []
        actions = self._events(self.upstream.notify(frame), now)
        if method == "notifications/initialized" and self.session.era == "legacy":
            actions += self._events(self.upstream.fetch(now), now)
        return actions

    def _forward(self, frame: Frame, now: float) -> list[Action]:
        """Send a client request to the server (without its envelope when bridging)."""
        bridged = self.bridging
        if bridged:  # the envelope stays behind: a 2025 server does not know it
            frame = frame.changed(params=legacy_params(frame.params))
        if not frame.fits():
            return [ToClient(jsonrpc.too_deep(frame.message["id"]))]
        return self._events(self.upstream.forward(frame, now, bridged=bridged), now)

    def _tools(self, frame: Frame, now: float) -> list[Action]:
        """A ``tools/*`` request through the one door: answered here, or the call the server runs."""
        catalog = self.catalog
        assert catalog is not None
        message = frame.message
        request_id: RequestId = message["id"]
        params = frame.params
        modern = is_modern(params)
        dynamic = self.options.mode == "dynamic"
        caller = self.session.caller(
            params, modern=modern, dynamic=dynamic, envelope=self.upstream.envelope, catalog=catalog
        )
        try:
            outcome = dispatch(message["method"], catalog, message.get("params"), caller)
        except LazyMCPError as exc:
            return [ToClient(Frame(jsonrpc.error_message(request_id, exc.code, exc.message, exc.data)))]
        if isinstance(outcome, Run):  # invoke_tool: the real tool's call, under the same id
            call = {**params, "name": outcome.name, "arguments": outcome.arguments}
            return self._forward(frame.changed(params=call), now)
        if not isinstance(outcome, Answer):
            return self._forward(frame, now)
        answer = Frame({"jsonrpc": "2.0", "id": request_id, "result": outcome.result})
        if outcome.changed:  # only a 2025 session changes: tell it, and answer once it has listed again
            self.session.relist.hold(answer, now)
            return [ToClient(Frame({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))]
        if message["method"] == "tools/list":
            return [ToClient(answer), *(ToClient(held) for held in self.session.relist.relisted())]
        return [ToClient(answer)]

    # --- server -> client -------------------------------------------------------------------------------

    def from_server(self, server: str, data: bytes, now: float) -> list[Action]:
        """Decide what to do with one line from the server."""
        return self._events(self.upstream.receive(data, now, takes_requests=not self.bridging), now)

    def _events(self, events: Sequence[Event], now: float) -> list[Action]:
        """What the server's side said, as actions: its answers and notices shaped for the client."""
        actions: list[Action] = []
        for event in events:
            if isinstance(event, ToServer | Say):
                actions.append(event)
            elif isinstance(event, Reply):
                actions.append(ToClient(self._reply(event.frame, event.pending)))
            elif isinstance(event, Asks):
                actions.append(ToClient(event.frame))
            elif isinstance(event, Notice):
                actions += self._notice(event.frame)
            elif isinstance(event, Tools):
                actions += self._listed(event.catalog, now)
            elif isinstance(event, Opened):
                if event.result is None:
                    actions += self._failed(f"the upstream refused the proxy's initialize: {event.detail}")
                else:
                    self.session.bridge.upstream_init = event.result
                    actions += self._replay(now)
            elif isinstance(event, Probed):
                if event.era == "modern":
                    actions += self._replay(now)
                else:  # the bridge: the proxy becomes the 2025 server's client
                    actions += self._open(now)
            elif isinstance(event, Unlisted):
                actions += self._failed(event.reason)
            elif isinstance(event, Broke):  # pyright: ignore[reportUnnecessaryIsInstance]
                actions.append(Fail(event.reason))
                return actions
        return actions

    def _reply(self, frame: Frame, pending: Pending) -> Frame:
        result = frame.message.get("result")
        if not isinstance(result, dict):
            return frame
        result = cast(dict[str, Any], result)
        if pending.method in ("initialize", "server/discover"):
            if not result.get("instructions") and self.catalog is not None:  # the server's own, else its tools'
                name = str(jsonrpc.field(result.get("serverInfo"), "name") or "the server")
                result = {**result, "instructions": catalog_instructions(self.catalog, name)}
            return frame.changed(result=advertise(result, self.options))
        if pending.bridged:
            server_info = self.upstream.envelope.server_info
            return frame.changed(result=self.session.bridge.result(pending.method, result, server_info))
        return frame

    def _notice(self, frame: Frame) -> list[Action]:
        method = frame.method
        if self.bridging and isinstance(method, str) and method in LIST_CHANGED:
            return [ToClient(Frame(event)) for event in self.session.bridge.to_listeners(method)]
        return [ToClient(frame)]

    def _listed(self, catalog: Catalog, now: float) -> list[Action]:
        """A catalog is in place: the requests that waited for the first are answered."""
        actions: list[Action] = []
        if not self._ready:
            self._ready = True
            actions.append(Ready(catalog))
        waiting, self.session.waiting = self.session.waiting, []
        for frame in waiting:
            actions += self._tools(frame, now)
        return actions

    # --- eras -------------------------------------------------------------------------------------------

    def _era_pending(self) -> bool:
        """Is a 2026 client waiting for the server's era to be learnt, or for the bridge's handshake?"""
        if not self.session.modern:
            return False
        era = self.upstream.era
        return era is None or (era == "legacy" and not self.session.bridge.upstream_init)

    def _probe(self, now: float) -> list[Action]:
        """Learn the server's era, then (for a 2025 server) perform its handshake; once."""
        if self._probing:
            return []
        self._probing = True
        if self.upstream.era is None:
            return self._events(self.upstream.probe(now), now)
        return self._open(now)

    def _open(self, now: float) -> list[Action]:
        """The bridge: the proxy performs the 2025 server's handshake itself."""
        return self._events(self.upstream.open(self.session.bridge.handshake(self.client_info), now), now)

    def _replay(self, now: float) -> list[Action]:
        held, self._held = self._held, []
        actions: list[Action] = []
        for frame in held:
            actions += self._client(frame, now)
        return actions

    # --- faults -----------------------------------------------------------------------------------------

    def _failed(self, reason: str) -> list[Action]:
        """The server failed: every request still owed gets an error now, and later ones at once."""
        answers = self.upstream.fail(reason)
        owed = [frame.message["id"] for frame in self.session.waiting]
        owed += [frame.message["id"] for frame in self._held if frame.is_request]
        self.session.waiting.clear()
        self._held.clear()
        answers += [self.upstream.error(request_id) for request_id in owed]
        return [ToClient(answer) for answer in answers]

    def interrupt(self, reason: str, now: float) -> list[Action]:
        """The session ends now: every request still owed an answer gets an error naming ``reason``."""
        actions = [ToClient(held) for held in self.session.relist.relisted()]
        actions += self._failed(reason)
        starting, self._starting = self._starting, []
        for frame in starting:  # the failed server's side answers each request at once
            actions += [action for action in self._client(frame, now) if isinstance(action, ToClient)]
        return actions

    def expire(self, now: float) -> list[Action]:
        """Fail the server when a request has waited past the timeout (it hangs); send the answers held
        for a re-list that did not come in time."""
        due = [ToClient(held) for held in self.session.relist.due(now)]
        return due + self._events(self.upstream.expire(now), now)

    @property
    def owed(self) -> int:
        """Client requests not answered yet."""
        waiting = len(self.session.waiting)
        held = sum(1 for frame in (*self._held, *self._starting) if frame.is_request)
        return self.upstream.owed + waiting + held + len(self.session.relist)


def _too_early(request_id: RequestId) -> Frame:
    reason = "tools are listed once the client has sent notifications/initialized"
    return Frame(jsonrpc.error_message(request_id, ErrorCode.INVALID_REQUEST, f"Invalid request: {reason}"))
