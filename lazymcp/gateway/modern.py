"""A 2026-07-28 client of the gateway: what the gateway answers for it, and how its requests and the
servers' answers cross between eras (the gateway speaks 2025-11-25 to its servers).

Such a client sends no ``initialize``: every request carries the envelope (``lazymcp.bridge``).
``server/discover`` and ``subscriptions/listen`` are answered here; a request for a server loses its
envelope on the way and its id is kept until the answer passes, which then gets the envelope a
2026-07-28 server gives its results. Every request sent on gets exactly one answer (the servers'
routers answer, time out or fail each one), so what is kept is bounded by what is in flight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from lazymcp import jsonrpc
from lazymcp.bridge import CLIENT_CAPABILITIES_KEY, Bridge, Envelope, legacy_params, meta
from lazymcp.jsonrpc import Message, id_key
from lazymcp.methods import Caller, declares
from lazymcp.router import ToClient


@dataclass
class ModernClient:
    """The gateway's 2026-07-28 client, once its first request has come (``active``)."""

    server_info: Mapping[str, Any]
    """The gateway's own ``serverInfo``, stamped on each result."""
    bridge: Bridge = field(default_factory=Bridge)
    active: bool = False
    declared: bool = False
    """Its last request declared the lazy-tools extension."""
    _calls: dict[tuple[str, object], str] = field(default_factory=lambda: {})
    """Its requests the servers answer, by id: their method."""

    def request(self, message: Message, params: Mapping[str, Any]) -> bytes | Message:
        """The answer to a request the gateway makes itself (discover, listen), else the request as a
        2025-11-25 one, to be answered by the gateway or sent on."""
        self.active = True
        self.declared = declares(jsonrpc.field(meta(params).get(CLIENT_CAPABILITIES_KEY), "extensions"))
        answer = self.bridge.answer(message, lambda: self.bridge.upstream_init)
        return answer if answer is not None else {**message, "params": legacy_params(params)}

    def sent_on(self, request_id: object, method: str) -> None:
        """A request of its goes to a server: its answer gets the envelope."""
        self._calls[id_key(request_id)] = method

    def cancelled(self, request_id: object) -> None:
        """It gave up on a request: no answer is owed it, and a listen stream of that id ends."""
        self._calls.pop(id_key(request_id), None)
        self.bridge.cancelled(request_id)

    def caller(self) -> Caller:
        """How ``methods.dispatch`` answers it: enveloped, with no session (2026-07-28 has none)."""
        return Caller(declared=self.declared, envelope=Envelope(server_info=self.server_info))

    def envelop(self, actions: list[Any]) -> list[Any]:
        """The servers' answers among ``actions``, with the envelope a 2026 server gives its results."""
        if not self._calls:
            return actions
        out: list[Any] = []
        for action in actions:
            message = jsonrpc.parse(action.data) if isinstance(action, ToClient) else {}
            if "id" in message and "method" not in message:  # an answer (its result may hold "method")
                method = self._calls.pop(id_key(message.get("id")), None)
                result = message.get("result")
                if method is not None and isinstance(result, dict):
                    shaped = self.bridge.result(method, cast(dict[str, Any], result), self.server_info)
                    action = ToClient(jsonrpc.encode({**message, "result": shaped}))
            out.append(action)
        return out

    def events(self, method: str) -> list[ToClient]:
        """A change notification as events on the listen streams that asked for it."""
        return [ToClient(event) for event in self.bridge.to_listeners(method)]
