"""The status of a running HTTP gateway, built in one place (``Status.snapshot``): plain data, served as
``/status.json`` and as the page at ``/`` (``lazymcp.run.status_page``), both behind the front's own
checks (``lazymcp.run.http_checks.refused``), and read by ``lazymcp status``.

What it holds, for the principal who asks:
- each enabled server: its state over the sessions it may see (``lazymcp.gateway.status``: not started,
  starting, running with its processes' ids and since when, failed with the reason and, while its backoff
  lasts, until when it is refused), its tools (those its grant allows) and its calls and errors of the
  last hour; a remote server that signs in, its sign-in (``signed in``, ``expired``, ``sign-in needed``:
  ``lazymcp.run.signin.sign_in_status``);
- the listing: what a stock client's ``tools/list`` costs against every tool in full, in tokens of what
  the model sees (``lazymcp.gateway.costs``, as ``lazymcp stats --config`` counts it), for a new session
  of the principal now;
- the sessions, by principal.
A principal sees its own sessions, servers and calls only, unless a key of the policy it matches grants
it ``"metrics": true`` (``lazymcp.access.policy.Policy.sees_all``): then every principal's, and the
listing of every tool. The status is this instance's: with ``--redis``, each instance serves its own.

The calls are counted by ``Recent``, a watcher of every answered ``tools/call`` (``lazymcp.run.observe``):
per principal and server, a count per minute over the last ``WINDOW_MINUTES``, for at most
``MAX_SERIES`` principal-and-server pairs (the least recently called go first). An error is any call that
did not end ``ok`` (a tool's own error result included).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lazymcp.access.policy import Grant, Policy, Principal
from lazymcp.core.actions import Called
from lazymcp.gateway.costs import granted_tools, listing_cost
from lazymcp.gateway.front import Gateway
from lazymcp.gateway.status import NOT_STARTED, Seen, server_state
from lazymcp.run.observe import Watcher
from lazymcp.run.signin import can_sign_in, sign_in_status

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from lazymcp.run.http_front import HttpFront
    from lazymcp.run.http_sessions import HttpSession

WINDOW_MINUTES = 60
MAX_SERIES = 4096
"""Principal-and-server pairs whose calls are counted at once; past it the least recently called go."""
GATEWAY = ""
"""The server of a call the gateway answered itself (a meta-tool, an unknown tool, a refusal)."""
NOT_SIGNED_IN = "not signed in"
"""A configuration's remote server that may sign in, with no sign-in kept (``config_snapshot``)."""
COSTS_KEPT = 8
"""Catalogs whose listing figures are kept (counting a catalog's tokens is done once)."""


