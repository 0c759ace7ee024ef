"""An HTTP front served (``--http``): uvicorn over the front's app, at one host and port, until SIGTERM or
SIGINT. On the signal the front is told first (``HttpFront.stopping``): it answers every POST still
waiting and reaps its servers, so that uvicorn's graceful shutdown finds no request in flight."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute

from lazymcp.protocol.limits import fix_mmap_threshold
from lazymcp.run.http_front import HttpFront


def serve_front(front: HttpFront, http: tuple[str, int], routes: Sequence[BaseRoute] = ()) -> int:
    """Serve ``front`` at ``http`` (host, port), with any other ``routes`` beside ``/mcp``, until SIGTERM
    or SIGINT; the exit status."""
    import uvicorn

    fix_mmap_threshold()
    from lazymcp.run.http_writes import front_protocol

    host, port = http
    config = uvicorn.Config(
        front.app(routes),
        host=host,
        port=port,
        http=front_protocol(among_peers=front.cluster is not None),
        log_level="warning",
        timeout_graceful_shutdown=2,
    )

    class FrontServer(uvicorn.Server):
        """uvicorn's server, which tells the front of a signal before it shuts down."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            front.stopping()
            super().handle_exit(sig, frame)

    FrontServer(config).run()
    return 0
