"""``/metrics``: what the gateway does, in the Prometheus text format (version 0.0.4).

The metrics are a ``Watcher`` (``lazymcp.run.observe``) that counts in plain dictionaries:

- ``lazymcp_requests_total{method,outcome}``: requests an HTTP front answered (``ok`` or ``error``);
- ``lazymcp_tool_calls_total{server,tool,outcome}``: ``tools/call`` requests by how they ended (a call
  answered by the gateway has ``server=""``; a call to a tool it does not know, or that the access policy
  refuses, is counted under ``tool=""``, however it ended (rate-limited too) and however it was named
  (``invoke_tool`` too), so a client cannot make a series per name it makes up);
- ``lazymcp_tool_call_seconds{server}``: how long servers took to answer calls (a histogram);
- ``lazymcp_server_starts_total{server}``, ``lazymcp_server_failures_total{server}``;
- ``lazymcp_sessions``: the HTTP front's sessions open now;
- ``lazymcp_forwarded_total``: requests this instance handed to the instance that owns their session
  (``--redis``), counted by the instance that hands them on;
- ``lazymcp_rate_limited_total``, ``lazymcp_denied_total``: calls refused by a rate limit, by the policy.

The page is written here rather than by ``prometheus-client``, whose writer takes tens of milliseconds
for the few thousand series of a gateway of 1,000 tools (bench/access.py); the tests read it with that
package's parser. ``/metrics`` beside ``/mcp`` takes the same checks as ``/mcp`` (Host, Origin, and who
may come in); ``--metrics HOST:PORT`` serves it on an address of its own instead, without them. See
spec/gateway.md §12.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from lazymcp.core.actions import Called
from lazymcp.gateway.passthrough import LISTS, ROUTED
from lazymcp.protocol.errors import ConfigError
from lazymcp.run.observe import Watcher
from lazymcp.surfaces.methods import METHODS

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from lazymcp.access.policy import Policy
    from lazymcp.run.http_front import HttpFront

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
"""The histogram's upper bounds in seconds (Prometheus' default buckets), then ``+Inf``."""
KNOWN_METHODS = frozenset(
    {"initialize", "ping", "logging/setLevel", "server/discover", "subscriptions/listen", *METHODS, *LISTS, *ROUTED}
)
"""Methods counted by name; any other is ``other``, so a client cannot make a series per name it makes up."""
NAMELESS = ("unknown_tool", "denied")
"""Outcomes of calls whose tool name is the client's own invention: counted without it."""


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    return "{" + ",".join(f'{name}="{_label(value)}"' for name, value in zip(names, values, strict=True)) + "}"


def _float(value: float) -> str:
    return repr(float(value))


class Family:
    """One counter family: a count by label values."""

    def __init__(self, name: str, help: str, labels: tuple[str, ...] = ()) -> None:
        self.name, self.help, self.labels = name, help, labels
        self.counts: dict[tuple[str, ...], float] = {} if labels else {(): 0.0}
        self.series: dict[tuple[str, ...], str] = {(): f"{name}_total"}
        """Each series' name and labels, written once."""

    def inc(self, *values: str) -> None:
        count = self.counts.get(values)
        if count is None:
            self.series[values] = f"{self.name}_total{_labels(self.labels, values)}"
            count = 0.0
        self.counts[values] = count + 1.0

    def lines(self) -> Iterable[str]:
        yield f"# HELP {self.name}_total {self.help}"
        yield f"# TYPE {self.name}_total counter"
        series = self.series
        for values, count in list(self.counts.items()):  # one C call: safe beside the loop's updates
            yield f"{series[values]} {count!r}"


