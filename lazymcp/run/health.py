"""What a load balancer asks an HTTP front: ``/healthz`` (is the process serving) and ``/readyz`` (may
it be sent new sessions).

- ``/healthz``: 200 while the process serves HTTP at all.
- ``/readyz``: 200 with ``{"status": "ok"}``, or ``{"status": "degraded", ...}`` when it serves but
  something it shares with its peers is out of reach (Redis: its own sessions are still served and new
  ones open locally); 503 with ``{"status": "unavailable", "reason": ...}`` while it cannot take new
  sessions (starting, shutting down).

Neither asks for a token nor checks Host or Origin: a load balancer carries neither, and the answers tell
nothing but the status.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

Readiness = Callable[[], dict[str, object]]
"""The front's readiness now: a body whose ``status`` is ``ok``, ``degraded`` or ``unavailable``."""


def health_routes(readiness: Readiness) -> list[BaseRoute]:
    """``/healthz`` and ``/readyz`` of a front whose readiness ``readiness`` tells."""

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})

    async def readyz(_request: Request) -> Response:
        body = readiness()
        status = 503 if body.get("status") == "unavailable" else 200
        return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})

    return [Route("/healthz", healthz, methods=["GET", "HEAD"]), Route("/readyz", readyz, methods=["GET", "HEAD"])]
