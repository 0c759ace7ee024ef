"""Traces of what the gateway does, with OpenTelemetry (the ``otel`` extra: ``pipx install ".[otel]"``).

Traces are on when the OpenTelemetry SDK is installed and the standard variables ask for them:
``OTEL_TRACES_EXPORTER`` (``console``: one JSON line a span on stderr as it ends, since stdout may be
the MCP channel; ``otlp``: OTLP over HTTP, ``opentelemetry-exporter-otlp-proto-http``, sent in batches by
the SDK's batch processor, ``OTEL_BSP_*``), ``OTEL_SERVICE_NAME`` (default ``lazymcp``), and the exporter's
own ``OTEL_EXPORTER_*``. Otherwise no OpenTelemetry module is imported and nothing costs; where the variables
ask for traces and the extra is missing, the gateway says so in one line (``missing``).

The driver (``lazymcp.run.driver``) hands ``Traces`` what crosses a session, when ``observe.tracing``
is set, and nothing otherwise:

- each client request (``incoming``) opens a span of kind server, ``<method> <target>`` (the tool or
  prompt named), a child of the W3C trace context in its ``_meta.traceparent`` (an HTTP front puts a
  request's ``traceparent`` header there: ``lazymcp.run.http_checks.with_trace_context``); the request
  then goes on with the span's own context in ``_meta.traceparent``, and the span ends with the answer to
  the client (``outgoing``). A ``tools/call`` answered gets its server, outcome and principal from the
  core's ``Called``.
- each request the gateway sends a server on a client request's behalf (``outgoing``: its
  ``_meta.traceparent`` is a request span's) opens a span of kind client, the hop, a child of that
  request's span, and goes with the hop's context in ``_meta.traceparent`` (a stdio server reads it
  there; an HTTP server gets it as the ``traceparent`` header too, ``lazymcp.run.connections``). It ends
  with the server's answer (``from_server``), when the server is told its request is cancelled
  (``cancelled``: the client gave up on it, or a run on its call), when the server stops (``timeout`` for
  the request it hung on, ``server_stopped`` for the others), or when the session ends (``closed``).
- a ``run_code`` call (code mode) is a request like any other, so a run is one span; each tool call its
  code makes comes in with the run's context (``lazymcp.run.code_runs``) and is a span of kind internal
  (``lazymcp.via``: ``run_code``), a child of the run's, with its hop below it. A request the client
  cancels (``notifications/cancelled``; a run cancels its calls when it stops) ends as ``cancelled``.

Attributes follow the semantic conventions for MCP where they exist: ``mcp.method.name``,
``jsonrpc.request.id``, ``gen_ai.tool.name``, ``gen_ai.prompt.name``, ``gen_ai.operation.name``
(``execute_tool``), ``mcp.resource.uri``, ``error.type``, ``rpc.response.status_code``; and
``lazymcp.server``, ``lazymcp.outcome``, ``lazymcp.principal``. At most ``MAX_OPEN`` spans wait per
session and kind; past it the oldest ends as ``abandoned``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from lazymcp.core.actions import CODE_CALL, Action, Called, Stop, ToClient, ToServer
from lazymcp.local.extras import install_hint
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ConfigError
from lazymcp.run.observe import Watcher

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span

EXPORTERS = ("console", "otlp")
MAX_OPEN = 10_000
"""Spans waiting for an answer, per session and kind (client requests, server calls)."""
_TARGETS = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name", "resources/read": "mcp.resource.uri"}


def asked(environ: Mapping[str, str] | None = None) -> bool:
    """Do the OTEL_* variables ask for traces, and is the SDK there to make them? (Nothing is imported.)"""
    environ = os.environ if environ is None else environ
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter in ("", "none") or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return _installed("opentelemetry.sdk")


EXTRA_HINT = install_hint("otel")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package absent, or blocked
        return False


def missing(environ: Mapping[str, str] | None = None) -> str | None:
    """What the ``OTEL_*`` variables ask for and the installed packages cannot make, as one line for the
    operator (None: nothing asked, traces off on purpose, or everything there). Nothing is imported."""
    environ = os.environ if environ is None else environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    endpoints = sorted(k for k in environ if k.startswith("OTEL_EXPORTER_OTLP_") and k.endswith("ENDPOINT"))
    if exporter == "none" or not (exporter or endpoints):
        return None
    said = f"OTEL_TRACES_EXPORTER={exporter}" if exporter else f"{endpoints[0]} is set"
    if _installed("opentelemetry.sdk"):
        return None  # traces are on (``asked``), or off for want of OTEL_TRACES_EXPORTER, as the docs say
    return f"{said}, but the OpenTelemetry SDK is not installed: no traces; it comes with {EXTRA_HINT}"


class _Open:
    """One session's spans waiting for an answer."""

    def __init__(self) -> None:
        self.requests: OrderedDict[tuple[str, object], Span] = OrderedDict()
        self.calls: OrderedDict[tuple[str, tuple[str, object]], Span] = OrderedDict()


