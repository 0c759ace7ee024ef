"""``/metrics``: what the gateway does, in the Prometheus text format (``pip install "lazymcp[metrics]"``).

The metrics are a ``Watcher`` (``lazymcp.run.observe``) over their own registry:

- ``lazymcp_requests_total{method,outcome}``: requests an HTTP front answered (``ok`` or ``error``);
- ``lazymcp_tool_calls_total{server,tool,outcome}``: ``tools/call`` requests by how they ended (a call
  answered by the gateway has ``server=""``; a call to a tool it does not know, or that the access policy
  refuses, is counted under ``tool=""``, so a client cannot make a series per name it makes up);
- ``lazymcp_tool_call_seconds{server}``: how long servers took to answer calls (a histogram);
- ``lazymcp_server_starts_total{server}``, ``lazymcp_server_failures_total{server}``;
- ``lazymcp_sessions``: the HTTP front's sessions open now;
- ``lazymcp_forwarded_total``: requests handed to another gateway instance (none yet: an instance
  serves all of its sessions itself);
- ``lazymcp_rate_limited_total``, ``lazymcp_denied_total``: calls refused by a rate limit, by the policy.

``/metrics`` beside ``/mcp`` takes the same checks as ``/mcp`` (Host, Origin, and who may come in);
``--metrics HOST:PORT`` serves it on an address of its own instead, without them. See spec/gateway.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lazymcp.core.actions import Called
from lazymcp.errors import ConfigError
from lazymcp.gateway.passthrough import LISTS, ROUTED
from lazymcp.methods import METHODS
from lazymcp.run.observe import Watcher

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from lazymcp.run.http_front import HttpFront

KNOWN_METHODS = frozenset(
    {"initialize", "ping", "logging/setLevel", "server/discover", "subscriptions/listen", *METHODS, *LISTS, *ROUTED}
)
"""Methods counted by name; any other is ``other``, so a client cannot make a series per name it makes up."""
NAMELESS = ("unknown_tool", "denied")
"""Outcomes of calls whose tool name is the client's own invention: counted without it."""


def _client() -> object:
    try:
        import prometheus_client
    except ImportError:
        raise ConfigError('metrics need the prometheus-client package: pip install "lazymcp[metrics]"') from None
    return prometheus_client


class Metrics(Watcher):
    """The gateway's metrics, in a registry of their own."""

    def __init__(self) -> None:
        """Raises:
        ConfigError: prometheus-client is not installed.
        """
        _client()
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.requests = Counter(
            "lazymcp_requests", "Requests answered, by method and outcome.", ["method", "outcome"], registry=registry
        )
        self.calls = Counter(
            "lazymcp_tool_calls", "tools/call requests, by server, tool and outcome.", ["server", "tool", "outcome"],
            registry=registry,
        )  # fmt: skip
        self.seconds = Histogram(
            "lazymcp_tool_call_seconds", "Seconds servers took to answer calls.", ["server"], registry=registry
        )
        self.starts = Counter("lazymcp_server_starts", "Server starts.", ["server"], registry=registry)
        self.failures = Counter("lazymcp_server_failures", "Server failures.", ["server"], registry=registry)
        self.sessions = Gauge("lazymcp_sessions", "Sessions open now.", registry=registry)
        self.sessions.set_function(lambda: 0.0)
        self.forwarded = Counter("lazymcp_forwarded", "Requests handed to another gateway instance.", registry=registry)
        self.rate_limited = Counter("lazymcp_rate_limited", "Calls refused by a rate limit.", registry=registry)
        self.denied = Counter("lazymcp_denied", "Calls refused by the access policy.", registry=registry)

    def count_sessions(self, sessions: Callable[[], int]) -> None:
        """``sessions()`` says how many sessions are open, when the metrics are read."""
        self.sessions.set_function(lambda: float(sessions()))

    def called(self, call: Called) -> None:
        tool = "" if call.outcome in NAMELESS else call.tool
        self.calls.labels(call.server or "", tool, call.outcome).inc()
        if call.server is not None and call.outcome not in ("rate_limited", "unavailable"):
            self.seconds.labels(call.server).observe(call.seconds)
        if call.outcome == "rate_limited":
            self.rate_limited.inc()
        elif call.outcome == "denied":
            self.denied.inc()

    def requested(self, method: str, outcome: str) -> None:
        self.requests.labels(method if method in KNOWN_METHODS else "other", outcome).inc()

    def server_started(self, server: str) -> None:
        self.starts.labels(server).inc()

    def server_failed(self, server: str) -> None:
        self.failures.labels(server).inc()

    def text(self) -> bytes:
        """The metrics in the Prometheus text format."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


def metrics_route(metrics: Metrics, front: HttpFront) -> BaseRoute:
    """``/metrics`` beside ``/mcp``, behind the same checks."""
    from prometheus_client import CONTENT_TYPE_LATEST
    from starlette.responses import Response
    from starlette.routing import Route

    async def endpoint(request: Request) -> Response:
        refused = front.guard.check(request)
        if refused is None and front.access is not None:
            refused = await front.access.check(request)
        if refused is not None:
            return refused
        return Response(metrics.text(), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", endpoint, methods=["GET"])


def serve_apart(metrics: Metrics, address: tuple[str, int]) -> None:
    """Serve ``/metrics`` at ``address`` (``--metrics HOST:PORT``), in a thread of its own.

    Raises:
        ConfigError: the address cannot be listened on.
    """
    from prometheus_client import start_http_server

    host, port = address
    try:
        start_http_server(port, host, registry=metrics.registry)
    except OSError as exc:
        raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
