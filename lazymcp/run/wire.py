"""The SDK's 2026 wire model, as the serializer the cores take for the results they bridge.

The cores import no SDK: the serializer reaches them as an argument (``lazymcp.protocol.bridge.Serializer``), and
the SDK's models load on the first bridged result, not at start-up.
"""

from __future__ import annotations

from typing import Any


def sdk_serializer(method: str, version: str, result: dict[str, Any]) -> dict[str, Any] | None:
    """A result through the SDK's wire model of ``method`` in ``version``; None when the model has no
    such method or refuses the result (the bridge then relays it as it came)."""
    from mcp_types import methods as wire
    from pydantic import ValidationError

    try:
        return wire.serialize_server_result(method, version, result)
    except (KeyError, ValidationError):
        return None