class Traces(Watcher):
    """A span per client request and per call to a server (a ``Watcher`` so that the cores report calls)."""

    def __init__(self, environ: Mapping[str, str] | None = None, exporter: SpanExporter | None = None) -> None:
        """``exporter``: where spans go, else the one ``OTEL_TRACES_EXPORTER`` names.

        Raises:
            ConfigError: an exporter lazymcp cannot make.
        """
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        environ = os.environ if environ is None else environ
        name = environ.get("OTEL_TRACES_EXPORTER", "console").strip().lower()
        resource = Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME") or "lazymcp"})
        self.provider = TracerProvider(resource=resource)
        # a console span is written as it ends; spans for the network go in batches from a thread of
        # their own (flushed at exit), so that a slow collector never slows a call
        processor = SimpleSpanProcessor if exporter is not None or name == "console" else BatchSpanProcessor
        self.provider.add_span_processor(processor(exporter or _exporter(name)))
        self.tracer = self.provider.get_tracer("lazymcp")
        self._open: weakref.WeakKeyDictionary[object, _Open] = weakref.WeakKeyDictionary()
        self._by_context: dict[str, Span] = {}
        """Request spans open, by the traceparent they passed on: where a ``Called`` finds its span."""

    def _state(self, session: object) -> _Open:
        state = self._open.get(session)
        if state is None:
            state = self._open[session] = _Open()
        return state

    def incoming(self, session: object, data: bytes | jsonrpc.Frame) -> bytes | jsonrpc.Frame:
        """A client request's span opened; the request, to go on with its context."""
        frame = jsonrpc.client_frame(data)
        if frame is None:
            return data
        message = frame.message
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if method == "notifications/cancelled":
            self._cancelled(session, jsonrpc.field(params, "requestId"))
        if not isinstance(method, str) or not jsonrpc.valid_id(request_id):
            return data
        if params is not None and not isinstance(params, dict):
            return data
        from opentelemetry.trace import SpanKind

        members = cast(dict[str, object], params or {})
        meta = jsonrpc.params_meta(message)
        attributes = _attributes(method, request_id, members)
        from_code = isinstance(request_id, str) and request_id.startswith(CODE_CALL)
        if from_code:
            attributes["lazymcp.via"] = "run_code"
        span = self.tracer.start_span(
            _name(method, members),
            context=_parent(meta.get("traceparent")),
            kind=SpanKind.INTERNAL if from_code else SpanKind.SERVER,
            attributes=attributes,
        )
        traceparent = _traceparent_of(span)
        state = self._state(session)
        key = jsonrpc.id_key(request_id)
        if key in state.requests:  # a client reusing an id: the first one's span ends now
            self._end_request(state, key, "abandoned")
        state.requests[key] = span
        self._by_context[traceparent] = span
        if len(state.requests) > MAX_OPEN:
            self._end_request(state, next(iter(state.requests)), "abandoned")
        return frame.changed(params={**members, "_meta": {**meta, "traceparent": traceparent}})

    def outgoing(self, session: object, actions: list[Action]) -> list[Action]:
        """What a core decided, with each request to a server carrying its hop's context; answers to the
        client end their request's span, calls answered annotate it, a stopped server ends its hops."""
        state = self._open.get(session)
        if state is None:
            return actions
        carried = list(actions)
        answered: list[jsonrpc.Frame] = []
        for at, action in enumerate(actions):
            if isinstance(action, ToServer) and action.frame.method == "notifications/cancelled":
                self._call_ends(state, action.server, action.frame.params.get("requestId"), "cancelled")
            elif isinstance(action, ToServer):
                carried[at] = self._hop(state, action)
            elif isinstance(action, ToClient):
                answered.append(action.frame)
            elif isinstance(action, Called):
                self._annotate(action)
            elif isinstance(action, Stop):
                if action.late is not None:
                    self._call_ends(state, action.server, action.late, "timeout")
                for key in [key for key in state.calls if key[0] == action.server]:
                    _finish(state.calls.pop(key), "server_stopped")
        for frame in answered:
            message = frame.message
            if "method" not in message and ("result" in message or "error" in message):
                key = jsonrpc.id_key(message.get("id"))
                if key in state.requests:
                    self._end_request(state, key, _error_of(message))
        return carried

    def from_server(self, session: object, server: str, line: bytes) -> None:
        """A server's line: the answer that ends a hop, if it is one."""
        state = self._open.get(session)
        if state is None or not state.calls:
            return
        try:
            message = jsonrpc.parse(line)
        except jsonrpc.NotJSONRPC:
            return
        if "method" in message or not ("result" in message or "error" in message):
            return
        span = state.calls.pop((server, jsonrpc.id_key(message.get("id"))), None)
        if span is not None:
            _finish(span, _error_of(message))

    def closed(self, session: object) -> None:
        """The session ended: its hops and requests left unanswered end (``error.type`` ``session_closed``)."""
        state = self._open.pop(session, None)
        if state is None:
            return
        for span in state.calls.values():
            _finish(span, "session_closed")
        for key in list(state.requests):
            self._end_request(state, key, "session_closed")

    def _hop(self, state: _Open, action: ToServer) -> ToServer:
        message = action.frame.message
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if not isinstance(method, str) or not jsonrpc.valid_id(request_id) or not isinstance(params, dict):
            return action
        members = cast(dict[str, object], params)
        meta = jsonrpc.params_meta(message)
        parent = meta.get("traceparent")
        if not isinstance(parent, str) or parent not in self._by_context:
            return action  # the gateway's own request (a handshake, a listing): no client's span to join
        from opentelemetry.trace import SpanKind

        attributes = {**_attributes(method, request_id, members), "lazymcp.server": action.server}
        span = self.tracer.start_span(
            _name(method, members), context=_parent(parent), kind=SpanKind.CLIENT, attributes=attributes
        )
        key = (action.server, jsonrpc.id_key(request_id))
        if key in state.calls:
            _finish(state.calls.pop(key), "abandoned")
        state.calls[key] = span
        if len(state.calls) > MAX_OPEN:
            _finish(state.calls.pop(next(iter(state.calls))), "abandoned")
        frame = action.frame.changed(params={**members, "_meta": {**meta, "traceparent": _traceparent_of(span)}})
        return ToServer(frame, action.server)

    @staticmethod
    def _call_ends(state: _Open, server: str, request_id: object, error: str) -> None:
        """A hop to ``server`` ends unanswered: cancelled, or the request the server hung on."""
        span = state.calls.pop((server, jsonrpc.id_key(request_id)), None)
        if span is not None:
            _finish(span, error)

    def _annotate(self, call: Called) -> None:
        span = self._by_context.get(call.traceparent or "")
        if span is None:
            return
        span.set_attributes(
            {"lazymcp.server": call.server or "", "lazymcp.outcome": call.outcome, "lazymcp.principal": call.principal}
        )
        if call.outcome != "ok":
            span.set_attribute("error.type", call.outcome)

    def _cancelled(self, session: object, request_id: object) -> None:
        """The client cancelled a request (or a run stopped a call of its code): its span ends, ``cancelled``."""
        state = self._open.get(session)
        key = jsonrpc.id_key(request_id)
        if state is not None and key in state.requests:
            self._end_request(state, key, "cancelled")

    def _end_request(self, state: _Open, key: tuple[str, object], error: str | None) -> None:
        span = state.requests.pop(key)
        self._by_context.pop(_traceparent_of(span), None)
        _finish(span, error)