class Recent(Watcher):
    """Calls and errors of the last hour, per principal and server: one count per minute."""

    def __init__(self, clock: Callable[[], float] = time.time, max_series: int = MAX_SERIES) -> None:
        self.clock = clock
        self.max_series = max_series
        self.series: OrderedDict[tuple[str, str], list[list[int]]] = OrderedDict()
        """(principal key, server): ``WINDOW_MINUTES`` slots of [minute, calls, errors]."""

    def called(self, call: Called) -> None:
        key = (call.principal, call.server or GATEWAY)
        minute = int(self.clock() // 60)
        ring = self.series.get(key)
        if ring is None:
            ring = self.series[key] = [[-1, 0, 0] for _ in range(WINDOW_MINUTES)]
            while len(self.series) > self.max_series:
                self.series.popitem(last=False)
        else:
            self.series.move_to_end(key)
        slot = ring[minute % WINDOW_MINUTES]
        if slot[0] != minute:
            slot[:] = [minute, 0, 0]
        slot[1] += 1
        slot[2] += call.outcome != "ok"

    def counts(self, principals: Collection[str] | None) -> dict[str, tuple[int, int]]:
        """Calls and errors of the last hour, by server (``GATEWAY``: the gateway's own answers), of the
        principals whose keys are given (None: every principal's)."""
        minute = int(self.clock() // 60)
        found: dict[str, tuple[int, int]] = {}
        for (principal, server), ring in list(self.series.items()):
            if principals is not None and principal not in principals:
                continue
            calls, errors = found.get(server, (0, 0))
            for at, count, failed in ring:
                if 0 <= minute - at < WINDOW_MINUTES:
                    calls, errors = calls + count, errors + failed
            found[server] = (calls, errors)
        return found


def iso(seconds: float | None) -> str | None:
    """A wall-clock time as ISO 8601 in UTC, to the second (``2026-11-28T03:40:12Z``)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Status:
    """What a running HTTP gateway says of itself to each principal who asks."""

    def __init__(
        self,
        front: HttpFront,
        cores: Callable[[Grant | None], Gateway],
        policy: Callable[[], Policy | None],
        recent: Recent,
        *,
        source: str,
        version: str,
    ) -> None:
        self.front = front
        self.cores = cores
        """A core, as a new session of the grant's would get it now (None: every tool): its tools and listing."""
        self.policy = policy
        """The access policy in force (None: none), as a reload leaves it."""
        self.recent = recent
        self.source = source
        self.version = version
        self.started = time.time()
        self._costs: OrderedDict[int, tuple[object, dict[str, int], dict[str, Any]]] = OrderedDict()

    def sees_all(self, viewer: Principal) -> bool:
        policy = self.policy()
        return policy is not None and policy.sees_all(viewer)

    def snapshot(self, viewer: Principal) -> dict[str, Any]:
        """The status as ``viewer`` may see it: plain data, times in ISO 8601 (UTC)."""
        everything = self.sees_all(viewer)
        sides = [s for s in self.front.sides() if not s.driver.done.done() and (everything or s.principal == viewer)]
        policy = self.policy()
        grant = None if everything or policy is None else policy.grant(viewer)
        core = self.cores(grant)
        tools, listing = self._costs_of(core)
        calls = self.recent.counts(None if everything else {viewer.key})
        now, wall = asyncio.get_running_loop().time(), time.time()
        servers: list[dict[str, Any]] = []
        for server in list(core.servers):
            name = server.name
            state = server_state(name, self._seen(sides, name), now, wall)
            signed = sign_in_status(server.entry, str(state.get("reason", "")))
            if signed is not None:
                state["sign_in"] = signed
            for key in ("since", "failed_at", "retry_at"):
                if key in state:
                    state[key] = iso(state[key])
            state["tools"] = tools.get(name)
            state["calls"], state["errors"] = calls.get(name, (0, 0))
            servers.append(state)
        total = [sum(pair) for pair in zip(*calls.values(), strict=True)] or [0, 0]
        return {
            "lazymcp": self.version,
            "config": self.source,
            "started": iso(self.started),
            "now": iso(wall),
            "viewer": viewer.describe(),
            "view": "all" if everything else "own",
            "servers": servers,
            "calls": {"calls": total[0], "errors": total[1], "minutes": WINDOW_MINUTES},
            "listing": listing,
            "sessions": len(sides),
            "principals": self._principals(sides, now, wall),
        }

    @staticmethod
    def _seen(sides: list[HttpSession], name: str) -> list[Seen]:
        seen: list[Seen] = []
        for side in sides:
            core = side.driver.core
            if not isinstance(core, Gateway) or name not in core.servers.table:
                continue
            connection = side.driver.connections.get(name)
            pid = getattr(connection, "pid", None)
            since = getattr(connection, "started_at", None) or side.driver.since.get(name)
            life = core.servers[name].life
            seen.append(Seen(life, pid if isinstance(pid, int) else None, since if life.running else None))
        return seen

    def _costs_of(self, core: Gateway) -> tuple[dict[str, int], dict[str, Any]]:
        """Each server's tool count and the listing's figures of ``core``'s catalog, counted once per catalog."""
        catalog = core.catalog
        kept = self._costs.get(id(catalog))
        if kept is not None and kept[0] is catalog:
            self._costs.move_to_end(id(catalog))
            return kept[1], kept[2]
        tools, listing = listing_figures(core)
        self._costs[id(catalog)] = (catalog, tools, listing)
        while len(self._costs) > COSTS_KEPT:
            self._costs.popitem(last=False)
        return tools, listing

    @staticmethod
    def _principals(sides: list[HttpSession], now: float, wall: float) -> list[dict[str, Any]]:
        by: dict[str, dict[str, Any]] = {}
        for side in sides:
            name = side.principal.describe() if isinstance(side.principal, Principal) else "anonymous"
            seen = wall - (now - side.last_seen)
            one = by.setdefault(name, {"principal": name, "sessions": 0, "last_seen": seen})
            one["sessions"] += 1
            one["last_seen"] = max(one["last_seen"], seen)
        return [{**one, "last_seen": iso(one["last_seen"])} for _, one in sorted(by.items())]


def listing_figures(core: Gateway) -> tuple[dict[str, int], dict[str, Any]]:
    """Each server's tool count in ``core``'s catalog, and what a stock client's listing of it costs."""
    tools = {name: len(own) for name, own in granted_tools(core).items()}
    cost = listing_cost(core)
    listing = {
        "tools": cost.tools,
        "tokens": cost.listed,
        "full_tokens": cost.full,
        "saving": round(cost.saving, 4),
        "mode": cost.mode,
    }
    return tools, listing


def config_snapshot(core: Gateway, source: str, version: str) -> dict[str, Any]:
    """The status of a configuration no gateway runs (``lazymcp status --config``), in the shape of a
    running gateway's: ``core`` is built from the manifests alone, so nothing is started to make it. Each
    server is not started, with the tools of its manifest (None: it has none yet) and, for a remote server
    that signs in, its sign-in; the listing is what a new session would be given from those manifests."""
    tools, listing = listing_figures(core)
    servers: list[dict[str, Any]] = []
    for server in list(core.servers):
        state: dict[str, Any] = {"name": server.name, "state": NOT_STARTED}
        signed = sign_in_status(server.entry, "")
        if signed is None and can_sign_in(server.entry):  # whether it asks for one, only its answer says
            signed = NOT_SIGNED_IN
        if signed is not None:
            state["sign_in"] = signed
        state["tools"] = None if server.tools is None else tools.get(server.name, 0)
        servers.append(state)
    return {
        "lazymcp": version,
        "config": source,
        "running": False,
        "now": iso(time.time()),
        "servers": servers,
        "listing": listing,
    }


def status_routes(status: Status) -> list[BaseRoute]:
    """``/status.json`` and the page at ``/``, behind the front's checks (those of ``/mcp``)."""
    import orjson
    from starlette.responses import Response
    from starlette.routing import Route

    from lazymcp.run.http_checks import principal_of, refused
    from lazymcp.run.status_page import HEADERS, page

    front = status.front

    async def as_json(request: Request) -> Response:
        denied = await refused(front.guard, front.access, request)
        if denied is not None:
            return denied
        body = orjson.dumps(status.snapshot(principal_of(request)))
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})

    async def as_page(request: Request) -> Response:
        denied = await refused(front.guard, front.access, request)
        if denied is not None:
            return denied
        return Response(page(status.snapshot(principal_of(request))), media_type="text/html", headers=HEADERS)

    return [Route("/status.json", as_json, methods=["GET"]), Route("/", as_page, methods=["GET"])]