class Metrics(Watcher):
    """The gateway's metrics."""

    def __init__(self) -> None:
        self.requests = Family("lazymcp_requests", "Requests answered, by method and outcome.", ("method", "outcome"))
        self.calls = Family(
            "lazymcp_tool_calls", "tools/call requests, by server, tool and outcome.", ("server", "tool", "outcome")
        )
        self.starts = Family("lazymcp_server_starts", "Server starts.", ("server",))
        self.failures = Family("lazymcp_server_failures", "Server failures.", ("server",))
        self.forwarded = Family("lazymcp_forwarded", "Requests handed to another gateway instance.")
        self.rate_limited = Family("lazymcp_rate_limited", "Calls refused by a rate limit.")
        self.denied = Family("lazymcp_denied", "Calls refused by the access policy.")
        self.seconds: dict[str, list[float]] = {}
        """Per server: a count per bucket (the last ``+Inf``), then the sum."""
        self.sessions: Callable[[], int] = lambda: 0

    def count_sessions(self, sessions: Callable[[], int]) -> None:
        """``sessions()`` says how many sessions are open, when the metrics are read."""
        self.sessions = sessions

    def called(self, call: Called) -> None:
        tool = call.tool if call.named and call.outcome not in NAMELESS else ""
        self.calls.inc(call.server or "", tool, call.outcome)
        if call.server is not None and call.outcome not in ("rate_limited", "unavailable"):
            spread = self.seconds.setdefault(call.server, [0.0] * (len(BUCKETS) + 2))
            spread[bisect.bisect_left(BUCKETS, call.seconds)] += 1.0
            spread[-1] += call.seconds
        if call.outcome == "rate_limited":
            self.rate_limited.inc()
        elif call.outcome == "denied":
            self.denied.inc()

    def requested(self, method: str, outcome: str) -> None:
        self.requests.inc(method if method in KNOWN_METHODS else "other", outcome)

    def server_started(self, server: str) -> None:
        self.starts.inc(server)

    def server_failed(self, server: str) -> None:
        self.failures.inc(server)

    def handed_on(self) -> None:
        self.forwarded.inc()

    def _histogram(self) -> Iterable[str]:
        name = "lazymcp_tool_call_seconds"
        yield f"# HELP {name} Seconds servers took to answer calls."
        yield f"# TYPE {name} histogram"
        bounds = [*map(_float, BUCKETS), "+Inf"]
        for server, spread in list(self.seconds.items()):
            server_label = f'server="{_label(server)}"'
            total = 0.0
            for bound, count in zip(bounds, spread, strict=False):
                total += count
                yield f'{name}_bucket{{{server_label},le="{bound}"}} {_float(total)}'
            yield f"{name}_count{{{server_label}}} {_float(total)}"
            yield f"{name}_sum{{{server_label}}} {_float(spread[-1])}"

    def text(self) -> bytes:
        """The metrics in the Prometheus text format."""
        lines: list[str] = []
        for family in (self.requests, self.calls):
            lines += family.lines()
        lines += self._histogram()
        for family in (self.starts, self.failures):
            lines += family.lines()
        lines += ["# HELP lazymcp_sessions Sessions open now.", "# TYPE lazymcp_sessions gauge"]
        lines.append(f"lazymcp_sessions {_float(self.sessions())}")
        for family in (self.forwarded, self.rate_limited, self.denied):
            lines += family.lines()
        return ("\n".join(lines) + "\n").encode()


NOT_GRANTED = 'metrics not granted: no key of the access policy that matches you has "metrics": true\n'
"""The body of the 403 answered to a principal the policy does not grant ``metrics``."""


def metrics_route(metrics: Metrics, front: HttpFront, policy: Callable[[], Policy | None]) -> BaseRoute:
    """``/metrics`` beside ``/mcp``, behind the same checks, then, with an access policy (``policy()``, as
    it is now), to the principals one of its keys grants ``"metrics": true`` only (others: 403)."""
    from starlette.responses import Response
    from starlette.routing import Route

    from lazymcp.run.http_checks import principal_of, refused

    async def endpoint(request: Request) -> Response:
        denied = await refused(front.guard, front.access, request)
        if denied is not None:
            return denied
        rules = policy()
        if rules is not None and not rules.sees_all(principal_of(request)):
            return Response(NOT_GRANTED, status_code=403, media_type="text/plain")
        return Response(metrics.text(), headers={"Content-Type": CONTENT_TYPE})

    return Route("/metrics", endpoint, methods=["GET"])


def serve_apart(metrics: Metrics, address: tuple[str, int]) -> ThreadingHTTPServer:
    """Serve ``GET /metrics`` at ``address`` (``--metrics HOST:PORT``), in a thread of its own.

    Raises:
        ConfigError: the address cannot be listened on.
    """

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.partition("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = metrics.text()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    host, port = address
    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
    server.daemon_threads = True
    server.timeout = 30
    threading.Thread(target=server.serve_forever, name="lazymcp-metrics", daemon=True).start()
    return server
