"""What the sans-IO cores decide, for the I/O that drives them to carry out, and nothing else.

A core (``lazymcp.core.proxy.Proxy``, ``lazymcp.gateway.front.Gateway``) takes one message at a time and
returns a list of these. The driver (``lazymcp.run.driver.Driver``) writes the frames, starts and stops
the servers, writes manifests and reports on stderr; it decides nothing.

``Core`` is what every core offers its driver.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from lazymcp.protocol.jsonrpc import Frame

if TYPE_CHECKING:
    from lazymcp.core.entries import ServerEntry
    from lazymcp.core.session import ClientSession
    from lazymcp.protocol.messages import Tool
    from lazymcp.surfaces.catalog import Catalog
    from lazymcp.tools.manifest import Listed


@dataclass(frozen=True, slots=True)
class Carrying:
    """Something that carries one message."""

    frame: Frame

    @property
    def data(self) -> bytes:
        """The frame's line (encoded on first use)."""
        return self.frame.line


class ToClient(Carrying):
    """Write ``frame`` to the client."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ToServer(Carrying):
    """Write ``frame`` to ``server``."""

    server: str


@dataclass(frozen=True, slots=True)
class Start:
    """Start the server's process or connection; the driver then calls ``started`` or ``start_failed``."""

    server: str


@dataclass(frozen=True, slots=True)
class Save:
    """Write the server's manifest: its tools, version and other lists."""

    server: str
    tools: Sequence[Tool]
    version: str | None
    lists: Mapping[str, Listed | list[Any]] = field(default_factory=lambda: {})
    changed: tuple[str, ...] = ()
    """The ``list_changed`` notifications the server just sent that made lists of it stale: other gateway
    instances' sessions are told them too (``--redis``)."""


@dataclass(frozen=True, slots=True)
class Say:
    """Something the operator should read on stderr; the session goes on."""

    text: str
    level: int = logging.WARNING


@dataclass(frozen=True, slots=True)
class Because:
    """Something that happened for a ``reason``."""

    reason: str


@dataclass(frozen=True, slots=True)
class Stop(Because):
    """The server failed: end its process, saying ``reason``."""

    server: str
    late: object = None
    """The request the server did not answer in time (its id as sent to the server), when that is why."""


class Fail(Because):
    """The session cannot go on (the proxy's one server broke): answer what is owed, say ``reason``, end."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Catalogued:
    """Something that came of a server's tool list: the ``catalog`` it is now."""

    catalog: Catalog


class Ready(Catalogued):
    """The proxy's server listed its tools for the first time: the start-up line can say what runs."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Called:
    """A ``tools/call`` of the client's was answered: by ``server``'s ``tool`` (None: by the gateway itself,
    a meta-tool, or refused), with ``outcome``: ``ok``, ``tool_error``, ``error``, ``unknown_tool``,
    ``denied`` (a name the access policy refuses), ``rate_limited`` or ``unavailable``; ``seconds`` after
    it left for its server (0 when it did not). Reported for the audit line and the metrics
    (``lazymcp.run.observe``); never the arguments or results."""

    principal: str
    server: str | None
    tool: str
    outcome: str
    seconds: float = 0.0
    traceparent: str | None = None
    """The W3C trace context the call came with (``_meta.traceparent``; with traces on, its request span's)."""
    request_id: object = None
    """The JSON-RPC id of the call (as the core saw it: a front that renumbers ids puts the client's back)."""
    via: str = "direct"
    """How the call named its tool: ``direct``, or ``invoke_tool`` (then ``tool`` is the tool it named)."""
    client: tuple[str, str] | None = None
    """The client's ``clientInfo``: its name and version, as it said them (cut to ``CLIENT_INFO_CHARS``)."""
    named: bool = True
    """``tool`` names a tool of the session's catalog or a meta-tool, not one the client made up: only then
    may it be a metric's label."""
    session: str | None = None
    """A stable hash of the session's id (set by a front that has sessions)."""
    address: str | None = None
    """The client's network address (set by an HTTP front)."""


CLIENT_INFO_CHARS = 100
"""Characters kept of a client's name and of its version in ``Called.client``."""

CODE_CALL: Final = "lazymcp-code:"
"""How the ids of the tool calls a ``run_code`` makes begin (each is fed to the core as a client's call)."""


@dataclass(frozen=True, slots=True)
class RunCode:
    """Run ``source`` in code mode's sandbox and answer the client's ``request_id`` with what it gave;
    its tool calls come back to the core as calls of the client's, ids beginning ``CODE_CALL``."""

    request_id: object
    source: str
    traceparent: str | None = None
    """The W3C trace context the ``run_code`` call came with (with traces on, its request span's): each
    call of the code carries it, so that its span is a child of the run's."""


@dataclass(frozen=True, slots=True)
class StopCode:
    """The client cancelled its ``run_code`` ``request_id``: stop it, and its calls in flight."""

    request_id: object


Action = ToClient | ToServer | Start | Stop | Save | Say | Fail | Ready | Called | RunCode | StopCode


class Core(Protocol):
    """What a driver needs of a core: one client, the servers behind it. ``now``: monotonic seconds."""

    command: str
    """What runs, as reports on stderr name it: ``proxy`` or ``gateway``."""
    isolates_servers: bool
    """Each server fails alone and sees only its own environment (the gateway); else the session is its one
    server's (the proxy: the client's configuration sets that server's environment on the proxy's entry)."""
    timeout: float | None
    session: ClientSession
    """The client's session (what the front learns of it, such as the mode its URL asks for, goes here)."""

    def entry(self, server: str) -> ServerEntry:
        """How to reach ``server``."""
        ...

    def launch(self, eager: bool = False) -> list[Action]:
        """What must start now."""
        ...

    def started(self, server: str, now: float) -> list[Action]: ...

    def start_failed(self, server: str, reason: str, now: float) -> list[Action]: ...

    def from_client(self, data: bytes | Frame, now: float) -> list[Action]: ...

    def from_server(self, server: str, data: bytes, now: float) -> list[Action]: ...

    def interrupt(self, reason: str, now: float) -> list[Action]:
        """The session ends now: every request still owed an answer gets an error naming ``reason``."""
        ...

    def expire(self, now: float) -> list[Action]: ...

    @property
    def owed(self) -> int:
        """Client requests not answered yet."""
        ...
