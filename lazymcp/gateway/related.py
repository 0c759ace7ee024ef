"""The related tools a server declares in its tools' own ``_meta`` (``lazymcp.tools.metadata``), as a gateway
session serves them: named as the gateway names them, and only those its principal may use, like the
related lists of the configuration (``lazymcp.gateway.merged``). A principal never reads the name of a
tool its grant refuses, not even as a tool related to one it may use."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from lazymcp.protocol.messages import EXT_ID, Tool


def as_served(tool: Tool, name: str, related: Callable[[str], str | None]) -> tuple[Tool, bool]:
    """``tool`` under its gateway ``name``, the related tools its ``_meta`` declares given by ``related``
    (a server's name of a tool -> its gateway name, None when the grant refuses it); and whether its
    ``_meta`` changed (else it is the server's tool, renamed only)."""
    meta: object = tool.get("_meta")
    ours: object = cast(dict[str, object], meta).get(EXT_ID) if isinstance(meta, dict) else None
    declared: object = cast(dict[str, object], ours).get("related") if isinstance(ours, dict) else None
    if not isinstance(declared, list):
        return cast(Tool, {**tool, "name": name}), False
    kept: list[str] = []
    for original in cast(list[object], declared):
        served = related(original) if isinstance(original, str) and original else None
        if served is not None:
            kept.append(served)
    own = {**cast(dict[str, object], ours), "related": kept}
    return cast(Tool, {**tool, "name": name, "_meta": {**cast(dict[str, object], meta), EXT_ID: own}}), True
