"""Between protocol eras: 2026-07-28 results made from 2025-11-25 ones, the way the SDK's server would.

The proxy needs this when a client speaks 2026-07-28 and the upstream only 2025-11-25 (as most Node
servers do today). A 2026 result is a 2025 one plus its envelope: the cache hints a cacheable result
must carry (``ttlMs``, ``cacheScope``; the SDK's defaults are 0 and ``"private"``), ``resultType``, and
the ``serverInfo`` stamp in ``_meta``; it then goes through the SDK's own wire model for that method
and era (``mcp_types.methods.serialize_server_result``), which drops what the era does not define.
A result that the wire model refuses is relayed as the upstream sent it (plus the envelope): the proxy
relays, it does not repair.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from mcp_types import methods as wire
from pydantic import ValidationError

MODERN = "2026-07-28"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
ENVELOPE_KEYS = frozenset({PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY})

CACHEABLE = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read", "server/discover"}
)
"""The 2026 results that carry ``ttlMs`` and ``cacheScope``."""

LIST_CHANGED = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}
"""Change notifications, by the ``subscriptions/listen`` filter key that asks for them."""


def modern_result(method: str, result: Mapping[str, Any], server_info: object | None) -> dict[str, Any]:
    """A 2025-11-25 result of ``method`` as a 2026-07-28 server would send it."""
    data: dict[str, Any] = dict(result)
    if method in CACHEABLE:
        data = {"ttlMs": 0, "cacheScope": "private", **data}
    data.setdefault("resultType", "complete")
    try:
        data = wire.serialize_server_result(method, MODERN, data)
    except (KeyError, ValidationError):
        pass  # not a 2026 method, or a result the era's model refuses: relayed as it is
    if server_info is not None:
        meta = data.get("_meta")
        data["_meta"] = {**(cast(dict[str, Any], meta) if isinstance(meta, dict) else {}), SERVER_INFO_KEY: server_info}
    return data


def legacy_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """2026-07-28 request params without the envelope a 2025-11-25 server does not know."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return dict(params)
    kept = {key: value for key, value in cast(dict[str, Any], meta).items() if key not in ENVELOPE_KEYS}
    stripped = {key: value for key, value in params.items() if key != "_meta"}
    if kept:
        stripped["_meta"] = kept
    return stripped


def discover_result(initialize: Mapping[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
    """A 2026 ``server/discover`` result for a 2025 server, from its ``initialize`` result."""
    result: dict[str, Any] = {"supportedVersions": [MODERN], "capabilities": capabilities}
    if "instructions" in initialize:
        result["instructions"] = initialize["instructions"]
    return modern_result("server/discover", result, initialize.get("serverInfo"))
