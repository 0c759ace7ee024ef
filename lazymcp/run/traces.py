"""Traces of the gateway's calls, with OpenTelemetry (``pip install "lazymcp[otel]"``).

Traces are on when the OpenTelemetry SDK is installed and the standard variables ask for them:
``OTEL_TRACES_EXPORTER`` (``console``: one JSON line a span on stderr, since stdout may be the MCP
channel; ``otlp``: needs ``opentelemetry-exporter-otlp``), ``OTEL_SERVICE_NAME`` (default ``lazymcp``),
and the exporter's own ``OTEL_EXPORTER_*``. Otherwise this module is not imported and nothing costs.

Each answered ``tools/call`` (``Called``) is one span, named ``tools/call <tool>``, from the call leaving
for its server to its answer, with the semantic conventions for MCP where they exist
(``mcp.method.name``, ``gen_ai.tool.name``, ``gen_ai.operation.name``) and ``lazymcp.server``,
``lazymcp.outcome``, ``lazymcp.principal``. A call whose ``_meta.traceparent`` names a W3C trace context
is a child of it; the ``_meta`` goes on to the server as it came (an HTTP front puts a request's
``traceparent`` header there: ``lazymcp.run.http_checks.with_trace_context``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from lazymcp.core.actions import Called
from lazymcp.errors import ConfigError
from lazymcp.run.observe import Watcher

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

EXPORTERS = ("console", "otlp")


def asked(environ: Mapping[str, str] | None = None) -> bool:
    """Do the OTEL_* variables ask for traces, and is the SDK there to make them? (Nothing is imported.)"""
    environ = os.environ if environ is None else environ
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter in ("", "none") or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return importlib.util.find_spec("opentelemetry.sdk") is not None


class Traces(Watcher):
    """A span per answered call."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        """Raises:
        ConfigError: an exporter lazymcp cannot make.
        """
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        environ = os.environ if environ is None else environ
        exporter = environ.get("OTEL_TRACES_EXPORTER", "console").strip().lower()
        resource = Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME") or "lazymcp"})
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(SimpleSpanProcessor(_exporter(exporter)))
        self.tracer = self.provider.get_tracer("lazymcp")

    def called(self, call: Called) -> None:
        from opentelemetry.propagate import extract
        from opentelemetry.trace import SpanKind, Status, StatusCode

        parent = extract({"traceparent": call.traceparent}) if call.traceparent else None
        end = time.time_ns()
        attributes = {
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": call.tool,
            "gen_ai.operation.name": "execute_tool",
            "lazymcp.server": call.server or "",
            "lazymcp.outcome": call.outcome,
            "lazymcp.principal": call.principal,
        }
        span = self.tracer.start_span(
            f"tools/call {call.tool}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            start_time=end - int(call.seconds * 1e9),
        )
        if call.outcome not in ("ok",):
            span.set_status(Status(StatusCode.ERROR, call.outcome))
        span.end(end_time=end)


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr, formatter=lambda span: span.to_json(indent=None) + "\n")
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # pyright: ignore
        except ImportError:
            raise ConfigError("OTEL_TRACES_EXPORTER=otlp needs opentelemetry-exporter-otlp installed") from None
        return OTLPSpanExporter()  # pyright: ignore
    raise ConfigError(f"OTEL_TRACES_EXPORTER={name!r}: lazymcp makes {' or '.join(EXPORTERS)} traces")
