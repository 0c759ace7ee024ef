"""The sans-IO cores as the tests drive them: the proxy's core with its server already started (as the
driver reports once it has spawned it), and what a list of actions puts on the wire."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lazymcp.core.actions import Fail, ToClient, ToServer
from lazymcp.core.entries import ServerEntry
from lazymcp.core.proxy import Proxy
from lazymcp.surfaces.options import Options

UPSTREAM = "upstream"


def proxy_core(options: Options | None = None, **settings: Any) -> Proxy:
    """The proxy's core over a server that runs (its actions are the tests' to carry out)."""
    core = Proxy(ServerEntry(UPSTREAM, command=("server",)), options or Options(), **settings)
    assert core.started(UPSTREAM, 0.0) == []
    return core


def wire(actions: Sequence[object]) -> list[tuple[str, object]]:
    """Each action as what it does: ("client", bytes), ("server", bytes), ("fail", reason); others as they are."""
    seen: list[tuple[str, object]] = []
    for action in actions:
        if isinstance(action, ToClient):
            seen.append(("client", action.data))
        elif isinstance(action, ToServer):
            seen.append(("server", action.data))
        elif isinstance(action, Fail):
            seen.append(("fail", action.reason))
        else:
            seen.append((type(action).__name__, action))
    return seen
