"""Every server of one gateway session: each one's life (``lazymcp.gateway.lifecycle``), its ``Upstream``
while it runs, its last known tools and lists, and the requests decided for it while it starts; and how
long listings wait for the first tool lists of the servers starting (``first_list_wait``).

``Servers`` starts, opens, feeds and fails servers and says what they said: ``Heard(server, event)`` for
the gateway's front to tell the client, ``Down(server, ...)`` when one failed, with what it owed. A
request decided for a server that is not ready is queued as it is and sent by the same ``forward`` once
the server's handshake is done: one path for every call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from lazymcp.core.actions import Action, Save, Say, Start, Stop, ToServer
from lazymcp.core.entries import ServerEntry
from lazymcp.core.upstream import Asks, Broke, Notice, Opened, Reply, Tools, Unlisted, Upstream
from lazymcp.gateway.lifecycle import Lifecycle, State
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.jsonrpc import Frame, RequestId
from lazymcp.protocol.limits import FIRST_LIST_WAIT
from lazymcp.protocol.messages import Tool
from lazymcp.tools.manifest import Listed, Manifest, entries_of

STALE: Final = {
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}
"""The cached lists a server's change notification makes stale."""


@dataclass
class Server:
    """One server of the configuration, as the gateway sees it."""

    entry: ServerEntry
    life: Lifecycle = field(default_factory=Lifecycle)
    upstream: Upstream | None = None
    """Its side of the conversation, while it runs."""
    queued: list[Frame] = field(default_factory=lambda: [])
    """Requests decided for it while it starts, sent once its handshake is done."""
    tools: Sequence[Tool] | None = None
    """Its last tool list: its manifest's (``Packed``), then its own."""
    version: str | None = None
    lists: dict[str, Listed | list[Any]] = field(default_factory=lambda: {})
    """Its last prompt, resource and template lists, by method (bare: fetched in this run)."""
    late: bool = False
    """Its first tool list did not come in time: listings go on without it until it comes."""

    @property
    def name(self) -> str:
        return self.entry.name

    def unavailable(self, request_id: RequestId) -> Frame:
        """The answer to a request this server cannot take now."""
        text = f"Server {self.name!r} is unavailable: {self.life.reason or 'not running'}"
        return Frame(jsonrpc.error_message(request_id, ErrorCode.UPSTREAM_ERROR, text, {"server": self.name}))

    def listed(self, method: str, entries: list[Any]) -> list[Save]:
        """Its answer to a list request: kept for its manifest (and saved) when it is new."""
        if method in self.lists and entries_of(self.lists[method]) == entries:
            return []
        self.lists[method] = entries  # fetched now
        return self.saved()

    def cached(self, method: str, now: float) -> list[Any] | None:
        """Its part of a list from its manifest, when that is where it comes from: the server is not
        running and the manifest has the list, or it is refused (it adds nothing then); else None."""
        listed = self.lists.get(method)
        if self.life.refused(now) or (listed is not None and self.life.stopped):
            return entries_of(listed)
        return None

    def changed(self, notification: str) -> list[Save]:
        """Its prompts or resources changed: their cached lists go (the next listing asks it again), and
        its manifest is written anew, naming the change for other gateway instances."""
        if notification not in STALE:
            return []
        for method in STALE[notification]:
            self.lists.pop(method, None)
        return [replace(saved, changed=(notification,)) for saved in self.saved()]

    def changed_elsewhere(self, notification: str) -> None:
        """Another instance's process of it said its prompts or resources changed: the lists go, and
        nothing is saved (that instance did)."""
        for method in STALE.get(notification, ()):
            self.lists.pop(method, None)

    def saved(self) -> list[Save]:
        """Its manifest, written anew: its tools and its lists (those from the manifest keep their time)."""
        if self.tools is None:
            return []
        return [Save(self.name, self.tools, self.version, dict(self.lists))]


@dataclass(slots=True)
class Heard:
    """Something a server said, for the gateway to tell the client."""

    server: str
    event: Reply | Asks | Notice | Tools


@dataclass(frozen=True, slots=True)
class Down:
    """A server failed: its errors for the requests it owed, sent or queued."""

    server: str
    answers: list[Frame]


Happened = Action | Heard | Down
RELAYED: Final = frozenset({Reply, Asks, Notice, Tools})
"""What a server says that the gateway tells the client, one way or another."""