def _parent(traceparent: object) -> Any:
    if not isinstance(traceparent, str):
        return None
    from opentelemetry.propagate import extract

    return extract({"traceparent": traceparent})


def _traceparent_of(span: Span) -> str:
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def _name(method: str, params: object) -> str:
    target = jsonrpc.field(params, "uri" if method == "resources/read" else "name")
    return f"{method} {target}" if isinstance(target, str) and method in _TARGETS else method


def _attributes(method: str, request_id: object, params: object) -> dict[str, str]:
    attributes = {"mcp.method.name": method, "jsonrpc.request.id": str(request_id)}
    target = jsonrpc.field(params, "uri" if method == "resources/read" else "name")
    if method in _TARGETS and isinstance(target, str):
        attributes[_TARGETS[method]] = target
    if method == "tools/call":
        attributes["gen_ai.operation.name"] = "execute_tool"
    return attributes


def _error_of(message: jsonrpc.Message) -> str | None:
    """What went wrong in an answer (None: nothing): its JSON-RPC error code, or ``tool_error``."""
    error = message.get("error")
    if error is not None:
        return str(jsonrpc.field(error, "code"))
    return "tool_error" if jsonrpc.field(message.get("result"), "isError") is True else None


def _finish(span: Span, error: str | None) -> None:
    if span.is_recording() and error is not None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error)
        if error.lstrip("-").isdigit():
            span.set_attribute("rpc.response.status_code", error)
        span.set_status(Status(StatusCode.ERROR, error))
    span.end()


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr, formatter=lambda span: span.to_json(indent=None) + "\n")
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # pyright: ignore
        except ImportError:
            raise ConfigError(f"OTEL_TRACES_EXPORTER=otlp needs {EXTRA_HINT}") from None
        return OTLPSpanExporter()  # pyright: ignore
    raise ConfigError(f"OTEL_TRACES_EXPORTER={name!r}: lazymcp makes {' or '.join(EXPORTERS)} traces")
