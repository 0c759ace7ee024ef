"""Between protocol eras: the 2026-07-28 result envelope, and the bridge to a 2025-11-25-only upstream.

A 2026 result is a 2025 one plus its envelope: the cache hints a cacheable result carries (``ttlMs``,
``cacheScope``; the SDK's defaults are 0 and ``"private"``), ``resultType``, and the ``serverInfo``
stamp in ``_meta``. ``Envelope.stamp`` is the one place that envelope is made, for the results lazymcp
makes itself (through the SDK adapter or the proxy) and for the results it bridges.

``Bridge`` holds what the proxy needs when a 2026-07-28 client meets a 2025-11-25-only upstream (most
Node servers today): the upstream's ``initialize`` result, the client's ``subscriptions/listen``
streams, and how requests lose their envelope going up and results gain one coming down. A bridged
result also goes through the era's wire model (a serializer the adapter injects: this module imports
no SDK), which drops what the era does not define; a result the model refuses is relayed as the
upstream sent it, plus the envelope: the proxy relays, it does not repair.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from lazymcp.protocol import jsonrpc
from lazymcp.protocol.jsonrpc import Message, RequestId, id_key

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
ENVELOPE_KEYS: Final = frozenset({PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY})

CACHEABLE: Final = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read", "server/discover"}
)
"""The 2026 results of the core methods that carry ``ttlMs`` and ``cacheScope``."""

LIST_CHANGED: Final = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}
"""Change notifications, by the ``subscriptions/listen`` filter key that asks for them."""

Serializer = Callable[[str, str, dict[str, Any]], "dict[str, Any] | None"]
"""``(method, version, result)`` -> the result through that era's wire model, or None when the model
has no such method or refuses the result."""


def meta(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``_meta`` object of params or a result ({} when absent)."""
    value = params.get("_meta")
    return cast(Mapping[str, Any], value) if isinstance(value, dict) else {}


def is_modern(params: Mapping[str, Any]) -> bool:
    """Does a request carry the 2026-07-28 envelope?"""
    return PROTOCOL_VERSION_KEY in meta(params)


@dataclass(frozen=True, slots=True)
class Envelope:
    """A 2026-07-28 server's result envelope: its cache hints and its ``serverInfo``."""

    ttl_ms: object = 0
    cache_scope: object = "private"
    server_info: object = None

    def stamp(
        self, result: Mapping[str, Any], *, cacheable: bool, method: str = "", serialize: Serializer | None = None
    ) -> dict[str, Any]:
        """``result`` as this server sends it on 2026-07-28 (``serialize``: through the era's wire model)."""
        data: dict[str, Any] = dict(result)
        if cacheable:
            data = {"ttlMs": self.ttl_ms, "cacheScope": self.cache_scope, **data}
        data.setdefault("resultType", "complete")
        if serialize is not None:
            data = serialize(method, MODERN, data) or data
        if self.server_info is not None:
            data["_meta"] = {**meta(data), SERVER_INFO_KEY: self.server_info}
        return data

    def learn(self, result: Mapping[str, Any]) -> Envelope:
        """This envelope updated from a 2026 result of the server: its hints and its stamp."""
        server_info = meta(result).get(SERVER_INFO_KEY, self.server_info)
        return Envelope(result.get("ttlMs", self.ttl_ms), result.get("cacheScope", self.cache_scope), server_info)


def legacy_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """2026-07-28 request params without the envelope a 2025-11-25 server does not know."""
    own = params.get("_meta")
    if not isinstance(own, dict):
        return dict(params)
    kept = {key: value for key, value in cast(dict[str, Any], own).items() if key not in ENVELOPE_KEYS}
    stripped = {key: value for key, value in params.items() if key != "_meta"}
    if kept:
        stripped["_meta"] = kept
    return stripped


@dataclass
class Bridge:
    """A 2026-07-28 client in front of a 2025-11-25 upstream: what the proxy answers and reshapes."""

    serialize: Serializer | None = None
    upstream_init: dict[str, Any] = field(default_factory=lambda: {})
    """The upstream's ``initialize`` result, once the proxy has performed its handshake."""
    _listens: dict[tuple[str, object], tuple[RequestId, frozenset[str]]] = field(default_factory=lambda: {})

    def handshake(self, client_info: Mapping[str, Any]) -> dict[str, Any]:
        """The params of the proxy's own ``initialize`` (no client capabilities: it takes no requests)."""
        return {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": dict(client_info)}

    def answer(self, message: Message, advertised: Callable[[], Mapping[str, Any]]) -> Message | None:
        """The message that answers a request the bridge serves itself (``server/discover``,
        ``subscriptions/listen``), or None when the request goes upstream. ``advertised``: the
        upstream's ``initialize`` result with the extension advertised."""
        request_id: RequestId = message["id"]
        method = message.get("method")
        if method == "server/discover":
            result: dict[str, Any] = {"supportedVersions": [MODERN], "capabilities": advertised()["capabilities"]}
            if "instructions" in self.upstream_init:
                result["instructions"] = self.upstream_init["instructions"]
            envelope = Envelope(server_info=self.upstream_init.get("serverInfo"))
            discovered = envelope.stamp(result, cacheable=True, method="server/discover", serialize=self.serialize)
            tools = result["capabilities"].get("tools")
            if isinstance(tools, dict) and isinstance(discovered.get("capabilities"), dict):
                # the era's wire model drops the members it does not know (the draft's ``manifest``): put back
                discovered["capabilities"] = {**discovered["capabilities"], "tools": tools}
            return {"jsonrpc": "2.0", "id": request_id, "result": discovered}
        if method == "subscriptions/listen":
            wanted = jsonrpc.field(message.get("params"), "notifications")
            honored = frozenset(key for key in LIST_CHANGED.values() if jsonrpc.field(wanted, key) is True)
            self._listens[id_key(request_id)] = (request_id, honored)
            ack = {"notifications": dict.fromkeys(sorted(honored), True), "_meta": {SUBSCRIPTION_ID_KEY: request_id}}
            return {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack}
        return None

    def cancelled(self, request_id: object) -> None:
        """A client's cancellation ends its listen stream of that id, if it was one."""
        self._listens.pop(id_key(request_id), None)

    def result(self, method: str, result: Mapping[str, Any], server_info: object) -> dict[str, Any]:
        """A 2025 upstream's result as a 2026-07-28 server would send it."""
        envelope = Envelope(server_info=server_info)
        return envelope.stamp(result, cacheable=method in CACHEABLE, method=method, serialize=self.serialize)

    def to_listeners(self, method: str) -> list[Message]:
        """A change notification as an event on each 2026 listen stream that asked for it."""
        key = LIST_CHANGED[method]
        return [
            {"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUBSCRIPTION_ID_KEY: request_id}}}
            for request_id, honored in self._listens.values()
            if key in honored
        ]