@dataclass
class Servers:
    """The servers of one gateway session, in the configuration's order."""

    entries: Sequence[ServerEntry]
    manifests: Mapping[str, Manifest | None] = field(default_factory=lambda: {})
    timeout: float | None = 300.0
    client_timeout: float | None = 600.0
    client_info: dict[str, str] = field(default_factory=lambda: {"name": "lazymcp-gateway", "version": "0"})
    first_list_wait: float | None = FIRST_LIST_WAIT
    """Seconds a ``tools/*`` request waits for the first lists of starting servers (None: no bound but theirs)."""
    table: dict[str, Server] = field(init=False)
    retiring: dict[str, tuple[ServerEntry, Manifest | None] | None] = field(default_factory=lambda: {})
    """Servers to stop once they owe nothing (the configuration changed: ``lazymcp.gateway.reconfigure``), by
    name: each one's new entry and manifest (None: removed)."""
    _listing_deadline: float = field(init=False, default=float("inf"))

    def __post_init__(self) -> None:
        self.table = {}
        for entry in self.entries:
            server = self.table[entry.name] = Server(entry)
            manifest = self.manifests.get(entry.name)
            if manifest is not None:
                server.tools, server.version, server.lists = manifest.tools, manifest.version, dict(manifest.lists)

    def __getitem__(self, name: str) -> Server:
        return self.table[name]

    def __iter__(self) -> Iterator[Server]:
        return iter(self.table.values())

    def __len__(self) -> int:
        return len(self.table)

    @property
    def discovering(self) -> bool:
        """Is a running server's first tool list still awaited?"""
        return any(self._listing(s) for s in self)

    @property
    def awaited(self) -> list[str]:
        """The running servers whose first tool list is still awaited, by name."""
        return [s.name for s in self if self._listing(s)]

    @staticmethod
    def _listing(server: Server) -> bool:
        return server.tools is None and server.upstream is not None and server.life.running and not server.late

    def await_lists(self, now: float) -> None:
        """A first request waits for the first tool lists from ``now``: ``first_list_wait`` at most."""
        if self.first_list_wait:
            self._listing_deadline = now + self.first_list_wait

    def listing_overdue(self, now: float) -> bool:
        """Has the wait for the first tool lists lasted ``first_list_wait``?"""
        return now >= self._listing_deadline

    def give_up_on_listing(self) -> list[Say]:
        """The servers whose first tool list is still awaited, named to the operator: listings no longer
        wait for them, and their tools are announced when they come."""
        self._listing_deadline = float("inf")
        late = [s for s in self if self._listing(s)]
        notes: list[Say] = []
        for server in late:
            server.late = True
            wait = f"{self.first_list_wait:g}"
            notes.append(
                Say(
                    f"server {server.name!r} did not list its tools within {wait} s: answering without"
                    " them; they are announced when they come"
                )
            )
        return notes

    def tool_lists(self) -> list[tuple[ServerEntry, Sequence[Tool]]]:
        """Each server's last tool list (none: an empty one)."""
        return [(s.entry, s.tools or ()) for s in self]

    def down(self) -> dict[str, str]:
        """Why each failed server is down, by name."""
        return {s.name: s.life.reason or "" for s in self if s.life.state is State.DOWN}

    def unlisted(self) -> dict[str, str]:
        """The servers whose tools no listing shows yet (failed, or late, before their first list), by name."""
        return {
            s.name: (s.life.reason or "") if s.life.state is State.DOWN else "it has not listed its tools yet"
            for s in self
            if s.tools is None and (s.late or s.life.state is State.DOWN)
        }

    @property
    def owed(self) -> int:
        """Client requests the servers have not answered (queued ones too)."""
        return sum(sum(1 for f in s.queued if f.is_request) + (s.upstream.owed if s.upstream else 0) for s in self)

    def start(self, name: str) -> list[Happened]:
        """Start a server that is idle or down (its backoff passed): a new ``Upstream``, a new queue."""
        server = self.table[name]
        server.life.move(State.SPAWNING)
        server.upstream = Upstream(
            name, timeout=self.timeout, client_timeout=self.client_timeout, client_info=self.client_info
        )
        server.queued = []
        server.late = False
        return [Start(name)]

    def started(self, name: str, handshake: dict[str, Any] | None, now: float) -> list[Happened]:
        """A server's process runs: open its handshake with ``handshake`` (its ``initialize`` params), or
        wait for the client's (None)."""
        server = self.table[name]
        if server.life.state is not State.SPAWNING:
            return []  # it failed while it started
        if handshake is None:
            server.life.move(State.WAITING)
            return []
        return self._open(server, handshake, now)

    def open_waiting(self, handshake: dict[str, Any], now: float) -> list[Happened]:
        """The client is known: the servers that waited for it open their handshakes."""
        happened: list[Happened] = []
        for server in self:
            if server.life.state is State.WAITING:
                happened += self._open(server, handshake, now)
        return happened

    def _open(self, server: Server, handshake: dict[str, Any], now: float) -> list[Happened]:
        server.life.move(State.OPENING)
        assert server.upstream is not None
        return self._heard(server, server.upstream.open(handshake, now), now)

    def call(self, name: str, frame: Frame, now: float) -> Sequence[Happened]:
        """Send a request decided for a server (not within its backoff): at once when it is ready, else once
        its handshake is done, starting it when it is not running."""
        server = self.table[name]
        if server.life.state is State.READY and server.upstream is not None:
            return server.upstream.forward(frame, now)
        happened = self.start(name) if server.life.stopped else []
        server.queued.append(frame)
        return happened

    def withdraw(self, request_id: object) -> bool:
        """Take back a client request queued for a server that is starting (it was cancelled): True when
        one was queued."""
        key = jsonrpc.id_key(request_id)
        for server in self:
            kept = [frame for frame in server.queued if not (frame.is_request and jsonrpc.id_key(frame.id) == key)]
            if len(kept) != len(server.queued):
                server.queued = kept
                return True
        return False

    def notify(self, name: str, frame: Frame) -> Sequence[Happened]:
        """Send a ready server a client notification."""
        server = self.table[name]
        if server.life.state is not State.READY or server.upstream is None:
            return []
        return server.upstream.notify(frame)

    def answer(self, name: str, frame: Frame, now: float) -> Sequence[Happened]:
        """Send a server the client's answer to its request."""
        server = self.table[name]
        if server.upstream is None:
            return []
        return server.upstream.answer(frame, now)

    def receive(self, name: str, data: bytes, now: float, *, takes_requests: bool) -> list[Happened]:
        """One line from a server."""
        server = self.table[name]
        if server.upstream is None:
            return []
        return self._heard(server, server.upstream.receive(data, now, takes_requests=takes_requests), now)

    def _heard(self, server: Server, events: Sequence[object], now: float) -> list[Happened]:
        happened: list[Happened] = []
        for event in events:
            if type(event) in RELAYED:
                happened.append(Heard(server.name, event))  # pyright: ignore[reportArgumentType]
            elif isinstance(event, ToServer):
                happened.append(event)
            elif isinstance(event, Say):
                happened.append(Say(f"server {server.name!r}: {event.text}"))
            elif isinstance(event, Opened):
                happened += self._opened(server, event, now)
            elif isinstance(event, Broke | Unlisted):
                late = event.late if isinstance(event, Broke) else None
                return happened + self.fail(server.name, event.reason, now, late=late)
        return happened

    def _opened(self, server: Server, opened: Opened, now: float) -> list[Happened]:
        """The handshake's answer: the server is ready, and what was queued for it is sent."""
        if opened.result is None:
            return self.fail(server.name, f"it refused the gateway's initialize: {opened.detail}", now)
        version = jsonrpc.field(opened.result.get("serverInfo"), "version")
        server.version = version if isinstance(version, str) else None
        server.life.move(State.READY)
        queued, server.queued = server.queued, []
        happened: list[Happened] = []
        for frame in queued:
            happened += self.call(server.name, frame, now)
        return happened

    def start_failed(self, name: str, reason: str, now: float) -> list[Happened]:
        """The server could not be started, or went away."""
        return [] if self.table[name].life.stopped else self.fail(name, reason, now)

    def fail(self, name: str, reason: str, now: float, *, late: object = None) -> list[Happened]:
        """The server failed: it is stopped and refused for its backoff, and what it owed is handed back
        (``late``: the request it hung on)."""
        server = self.table[name]
        reason = f"server {name!r}: {reason}"
        queued, server.queued = server.queued, []
        upstream, server.upstream = server.upstream, None
        server.life.fail(reason, now)
        answers = upstream.fail(reason) if upstream is not None else []
        answers += [server.unavailable(frame.message["id"]) for frame in queued if frame.is_request]
        return [Stop(reason, name, late), Down(name, answers)]

    def expire(self, now: float) -> list[Happened]:
        """Fail every server that has left a request unanswered past the timeout."""
        happened: list[Happened] = []
        for server in self:
            if server.upstream is not None:
                happened += self._heard(server, server.upstream.expire(now), now)
        return happened
