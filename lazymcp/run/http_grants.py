"""What a request of the HTTP front may use comes from its own credentials (``lazymcp.access.policy``).

A 2026-07-28 request is served by a session of its principal *and* of the grant its own token earns, so
two requests of one principal whose tokens carry different claims (a group joined, a role dropped) never
share a grant, even in flight together. A 2025-11-25 session is bound to the principal that opened it
(another principal's request finds no session: 404); when the same principal comes with a token whose
claims earn another grant, the session is granted anew before the request is served, and its client is
told the lists that changed. ``bound`` is that one rule, and every path of the front goes through it:
the POSTs of both eras, the GET stream and DELETE, and so the requests a peer instance forwards. The
policy is asked once per request (``grant_of``): a 2026 request's grant both finds its session and is
given to it (``granted``).

The session keeps the request's principal as it came, with its OAuth token: a renewed token replaces the
one the session was opened with, so a server reached by token exchange (``lazymcp.run.exchange``) is
reached with a token exchanged for the latest one (``subject``). When a configuration read again changes
what the policy grants, the 2026 sessions are filed again under their new grants (``refiled``), so that
their principals' next requests find them, and their servers, again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lazymcp.access.policy import Principal
    from lazymcp.core.actions import Action, Core
    from lazymcp.run.http_sessions import HttpSession


class Grants(Protocol):
    """What the policy in force grants a principal, and how a session's core takes another grant."""

    def grant(self, principal: Principal | None) -> object:
        """The grant of ``principal`` (comparable; None: everything)."""
        ...

    def regrant(self, core: Core, grant: object) -> Callable[[float], list[Action]] | None:
        """The step that serves ``core``'s session with ``grant`` (None: a core that has no grant)."""
        ...


def grant_of(grants: Grants | None, principal: Principal) -> object:
    """What ``principal``'s own credentials are granted (None: the front grants no one anything apart)."""
    return None if grants is None else grants.grant(principal)


def bound(grants: Grants | None, side: HttpSession, principal: Principal) -> bool:
    """May a request of ``principal`` use ``side``? Not when another principal opened it. When it may,
    the session takes the request's own credentials (its claims) and the grant they earn, first."""
    if side.principal != principal:
        return False
    granted(grants, side, principal, grant_of(grants, principal))
    return True


def granted(grants: Grants | None, side: HttpSession, principal: Principal, grant: object) -> None:
    """``side`` takes a request of its principal: its credentials (claims and token) and ``grant``, the grant
    they earn, asked of the policy once for the request."""
    side.principal = principal
    if grants is not None and grant != side.grant:
        side.grant = grant
        step = grants.regrant(side.driver.core, grant)
        if step is not None:
            side.driver.apply(step)


def subject(side: HttpSession) -> str | None:
    """The OAuth token of the latest request ``side`` took (None: its principal has none)."""
    from lazymcp.access.policy import Principal

    return side.principal.token if isinstance(side.principal, Principal) else None


def refiled(moderns: dict[object, HttpSession]) -> None:
    """The 2026 sessions filed again by principal and the grant each holds now (a configuration read again
    changed what the policy grants). When two sessions of a principal now hold one grant, the one used
    last keeps its place; the other is set aside under a key no request makes, to end idle or to make room
    (``lazymcp.run.http_front``)."""
    sides = sorted(moderns.values(), key=lambda side: side.last_seen, reverse=True)
    moderns.clear()
    for side in sides:
        key = (side.principal, side.grant)
        moderns[key if key not in moderns else ("set aside", id(side))] = side
