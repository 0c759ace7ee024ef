"""``lazymcp proxy``: one server made lazy, for clients on this process's stdio or on streamable HTTP.

The proxy's core is ``lazymcp.core.proxy.Proxy``; the client sides are the gateway's own
(``lazymcp.run.stdio``, ``lazymcp.run.http_front``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lazymcp.core.entries import ServerEntry, transport_of
from lazymcp.core.proxy import Proxy
from lazymcp.local.addresses import open_front_warning
from lazymcp.protocol.limits import Limits
from lazymcp.run.notices import say
from lazymcp.run.wire import sdk_serializer
from lazymcp.surfaces.options import Options

if TYPE_CHECKING:
    from lazymcp.access.bearer import Access

UPSTREAM = "upstream"
"""The proxy's one server, as its reports name it."""


def proxy_core(upstream: Sequence[str] | str, options: Options | None, limits: Limits) -> Proxy:
    """The proxy's core over one server (a command, or a streamable-HTTP URL), with the SDK's 2026 wire
    model for the results it bridges."""
    from lazymcp.version import __version__

    if isinstance(upstream, str):
        entry = ServerEntry(UPSTREAM, url=upstream, transport=transport_of(None, upstream) or "http")
    else:
        entry = ServerEntry(UPSTREAM, command=tuple(upstream))
    return Proxy(
        entry,
        options or Options(),
        timeout=limits.timeout or None,
        client_timeout=limits.client_timeout,
        client_info={"name": "lazymcp-proxy", "version": __version__},
        serialize=sdk_serializer,
    )


def run_proxy(
    upstream: Sequence[str] | str,
    options: Options | None = None,
    *,
    limits: Limits | None = None,
    http: tuple[str, int] | None = None,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    access: Access | None = None,
) -> int:
    """Run the proxy: ``upstream`` is a command (stdio) or a URL (streamable HTTP); clients come over
    this process's stdio, or streamable HTTP at ``http`` (host, port). Returns the exit status."""
    limits = limits or Limits()
    if http is None:
        from lazymcp.run.stdio import run_stdio

        core = proxy_core(upstream, options, limits)
        core.session.environ = dict(os.environ)  # the host's own, which may say how it treats tool listings
        return asyncio.run(run_stdio(core))
    from lazymcp.run.http_front import HttpFront
    from lazymcp.run.http_serve import serve_front

    host, _ = http
    warning = open_front_warning(host, allow_hosts, allow_origins) if access is None else None
    if warning is not None:
        say("proxy", warning)
    front = HttpFront(
        lambda _principal, _grant: proxy_core(upstream, options, limits),
        limits,
        host,
        allow_hosts=allow_hosts,
        allow_origins=allow_origins,
        access=access,
    )
    return serve_front(front, http)
