"""A client session's state, in one place: who the client is, and what it holds.

``SessionRecord`` is the part that is plain data, and so can be kept or routed outside the process
that owns the session's servers: the client's era and handshake, whether it declared the lazy-tools
extension, and a dynamic session's tools. ``ClientSession`` adds what must stay with that process: the
ids the servers' requests reached the client under, the requests waiting for the servers' first tool
lists, the 2026 requests whose answers get the envelope, and the client's 2026 listen streams.

The cores (``lazymcp.core.proxy``, ``lazymcp.gateway.front``) read and change a session only through
this interface.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from lazymcp.core.asked import Asked
from lazymcp.core.relist import Relist
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.bridge import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LEGACY, Bridge, Envelope, Serializer, meta
from lazymcp.protocol.jsonrpc import Frame, id_key
from lazymcp.protocol.messages import MODES, Mode
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.hosts import Session, choose
from lazymcp.surfaces.metacalls import DynamicSession
from lazymcp.surfaces.methods import Caller, declares

Era = Literal["legacy", "modern"]


def _declares(capabilities: object) -> bool:
    return declares(jsonrpc.field(capabilities, "extensions"))


@dataclass
class SessionRecord:
    """A client session as plain data (``to_json``, ``from_json``)."""

    era: Era | None = None
    """The client's protocol era: ``legacy`` from its ``initialize``, ``modern`` from its first 2026 request."""
    initialize: dict[str, Any] | None = None
    """The params of its ``initialize`` (a 2026 client's: made from its first request's envelope)."""
    declared: bool = False
    """It declared the lazy-tools extension (for a 2026 client: in its last request)."""
    dynamic: DynamicSession = field(default_factory=DynamicSession)
    """Its tools in ``dynamic`` mode (a 2025 session's only)."""
    mode: Mode | None = None
    """The mode its endpoint URL asked for (``?mode=``), over its host's (``lazymcp.surfaces.hosts``)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "era": self.era,
            "initialize": self.initialize,
            "declared": self.declared,
            "enabled": list(self.dynamic.enabled),
            "disabled": sorted(self.dynamic.disabled),
            "mode": self.mode,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionRecord:
        era = data.get("era")
        dynamic = DynamicSession(dict.fromkeys(data.get("enabled") or ()), set(data.get("disabled") or ()))
        mode = data.get("mode")
        return cls(
            era if era in ("legacy", "modern") else None,
            cast(dict[str, Any] | None, data.get("initialize")),
            bool(data.get("declared")),
            dynamic,
            next((known for known in MODES if known == mode), None),
        )


@dataclass
class ClientSession:
    """One client's session: its record, and what only the process serving it can hold."""

    record: SessionRecord = field(default_factory=SessionRecord)
    bridge: Bridge = field(default_factory=Bridge)
    """A 2026 client's listen streams, and how the results it gets are shaped."""
    asked: Asked = field(default_factory=Asked)
    """The servers' requests to the client, under ids of the session's own."""
    waiting: list[Frame] = field(default_factory=lambda: [])
    """``tools/*`` requests waiting for the servers' first tool lists."""
    calls: dict[tuple[str, object], str] = field(default_factory=lambda: {})
    """A 2026 client's requests that servers answer, by id: their method (the answer gets the envelope)."""
    relist: Relist = field(default_factory=Relist)
    """Answers to calls that changed a dynamic session's tool list, held for the client's re-list."""
    environ: Mapping[str, str] | None = None
    """The environment the host started this process with, when it serves the client over stdio."""

    @classmethod
    def of(cls, serialize: Serializer | None) -> ClientSession:
        return cls(bridge=Bridge(serialize))

    @property
    def era(self) -> Era | None:
        return self.record.era

    @property
    def modern(self) -> bool:
        return self.record.era == "modern"

    @property
    def known(self) -> bool:
        """Has the client introduced itself (an ``initialize``, or a first 2026 request)?"""
        return self.record.initialize is not None

    def initialized(self, params: dict[str, Any]) -> None:
        """The client's ``initialize``: a 2025-11-25 session, with or without the extension."""
        self.record.era = self.record.era or "legacy"
        self.record.initialize = params
        self.record.declared = _declares(params.get("capabilities"))

    def met(self, params: Mapping[str, Any], client_info: Mapping[str, Any]) -> None:
        """A 2026-07-28 request (its ``params`` carry the envelope): the client speaks 2026 now, as it says
        it is (its handshakes with 2025 servers: the latest 2025 version, ``client_info`` if it names none)."""
        self.record.era = "modern"
        self.record.declared = _declares(meta(params).get(CLIENT_CAPABILITIES_KEY))
        if self.record.initialize is None:
            info = meta(params).get(CLIENT_INFO_KEY) or dict(client_info)
            self.record.initialize = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": info}

    def declared(self, params: Mapping[str, Any], modern: bool) -> bool:
        """Did this request's client declare the extension? A 2026 request says so in its envelope (one
        whose envelope is gone: as the last one said)."""
        if not modern:
            return self.record.declared
        envelope = meta(params)
        if CLIENT_CAPABILITIES_KEY in envelope:
            return _declares(envelope.get(CLIENT_CAPABILITIES_KEY))
        return self.record.declared

    def caller(
        self, params: Mapping[str, Any], *, modern: bool, dynamic: bool, envelope: Envelope, catalog: Catalog
    ) -> Caller:
        """How ``lazymcp.surfaces.methods.dispatch`` sees one request of this client: a 2026 one enveloped and
        without a session (2026-07-28 has none), a 2025 one with its dynamic tools when ``dynamic``; served
        the mode its host gets from ``catalog`` (``lazymcp.surfaces.hosts.choose``)."""
        info = meta(params).get(CLIENT_INFO_KEY) if modern else None
        if info is None and self.record.initialize is not None:
            info = self.record.initialize.get("clientInfo")
        return Caller(
            declared=self.declared(params, modern),
            session=None if modern or not dynamic else self.record.dynamic,
            envelope=envelope if modern else None,
            choice=choose(catalog, Session(info, self.record.mode, self.environ)),
        )

    def sent_on(self, request_id: object, method: str) -> None:
        """A 2026 request of the client's goes to a server: its answer gets the envelope."""
        self.calls[id_key(request_id)] = method

    def answered(self, request_id: object) -> str | None:
        """The method of a 2026 request a server has answered (forgotten now); None: not one."""
        return self.calls.pop(id_key(request_id), None)

    def shaped(self, answer: Frame, server_info: Mapping[str, Any]) -> Frame:
        """An answer to the client: to a 2026 request that a server (or the gateway) answered, with the
        envelope a 2026 server gives its results (``dispatch`` envelopes its own)."""
        if not self.calls:
            return answer
        method = self.answered(answer.id)
        result = answer.message.get("result")
        if method is None or not isinstance(result, dict):
            return answer
        return answer.changed(result=self.bridge.result(method, cast(dict[str, Any], result), server_info))

    def listeners(self, method: str) -> list[Frame]:
        """A change notification as events on the client's listen streams that asked for it."""
        return [Frame(event) for event in self.bridge.to_listeners(method)]

    def withdraw(self, request_id: object) -> bool:
        """Take back a request waiting for the first tool lists (it was cancelled): True when one was."""
        key = id_key(request_id)
        kept = [frame for frame in self.waiting if id_key(frame.id) != key]
        if len(kept) == len(self.waiting):
            return False
        self.waiting = kept
        return True

    def cancelled(self, request_id: object) -> None:
        """The client gave up on a request: no answer is owed it, and a listen stream of that id ends."""
        self.calls.pop(id_key(request_id), None)
        self.bridge.cancelled(request_id)
