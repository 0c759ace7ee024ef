"""Hostile-input fuzzing: ``python -m bench.fuzz --cases N [--seed S] [--targets router,serve,proxy] [--json FILE]``.

Four targets, one set of invariants (STYLE §7, spec/lazy-tools.md §12):

- ``router``: the proxy's sans-IO ``Router`` in-process, between a recording client and ``ModelUpstream``,
  a well-behaved MCP server that answers every request it gets once (and, like the SDK, never answers
  one cancelled before it was answered). A case is a fresh router in one of three situations (2025-11-25
  session, 2026-07-28 client and server, 2026 client bridged to a 2025 server), a few hostile client
  frames interleaved with upstream answers and upstream notifications, then a settle and a barrier.
- ``upstream``: the ``Router`` behind a hostile upstream (a ``tools/list`` cursor that never ends or
  loops, duplicate or unserializable tools, requests to the client never answered or cancelled by the
  server itself, a call never answered), in simulated time: every client request gets one answer
  within the timeout, listings stop, and a bad tool is quarantined rather than fatal.
- ``serve``: a live ``lazymcp serve`` process over its stdio pipes.
- ``proxy``: a live ``lazymcp proxy -- lazymcp serve`` process over its stdio pipes.
  For the live targets a case is one frame; frames go in batches, each followed by a barrier.

The invariants: nothing raises and no process exits; every valid request id (JSON-RPC 2.0 request,
integer or string id) gets exactly one response carrying that id, a cancelled one at most one, and a
frame nested past the parser's depth limit its own response or a parse error; no response for an id
never sent; no internal error (-32603, or the SDK's code 0 for a handler that raised) and, for the
lazy-tools methods, no error but -32602 (LT-13); an invalid frame (not JSON, not an object, bad
method or id) gets a JSON-RPC error with a null id; and after every case the target still answers a
``ping`` and a ``tools/describe`` correctly.

Each violation is reported with its frames, and checked against ``KNOWN``, the bugs already filed from
this fuzzing; the run exits with status 1 when a violation matches no known bug. Cases are seeded
(``--seed``) and each router case reproduces alone from ``(seed, case)`` (``--replay CASE``).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import orjson

from lazymcp.core.actions import Fail, ToClient, ToServer
from lazymcp.core.entries import ServerEntry
from lazymcp.core.proxy import Proxy
from lazymcp.surfaces.options import Options
from lazymcp.tools.sample import sample_tools

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
EXT_ID = "io.lazymcp/lazy-tools"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
LAZY_METHODS = frozenset({"tools/list", "tools/describe", "tools/describe_batch"})
INTERNAL_CODES = frozenset({-32603, 0})
"""-32603 Internal error; 0 is what the SDK answers when a handler raises (``jsonrpc_dispatcher``)."""
SDK_DEPTH_LIMIT = 200
"""Nesting (containers, the frame included) past which the SDK's JSON parser refuses a frame."""
ROUTER_DEPTH_LIMIT = 1024
"""The same for orjson, the proxy's parser."""
ENCODE_DEPTH_LIMIT = 254
"""orjson refuses to serialize values nested deeper than this."""
OWN_ID_PREFIX = "lazymcp-"
"""The proxy's own request ids (``lazymcp.core.upstream.Upstream._own``)."""
UPSTREAM = "upstream"


def running_proxy(options: Options, **settings: Any) -> Proxy:
    """The proxy's sans-IO core over a server that runs (its actions are the caller's to carry out)."""
    core = Proxy(ServerEntry(UPSTREAM, command=("server",)), options, **settings)
    core.started(UPSTREAM, 0.0)
    return core


Era = Literal["legacy", "modern", "bridged"]
ERAS: tuple[Era, ...] = ("legacy", "modern", "bridged")


def modern_meta(*, declared: bool = False) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {EXT_ID: {}}} if declared else {}
    return {
        PROTOCOL_VERSION_KEY: MODERN,
        CLIENT_INFO_KEY: {"name": "fuzz", "version": "1"},
        CLIENT_CAPABILITIES_KEY: capabilities,
    }


def initialize_params(*, declared: bool = False) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {EXT_ID: {}}} if declared else {}
    return {"protocolVersion": LEGACY, "capabilities": capabilities, "clientInfo": {"name": "fuzz", "version": "1"}}


def frame(message: Any) -> bytes:
    """One message as a line (no newline). ``json``, not orjson: it writes any depth and lone surrogates."""
    return json.dumps(message, separators=(",", ":")).encode()


def request(request_id: object, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return frame(message)


def notification(method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return frame(message)


def deep_request(request_id: object, method: str, depth: int) -> bytes:
    """A request whose params hold a value nested ``depth`` arrays deep (built as text: any depth)."""
    head = request(request_id, method, {"x": "@"})
    return head.replace(b'"@"', b"[" * depth + b'"x"' + b"]" * depth)


def depth_of(value: Any) -> int:
    """Containers on the deepest path of a JSON value (iterative: any depth)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in node.values())
        elif isinstance(node, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in node)
    return deepest


def id_key(request_id: object) -> tuple[str, object]:
    """A hashable key that keeps ``1`` and ``"1"`` apart (unhashable ids are keyed by their JSON)."""
    if isinstance(request_id, list | dict):
        return (type(request_id).__name__, json.dumps(request_id, sort_keys=True))
    return (type(request_id).__name__, request_id)


def valid_id(request_id: object) -> bool:
    return (
        isinstance(request_id, int) and not isinstance(request_id, bool) and -(2**63) <= request_id < 2**63
    ) or isinstance(request_id, str)


# --- what a frame asks for ----------------------------------------------------------------------

Kind = Literal["request", "deep", "notification", "response", "invalid", "blank"]


@dataclass
class Frame:
    """A client frame and what the target owes for it."""

    data: bytes
    kind: Kind
    message: Any = None
    request_id: object = None
    method: str | None = None
    cancelled: bool = False

    @property
    def key(self) -> tuple[str, object]:
        return id_key(self.request_id)

    def brief(self, limit: int = 300) -> str:
        text = self.data[:limit].decode("utf-8", "backslashreplace")
        return text + (f"... ({len(self.data):,} bytes)" if len(self.data) > limit else "")


def classify(data: bytes) -> Frame:
    """What a frame is, by the strict parser (orjson: RFC 8259, no lone surrogates).

    A ``request`` has ``jsonrpc: "2.0"``, a string ``method``, an integer or string ``id``, and params
    absent, null, or structured (JSON-RPC 2.0 allows arrays; MCP only objects, but the request is still
    owed an answer, an error). A ``deep`` request is nested past the SDK parser's limit: it is owed its
    answer or a parse error.
    """
    if not data.strip():
        return Frame(data, "blank")  # no message at all: nothing is owed
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError:
        return Frame(data, "invalid", request_id=_lenient_id(data))
    if not isinstance(message, dict):
        return Frame(data, "invalid", message)
    if "method" not in message:
        return Frame(data, "response", message)
    method = message["method"]
    if "id" not in message:
        return Frame(data, "notification", message, method=method if isinstance(method, str) else None)
    request_id = message["id"]
    if not isinstance(method, str) or not valid_id(request_id):
        return Frame(data, "invalid", message)
    if message.get("jsonrpc") != "2.0":
        return Frame(data, "invalid", message, request_id, method)  # may be answered with its id or null
    params = message.get("params")
    if params is not None and not isinstance(params, dict | list):
        return Frame(data, "invalid", message, request_id, method)
    kind: Kind = "deep" if depth_of(message) > SDK_DEPTH_LIMIT else "request"
    return Frame(data, kind, message, request_id, method)


def _lenient_id(data: bytes) -> object:
    """The id a lenient reader would find in a frame the strict parser refuses (None when there is none).

    Python's json (lone surrogates) after a replacing UTF-8 decode (as the SDK's stdio reader does)
    may still read a request there; the target may answer it by that id, or with a parse error.
    """
    try:
        message = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and isinstance(message.get("method"), str) and valid_id(message.get("id")):
        return message["id"]
    return None


# --- known bugs ---------------------------------------------------------------------------------

KNOWN: dict[str, str] = {
    "router-unhashable-id": (
        "Router.from_client raises TypeError (unhashable type) on a notifications/cancelled whose requestId is an "
        "array or object while any request is in flight, and on a client response whose id is an array or object "
        "while a server request to the client is pending; Router.from_server the same on an upstream response whose "
        "id is an array or object (id_key() makes a tuple holding the list, used as a dict key). In the live "
        "proxy the exception escapes _Lines.data_received: every later line of the same read is dropped, so the "
        "requests in it are never answered."
    ),
    "own-id-collision": (
        "A client request id 'lazymcp-N' is taken for the proxy's own pending request of that id, when the upstream "
        "answers the client's first: during the first catalog fetch the answer fails the router (every later "
        "request gets -32000, yet the proxy does not exit); during a refetch it is consumed as the catalog and the "
        "client gets the upstream's tools/list result instead. A client's notifications/cancelled for 'lazymcp-N' "
        "cancels the proxy's own tools/list, which the SDK then never answers: the proxy fails at its timeout."
    ),
    "bridge-deep-params": (
        "A bridged Router (2026 client, 2025 upstream) raises orjson.JSONEncodeError (Recursion limit reached) "
        "re-encoding a forwarded request whose params nest deeper than 254 levels."
    ),
    "sdk-drops-frames": (
        "lazymcp serve (the SDK's stdio transport) silently drops every frame its JSON-RPC model refuses: a "
        "request whose params is not an object (spec §12 wants -32602 field 'params'), one nested past ~200 "
        "levels, one holding a lone surrogate, and any line that is not JSON (no -32700): a request with a valid "
        "id gets no answer at all, so its client waits forever."
    ),
    "router-method-null": (
        'Minor (JSON-RPC compliance, nothing hangs): the Router takes a frame with "method": null for the '
        "client's answer to a server request and forwards it upstream, where JSON-RPC 2.0 wants -32600 with a null id."
    ),
    "proxy-dies-on-dropped-request": (
        "Through lazymcp proxy, a request its SDK upstream silently drops (see sdk-drops-frames) is forwarded and "
        "never answered; after --timeout the proxy declares the upstream hung, fails every request and exits 1."
    ),
}


def sdk_refuses(data: bytes) -> bool:
    """Would the SDK's stdio transport drop this line (it validates with its JSON-RPC model)?"""
    import mcp_types as types

    text = data.decode("utf-8", "replace")
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception:
        return True
    return not isinstance(message, types.JSONRPCRequest) and "id" in (classify(data).message or {})


def refused_by(target: str, data: bytes) -> bool:
    """Does a known bug keep ``target`` from answering this frame?"""
    return target in ("serve", "proxy") and sdk_refuses(data)


def triggers_known(target: str, data: bytes) -> bool:
    """Would this frame bring a live proxy down through a known bug (so a run skips it by default)?"""
    if target != "proxy":
        return False
    item = classify(data)
    message = item.message if isinstance(item.message, dict) else {}
    params = message.get("params")
    cancelled = params.get("requestId") if isinstance(params, dict) else None
    own = [value for value in (message.get("id"), cancelled) if isinstance(value, str)]
    unhashable = (message.get("method") == "notifications/cancelled" and isinstance(cancelled, list | dict)) or (
        message.get("method") is None and isinstance(message.get("id"), list | dict)
    )
    return sdk_refuses(data) or unhashable or any(value.startswith(OWN_ID_PREFIX) for value in own)


def known_bug(target: str, frames: Sequence[Frame], violation: str, era: str | None = None) -> str | None:
    """The known bug a violation comes from, judged by the frames that caused it; None when it is new.

    A violation is put down to a known bug when one of its frames triggers that bug on this target,
    whatever the violation's kind (a raise also leaves its request unanswered, and so on).
    """
    for item in frames:
        message = item.message if isinstance(item.message, dict) else {}
        params = message.get("params")
        cancelled = params.get("requestId") if isinstance(params, dict) else None
        is_cancel = message.get("method") == "notifications/cancelled"
        if target in ("router", "proxy") and is_cancel and isinstance(cancelled, list | dict):
            return "router-unhashable-id"
        if (
            target in ("router", "proxy")
            and message.get("method") is None
            and isinstance(message.get("id"), list | dict)
        ):
            return "router-unhashable-id"  # a client response: the router looks up the server request it answers
        own = [value for value in (message.get("id"), cancelled if is_cancel else None) if isinstance(value, str)]
        if target != "serve" and any(value.startswith(OWN_ID_PREFIX) for value in own):
            return "own-id-collision"
        if target != "serve" and "method" in message and message["method"] is None and "id" in message:
            return "router-method-null"
        if target == "router" and era == "bridged" and depth_of(message) > ENCODE_DEPTH_LIMIT:
            return "bridge-deep-params"
        if target == "serve" and violation in ("lost", "invalid unanswered") and sdk_refuses(item.data):
            return "sdk-drops-frames"
        if target == "proxy" and sdk_refuses(item.data):
            return "proxy-dies-on-dropped-request"
    return None


# --- the ledger: what was owed, what came back --------------------------------------------------


@dataclass
class Violation:
    kind: str
    detail: str
    frames: list[str]
    known: str | None = None


@dataclass
class Ledger:
    """Requests owed an answer and the answers that came back, for one target."""

    owed: dict[tuple[str, object], Frame] = field(default_factory=lambda: {})
    answers: Counter[tuple[str, object]] = field(default_factory=lambda: Counter())
    null_errors: int = 0
    violations: list[tuple[str, str, list[Frame]]] = field(default_factory=lambda: [])
    barrier_answers: dict[tuple[str, object], Any] = field(default_factory=lambda: {})

    def sent(self, item: Frame) -> None:
        if item.kind in ("request", "deep") or (item.kind == "invalid" and item.request_id is not None):
            if item.key in self.owed:
                raise ValueError(f"the client reused request id {item.request_id!r}: answers could not be told apart")
            self.owed[item.key] = item

    def cancel(self, request_id: object) -> None:
        """A cancelled request owes at most one answer; so does its twin (``5`` for ``"5"``), since the SDK
        correlates a cancellation with either spelling."""
        twins = [request_id]
        if isinstance(request_id, int) and not isinstance(request_id, bool):
            twins.append(str(request_id))
        elif isinstance(request_id, str) and request_id.lstrip("-").isdecimal():
            twins.append(int(request_id))
        for twin in twins:
            owed = self.owed.get(id_key(twin))
            if owed is not None:
                owed.cancelled = True

    def received(self, line: bytes) -> None:
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:
                message = json.loads(line)
            except ValueError:
                self.violations.append(("bad output", f"a line that is not JSON: {line[:200]!r}", []))
                return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.violations.append(("bad output", f"not a JSON-RPC 2.0 message: {line[:200]!r}", []))
            return
        if "method" in message:
            return  # a notification, or a request from the server to the client
        has_result, has_error = "result" in message, "error" in message
        if has_result == has_error:
            self.violations.append(("bad output", f"a response with neither or both result/error: {line[:200]!r}", []))
            return
        request_id = message.get("id")
        if request_id is None:
            self.null_errors += 1
            return
        key = id_key(request_id)
        if isinstance(request_id, str) and request_id.startswith("barrier-"):
            self.barrier_answers[key] = message
            return
        item = self.owed.get(key)
        if item is None:
            self.violations.append(("unexpected", f"a response for an id never sent: {line[:200]!r}", []))
            return
        self.answers[key] += 1
        if self.answers[key] == 2:
            self.violations.append(("duplicate", f"a second response for id {request_id!r}", [item]))
        code = message["error"].get("code") if has_error and isinstance(message["error"], dict) else None
        if code in INTERNAL_CODES:
            self.violations.append(("internal error", f"error {code} for id {request_id!r}: {line[:300]!r}", [item]))
        elif code is not None and item.method in LAZY_METHODS and code not in (-32602, -32600, -32000):
            self.violations.append(("not -32602", f"error {code} for {item.method}: {line[:300]!r}", [item]))

    def missing(self) -> list[Frame]:
        """Owed requests with no answer yet (cancelled ones owe nothing)."""
        return [
            item
            for key, item in self.owed.items()
            if not item.cancelled and self.answers[key] == 0 and item.method != "subscriptions/listen"
        ]

    def awaited(self, target: str) -> bool:
        """Has every request that the target is expected to answer by id been answered?"""
        return not any(item.kind == "request" and not refused_by(target, item.data) for item in self.missing())

    def close(self, frames: Sequence[Frame]) -> None:
        """Judge the frames of a finished case: the lost ones, and invalid frames left without an error."""
        lost = self.missing()
        deep_unanswered = [item for item in lost if item.kind in ("deep", "invalid")]
        for item in lost:
            if item.kind == "request":
                self.violations.append(("lost", f"no response for id {item.request_id!r} ({item.method})", [item]))
        invalid = [item for item in frames if item.kind == "invalid" and item.request_id is None]
        expected_null = len(invalid) + len(deep_unanswered)
        if self.null_errors < expected_null:
            culprits = [*invalid, *deep_unanswered]
            detail = f"{expected_null - self.null_errors} of {expected_null} invalid frames got no JSON-RPC error"
            self.violations.append(("invalid unanswered", detail, culprits))
        for item in deep_unanswered:
            if self.null_errors == 0:
                self.violations.append(("lost", f"no response nor parse error for deep id {item.request_id!r}", [item]))
        self.owed.clear()
        self.answers.clear()
        self.null_errors = 0


# --- the model upstream -------------------------------------------------------------------------


class ModelUpstream:
    """A well-behaved MCP server behind the router: answers each request once, in arrival order.

    As the SDK does, it never answers a request cancelled before it was answered, and it keeps a
    ``subscriptions/listen`` request open (a stream). ``era`` is the protocol it speaks; with ``tools``
    None it is a server without tools (``tools/list`` is -32601, as the SDK answers it then).
    """

    def __init__(self, era: Literal["legacy", "modern"], tools: list[dict[str, Any]] | None) -> None:
        self.era = era
        self.tools = tools
        self.queue: deque[dict[str, Any]] = deque()
        self.bad_lines: list[bytes] = []

    def receive(self, line: bytes) -> None:
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            self.bad_lines.append(line)
            return
        if not isinstance(message, dict):
            self.bad_lines.append(line)
            return
        method = message.get("method")
        if method == "notifications/cancelled":
            params = message.get("params")
            cancelled = params.get("requestId") if isinstance(params, dict) else None
            self.queue = deque(m for m in self.queue if id_key(m.get("id")) != id_key(cancelled))
        elif isinstance(method, str) and "id" in message:
            if method == "subscriptions/listen" and self.era == "modern":
                return  # a stream: answered only when it ends
            self.queue.append(message)

    def answer_next(self) -> bytes | None:
        if not self.queue:
            return None
        message = self.queue.popleft()
        request_id, method, params = message["id"], message["method"], message.get("params")
        if params is not None and not isinstance(params, dict):
            return frame({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "Invalid params"}})
        result = self._result(method, params or {})
        if result is None:
            return frame({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})
        return frame({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _result(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        info = {"name": "model", "version": "1"}
        capabilities = {"resources": {}} if self.tools is None else {"tools": {"listChanged": True}}
        if method == "initialize":
            return {"protocolVersion": LEGACY, "capabilities": capabilities, "serverInfo": info}
        if method == "server/discover":
            if self.era == "legacy":
                return None
            return {"supportedVersions": [MODERN], "capabilities": capabilities, "ttlMs": 0}
        if method == "tools/list":
            return None if self.tools is None else {"tools": self.tools}
        if method == "resources/list":
            return {"resources": []}
        if method == "tools/call":
            return {"content": [{"type": "text", "text": json.dumps(params.get("arguments"))[:200]}]}
        if method == "subscriptions/listen":
            return None
        return {}


# --- the router harness -------------------------------------------------------------------------


def router_tools() -> list[dict[str, Any]]:
    tools = sample_tools()[:12]
    tools.append({"name": "odd schema", "inputSchema": {"$ref": "#/nowhere"}})
    tools.append({"name": "échec", "description": "x" * 400, "inputSchema": {"type": "object"}})
    return tools


class RouterHarness:
    """The proxy's core between a recording client and a ``ModelUpstream``, carried out as its driver
    would (a ``Fail`` answers every request owed and ends the upstream)."""

    def __init__(self, era: Era = "legacy", options: Options | None = None, *, timeout: float = 60.0) -> None:
        self.era = era
        self.router = running_proxy(options or Options(), timeout=timeout)
        self.upstream = ModelUpstream("modern" if era == "modern" else "legacy", router_tools())
        self.ledger = Ledger()
        self.now = 0.0
        self.raised: list[tuple[str, bytes, BaseException]] = []
        self.failure: str | None = None
        self.frames: list[Frame] = []
        self.received: list[bytes] = []
        """Every line the client got, in order."""
        self.declared = False
        self._barriers = 0

    # carrying out

    def _carry_out(self, actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, ToClient):
                self.received.append(action.data)
                self.ledger.received(action.data)
            elif isinstance(action, ToServer):
                if self.failure is None:
                    self.upstream.receive(action.data)
            elif isinstance(action, Fail):
                self.fail(action.reason)
                return

    def fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
            self._carry_out(self.router.interrupt(reason, self.now))

    def client(self, data: bytes, *, track: bool = True) -> list[Any]:
        """Hand the router one client line; returns its actions (also carried out)."""
        item = classify(data)
        if track:
            self.frames.append(item)
        self.ledger.sent(item)
        if item.kind == "notification" and item.method == "notifications/cancelled":
            params = item.message.get("params")
            if isinstance(params, dict) and "requestId" in params:
                self.ledger.cancel(params["requestId"])
        try:
            actions = self.router.from_client(data, self.now)
        except Exception as exc:  # the invariant under test: it never raises
            self.raised.append(("from_client", data, exc))
            return []
        self._carry_out(actions)
        return actions

    def server(self, data: bytes) -> None:
        """Hand the router one upstream line."""
        if self.failure is not None:
            return
        try:
            actions = self.router.from_server(UPSTREAM, data, self.now)
        except Exception as exc:
            self.raised.append(("from_server", data, exc))
            return
        self._carry_out(actions)

    def step(self, count: int = 1) -> None:
        for _ in range(count):
            answer = self.upstream.answer_next()
            if answer is None:
                return
            self.server(answer)

    def settle(self, limit: int = 10_000) -> None:
        for _ in range(limit):
            if not self.upstream.queue or self.failure is not None:
                return
            self.step()

    def tick(self, seconds: float) -> None:
        self.now += seconds
        try:
            self._carry_out(self.router.expire(self.now))
        except Exception as exc:
            self.raised.append(("expire", b"", exc))

    # the conversation

    def meta(self) -> dict[str, Any]:
        return modern_meta(declared=self.declared)

    def handshake(self, *, declared: bool = False) -> None:
        self.declared = declared
        if self.era == "legacy":
            self.client(request("init-1", "initialize", initialize_params(declared=declared)), track=False)
            self.settle()
            self.client(notification("notifications/initialized"), track=False)
        else:
            self.client(request("init-1", "tools/list", {"_meta": self.meta()}), track=False)
        self.settle()

    def barrier(self) -> Any:
        """A ping and a describe of a known tool: the router must still serve (returns what is wrong, or None)."""
        self._barriers += 1
        params: dict[str, Any] = {"name": "issues_get"}
        ping: dict[str, Any] = {}
        if self.era != "legacy":
            params["_meta"] = ping["_meta"] = self.meta()
        ping_id, describe_id = f"barrier-{self._barriers}-ping", f"barrier-{self._barriers}-describe"
        self.client(request(ping_id, "ping", ping), track=False)
        self.client(request(describe_id, "tools/describe", params), track=False)
        self.settle()
        got_ping = self.ledger.barrier_answers.get(id_key(ping_id))
        got_describe = self.ledger.barrier_answers.get(id_key(describe_id))
        if self.failure is not None or self.router.upstream.failed is not None:
            return None  # a failed upstream answers everything with -32000: judged as "failed"
        if got_ping is None or "result" not in got_ping:
            return f"ping after the case: {got_ping!r}"
        if got_describe is None or (got_describe.get("result") or {}).get("tool", {}).get("name") != "issues_get":
            return f"tools/describe after the case: {str(got_describe)[:300]}"
        return None

    def judge(self) -> list[Violation]:
        """Close the case: settle, check the barrier, and turn every broken invariant into a violation."""
        self.settle()
        problems: list[tuple[str, str, list[Frame]]] = []
        for where, data, exc in self.raised:
            culprit = [f for f in self.frames if f.data == data] or [classify(data)]
            problems.append(("raised", f"{where} raised {type(exc).__name__}: {exc}", culprit))
        failed = self.failure or self.router.upstream.failed
        if failed is not None:
            problems.append(("failed", f"a well-behaved upstream was failed: {failed}", self.frames))
        if self.upstream.bad_lines:
            problems.append(("bad upstream line", repr(self.upstream.bad_lines[0][:200]), self.frames))
        self.ledger.close(self.frames)
        problems.extend(self.ledger.violations)
        broken = self.barrier()
        if broken is not None:
            problems.append(("stopped serving", broken, self.frames))
        violations: list[Violation] = []
        for kind, detail, frames in problems:
            frames = frames or self.frames
            known = known_bug("router", frames, kind, self.era)
            violations.append(Violation(kind, detail, [f.brief() for f in frames], known))
        return violations


# --- hostile frames, random-driven --------------------------------------------------------------

KNOWN_NAMES = [tool["name"] for tool in router_tools()]
TEXTS = [
    "",
    " ",
    "a",
    "issues_get",
    "ISSUES_GET",
    "issues_gte",
    "describe_tools",
    "\u0000",
    "é",
    "🙂",
    "\u202e",
    "a\nb",
]
METHODS = [
    "tools/list",
    "tools/describe",
    "tools/describe_batch",
    "tools/call",
    "ping",
    "resources/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "initialize",
    "server/discover",
    "nope/nope",
    "",
    "tools/",
    "TOOLS/LIST",
]
NOTIFICATIONS = [
    "notifications/cancelled",
    "notifications/progress",
    "notifications/initialized",
    "notifications/roots/list_changed",
    "notifications/message",
    "notifications/tools/list_changed",
    "x",
]


class Hostile:
    """Random hostile frames; every id it hands out is new (``fresh_id``), so owing stays countable."""

    def __init__(self, rng: random.Random, *, big: bool = True) -> None:
        self.rng = rng
        self.big = big
        self.sent_ids: list[object] = []
        self._used: set[tuple[str, object]] = set()
        self._count = 0

    def fresh_id(self) -> object:
        rng = self.rng
        for _ in range(20):
            candidate = rng.choice(
                [
                    rng.randint(0, 1000),
                    rng.randint(-(2**63), 2**63 - 1),
                    2**63 - 1,
                    -(2**63),
                    0,
                    -1,
                    str(rng.randint(0, 1000)),
                    "",
                    "🙂",
                    "id with spaces",
                    "x" * rng.randint(100, 2000),
                    *([f"{OWN_ID_PREFIX}{rng.randint(1, 3)}"] if rng.random() < 0.02 else []),
                ]
            )
            if id_key(candidate) not in self._used:
                break
        else:
            self._count += 1
            candidate = f"fresh-{self._count}"
        self._used.add(id_key(candidate))
        self.sent_ids.append(candidate)
        return candidate

    def text(self) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.5:
            return rng.choice(TEXTS + KNOWN_NAMES)
        if roll < 0.8:
            return "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0x80, 0x2FFF)])) for _ in range(20))
        if roll < 0.97 or not self.big:
            return "n" * rng.choice([255, 256, 257, 1000])
        return "h" * rng.choice([100_000, 1_000_000])

    def value(self, depth: int = 3) -> Any:
        rng = self.rng
        roll = rng.random()
        if depth <= 0 or roll < 0.45:
            return rng.choice(
                [
                    None,
                    True,
                    False,
                    0,
                    -1,
                    2**53 + 1,
                    2**64,
                    -(2**70),
                    0.5,
                    -0.0,
                    1e308,
                    self.text(),
                    self.text(),
                ]
            )
        if roll < 0.7:
            return [self.value(depth - 1) for _ in range(rng.randint(0, 4))]
        keys = ["lazy", "detail", "cursor", "name", "names", "arguments", "_meta", "", "__proto__", "a"]
        return {rng.choice(keys + [self.text()]): self.value(depth - 1) for _ in range(rng.randint(0, 4))}

    def names(self) -> list[Any]:
        rng = self.rng
        count = rng.choice([0, 1, 2, 99, 100, 101, 1000, 5000] if self.big else [0, 1, 2, 99, 100, 101])
        pool = KNOWN_NAMES + ["nope", ""]
        if rng.random() < 0.1:
            return [self.value(1) for _ in range(min(count, 5))]
        if rng.random() < 0.3:
            return [f"unknown_{i}" for i in range(count)]
        return [rng.choice(pool) for _ in range(count)]

    def params(self, method: str) -> Any:
        rng = self.rng
        roll = rng.random()
        if roll < 0.08:
            return rng.choice([[1], "params", 5, True, [], [{"name": "issues_get"}]])
        params: dict[str, Any]
        if method == "tools/list":
            params = {}
            for key, choices in (
                ("lazy", [True, False, None, "true", 0, 1]),
                ("detail", ["name", "summary", "description", "full", "", None, 5, ["name"]]),
                ("cursor", ["", "0", "abc", "0000000000000000.0", "ffffffffffffffff.99999", "x" * 300, 5, None]),
            ):
                if rng.random() < 0.5:
                    params[key] = rng.choice(choices)
        elif method == "tools/describe":
            params = {"name": self.text() if rng.random() < 0.8 else self.value()}
        elif method == "tools/describe_batch":
            params = {"names": self.names() if rng.random() < 0.85 else self.value()}
        elif method == "tools/call":
            name = rng.choice([*KNOWN_NAMES, "describe_tools", "search_tools", "nope", self.text()])
            arguments: Any = self.value()
            if name == "describe_tools" and rng.random() < 0.6:
                arguments = {"names": self.names()}
            params = {"name": name if rng.random() < 0.9 else self.value(), "arguments": arguments}
        else:
            params = self.value() if rng.random() < 0.5 else {}
            if not isinstance(params, dict):
                params = {"value": params}
        if rng.random() < 0.3:
            params["junk"] = self.value()
        if rng.random() < 0.2:
            params["_meta"] = rng.choice([modern_meta(), modern_meta(declared=True), {"progressToken": 1}, 5, None])
        return params

    def message(self, era: Era = "legacy") -> bytes:
        """One hostile client frame."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.55:
            method = rng.choice(METHODS[:4] * 3 + METHODS)
            params = self.params(method)
            if era != "legacy" and isinstance(params, dict) and "_meta" not in params and rng.random() < 0.9:
                params["_meta"] = modern_meta(declared=rng.random() < 0.5)
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.fresh_id(), "method": method}
            if params is not None:
                message["params"] = params
            return frame(message)
        if roll < 0.68:
            method = rng.choice(NOTIFICATIONS)
            if method == "notifications/cancelled":
                target = rng.choice(self.sent_ids) if self.sent_ids and rng.random() < 0.7 else self.value(1)
                return notification(method, {"requestId": target, "reason": "fuzz"})
            return notification(method, self.value(2) if rng.random() < 0.5 else None)
        if roll < 0.75:
            value = self.value()
            return frame(value)
        if roll < 0.8:  # a malformed request: bad id, method or jsonrpc member
            message = {"jsonrpc": rng.choice(["2.0", "1.0", 2.0, None]), "method": rng.choice(["ping", 5, None, []])}
            message["id"] = rng.choice([1.5, True, None, [1], {"a": 1}, self.fresh_id()])
            return frame(message)
        if roll < 0.86:  # deep nesting
            depth = rng.choice([10, 100, 197, 198, 199, 200, 253, 254, 255, 300, 1000, 1022, 1023, 1100])
            return deep_request(self.fresh_id(), rng.choice(["ping", "tools/describe", "tools/list"]), depth)
        if roll < 0.9:  # a client's answer to a server request, or a stray response
            return frame({"jsonrpc": "2.0", "id": self.fresh_id(), "result": self.value(1)})
        return self.raw()

    def raw(self) -> bytes:
        """Bytes that are not a JSON-RPC frame: garbage, invalid UTF-8, truncated JSON, a BOM, a batch."""
        rng = self.rng
        ping = request(self.fresh_id(), "ping")
        choices = [
            bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 60))).replace(b"\n", b" "),
            b"\xff\xfe\xfd",
            request(self.fresh_id(), "tools/describe", {"name": "@"}).replace(b'"@"', b'"\xff\xfe"'),
            ping[: rng.randint(1, len(ping) - 1)],
            b"\xef\xbb\xbf" + ping,
            b"[" + ping + b"," + request(self.fresh_id(), "ping") + b"]",
            b"null",
            b"\x00" * 10,
            b"\r",
            request(self.fresh_id(), "ping", {"s": "\ud800"}),
            b"NaN",
        ]
        return rng.choice(choices)


def run_router_case(seed: int, case: int, *, verbose: bool = False) -> tuple[list[Violation], list[bytes]]:
    """One router case, reproducible from (seed, case): returns its violations and the frames sent."""
    rng = random.Random(f"{seed}:{case}")
    era = rng.choice(ERAS)
    options = Options(
        stock_default=rng.choice(["lazy", "eager"]),
        page_size=rng.choice([None, 3]),
        describe_batch_max=rng.choice([100, 5]),
    )
    harness = RouterHarness(era, options, timeout=60.0)
    harness.handshake(declared=rng.random() < 0.5)
    hostile = Hostile(rng, big=rng.random() < 0.1)
    sent: list[bytes] = []
    for _ in range(rng.randint(1, 6)):
        data = hostile.message(era)
        sent.append(data)
        if verbose:
            print(f"  client: {data[:300]!r}")
        harness.client(data)
        for _ in range(rng.randint(0, 2)):
            roll = rng.random()
            if roll < 0.6:
                harness.step(rng.randint(1, 3))
            elif roll < 0.7:
                harness.server(notification("notifications/tools/list_changed"))
            elif roll < 0.8:
                harness.server(request(f"s-{rng.randint(0, 99)}", "sampling/createMessage", {"messages": []}))
            elif roll < 0.9:
                harness.server(notification("notifications/progress", {"progressToken": 1, "progress": 0.5}))
            else:
                harness.tick(rng.choice([0.1, 1.0]))
    return harness.judge(), sent


# --- live targets -------------------------------------------------------------------------------


class LivePeer:
    """A raw JSON-RPC client on a live process's stdio: frames in, each answer routed into a ``Ledger``."""

    def __init__(self, command: Sequence[str]) -> None:
        self.command = list(command)
        self.ledger = Ledger()
        self.process: anyio.abc.Process | None = None
        self.exited: int | None = None
        self.stderr = bytearray()
        self._lines = 0
        self._arrived = anyio.Event()

    async def start(self, group: anyio.abc.TaskGroup) -> None:
        self.process = await anyio.open_process(self.command)
        group.start_soon(self._read)
        group.start_soon(self._read_stderr)

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        pending: list[bytes] = []
        try:
            async for chunk in self.process.stdout:
                while b"\n" in chunk:
                    head, chunk = chunk.split(b"\n", 1)
                    pending.append(head)
                    self._line(b"".join(pending))
                    pending = []
                if chunk:
                    pending.append(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        self.exited = await self.process.wait()
        self._arrived.set()

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        try:
            async for chunk in self.process.stderr:
                self.stderr.extend(chunk[-4000:])
                del self.stderr[:-8000]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _line(self, line: bytes) -> None:
        if line.strip():
            self.ledger.received(line)
            self._lines += 1
            self._arrived.set()

    async def send(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        await self.process.stdin.send(data + b"\n")

    async def wait_for(self, predicate: Callable[[], bool], within: float) -> bool:
        """Wait (bounded) until ``predicate()`` holds; False on timeout or when the process has exited."""
        with anyio.move_on_after(within):
            while not predicate():
                if self.exited is not None:
                    return predicate()
                self._arrived = anyio.Event()
                await self._arrived.wait()
            return True
        return predicate()

    async def close(self, grace: float = 5.0) -> None:
        """Close its stdin and give it ``grace`` seconds to exit, then kill it (shielded: safe after a timeout)."""
        if self.process is None:
            return
        with anyio.CancelScope(shield=True):
            if self.process.stdin is not None:
                await self.process.stdin.aclose()
            with anyio.move_on_after(grace):
                await self.process.wait()
            if self.process.returncode is None:
                self.process.kill()
            await self.process.aclose()


async def handshake(peer: LivePeer, within: float = 30.0) -> bool:
    await peer.send(request("barrier-init", "initialize", initialize_params()))
    if not await peer.wait_for(lambda: id_key("barrier-init") in peer.ledger.barrier_answers, within):
        return False
    await peer.send(notification("notifications/initialized"))
    return True


async def live_barrier(peer: LivePeer, number: int, within: float) -> str | None:
    """A ping and a describe of a known tool; what is wrong with their answers, or None."""
    ping_id, describe_id = f"barrier-{number}-ping", f"barrier-{number}-describe"
    await peer.send(request(ping_id, "ping"))
    await peer.send(request(describe_id, "tools/describe", {"name": "issues_get"}))
    answers = peer.ledger.barrier_answers
    arrived = await peer.wait_for(lambda: id_key(ping_id) in answers and id_key(describe_id) in answers, within)
    if not arrived:
        return f"no answer to the barrier within {within:g} s (exit status {peer.exited})"
    if "result" not in answers[id_key(ping_id)]:
        return f"ping: {answers[id_key(ping_id)]}"
    if (answers[id_key(describe_id)].get("result") or {}).get("tool", {}).get("name") != "issues_get":
        return f"tools/describe: {str(answers[id_key(describe_id)])[:300]}"
    return None


SERVE = [sys.executable, "-m", "lazymcp", "serve"]


def live_command(target: str, timeout: float) -> list[str]:
    if target == "serve":
        return SERVE
    return [sys.executable, "-m", "lazymcp", "proxy", "--timeout", f"{timeout:g}", "--", *SERVE]


async def run_live(
    target: str, cases: int, seed: int, *, include_known: bool, upstream_timeout: float = 10.0
) -> tuple[int, list[Violation]]:
    """Send ``cases`` hostile frames to a live target in batches, each followed by a barrier."""
    rng = random.Random(f"{seed}:{target}")
    hostile = Hostile(rng, big=False)
    violations: list[Violation] = []
    sent = batches = 0
    while sent < cases:
        async with anyio.create_task_group() as group:
            peer = LivePeer(live_command(target, upstream_timeout))
            await peer.start(group)
            if not await handshake(peer):
                violations.append(Violation("exited", f"no handshake; stderr: {peer.stderr[-500:]!r}", []))
                group.cancel_scope.cancel()
                break
            while sent < cases and peer.exited is None:
                batch: list[Frame] = []
                for _ in range(min(rng.randint(1, 8), cases - sent)):
                    data = hostile.message("legacy")
                    if not include_known and triggers_known(target, data):
                        continue  # it would break the proxy for the rest of the run: see KNOWN
                    item = classify(data)
                    batch.append(item)
                    peer.ledger.sent(item)
                    if item.method == "notifications/cancelled":
                        cancelled = item.message.get("params", {}).get("requestId")
                        peer.ledger.cancel(cancelled)
                    await peer.send(data)
                    sent += 1
                batches += 1
                broken = await live_barrier(peer, batches, within=upstream_timeout + 20)
                await peer.wait_for(lambda ledger=peer.ledger: ledger.awaited(target), 2.0)
                peer.ledger.close(batch)
                problems = list(peer.ledger.violations)
                peer.ledger.violations.clear()
                if broken is not None:
                    kind = "exited" if peer.exited is not None else "stopped serving"
                    problems.append((kind, broken + f"; stderr: {bytes(peer.stderr[-300:])!r}", batch))
                for kind, detail, frames in problems:
                    frames = frames or batch
                    known = known_bug(target, frames, kind)
                    violations.append(Violation(kind, detail, [f.brief() for f in frames], known))
                if broken is not None:
                    break
            await peer.close()
            group.cancel_scope.cancel()
    return sent, violations


# --- the run ------------------------------------------------------------------------------------


def summarize(target: str, cases: int, seconds: float, violations: list[Violation]) -> dict[str, Any]:
    groups: dict[tuple[str, str | None], list[Violation]] = {}
    for violation in violations:
        groups.setdefault((violation.kind, violation.known), []).append(violation)
    return {
        "target": target,
        "cases": cases,
        "seconds": round(seconds, 2),
        "violations": len(violations),
        "unknown": sum(1 for v in violations if v.known is None),
        "groups": [
            {"kind": kind, "known": known, "count": len(items), "first": items[0].detail, "frames": items[0].frames[:4]}
            for (kind, known), items in sorted(groups.items(), key=lambda kv: (kv[0][1] is not None, kv[0][0]))
        ],
    }


def run_router(cases: int, seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    violations: list[Violation] = []
    for case in range(cases):
        found, _ = run_router_case(seed, case)
        for violation in found:
            violation.detail = f"[case {case}] {violation.detail}"
        violations.extend(found)
    return summarize("router", cases, time.perf_counter() - started, violations)


# --- the upstream target: a hostile server in front of the router ----------------------------------

UPSTREAM_MOVES = ("endless-cursor", "looping-cursor", "bad-tools", "ask-never-answered", "ask-then-cancel", "hang")


def run_upstream_case(seed: int, case: int) -> list[Violation]:
    """One hostile upstream behaviour (issue classes: unbounded waits, one bad tool) behind a 2025 router.

    The invariants: nothing raises; every client request gets exactly one answer within the timeout
    (plus one expiry tick) of simulated time; after a bad tool listing, the good tools are served.
    """
    rng = random.Random(f"{seed}:upstream:{case}")
    move = rng.choice(UPSTREAM_MOVES)
    timeout = 10.0
    router = running_proxy(Options(mode="eager"), timeout=timeout, client_timeout=timeout * 2)
    now = 0.0
    answers: Counter[object] = Counter()
    owed: set[object] = set()
    raised: list[str] = []
    to_server: list[dict[str, Any]] = []
    pages = 0

    def carry(actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, ToClient):
                message = json.loads(action.data)
                if "method" not in message:
                    answers[json.dumps(message.get("id"))] += 1
            elif isinstance(action, ToServer):
                to_server.append(json.loads(action.data))
            elif isinstance(action, Fail):
                carry(router.interrupt(action.reason, now))

    def client(message: dict[str, Any]) -> None:
        if "id" in message:
            owed.add(json.dumps(message["id"]))
        try:
            carry(router.from_client(orjson.dumps(message), now))
        except Exception as exc:
            raised.append(f"from_client: {exc!r}")

    def server(message: dict[str, Any]) -> None:
        line = json.dumps(message).encode()  # the stdlib: orjson refuses to write what it reads past depth 254
        try:
            carry(router.from_server(UPSTREAM, line, now))
        except Exception as exc:
            raised.append(f"from_server: {exc!r}")

    def tools_page(cursor: object) -> dict[str, Any]:
        nonlocal pages
        pages += 1
        good = [{"name": f"t{n}", "description": "d", "inputSchema": {"type": "object"}} for n in range(3)]
        if move == "endless-cursor":
            return {"tools": good if cursor is None else [], "nextCursor": f"c{pages}-{rng.random()}"}
        if move == "looping-cursor":
            return {"tools": good if cursor is None else [], "nextCursor": rng.choice(["a", "b"])}
        if move == "bad-tools":
            deep: dict[str, Any] = {"type": "string"}
            for _ in range(rng.randint(260, 400)):
                deep = {"type": "object", "properties": {"x": deep}}
            bad = [{"name": "t0", "inputSchema": {"type": "object"}}, {"name": "deep", "inputSchema": deep}]
            return {"tools": rng.sample(good + bad, len(good) + 2) if rng.random() < 0.3 else good + bad}
        return {"tools": good}

    def upstream_turn() -> None:
        while to_server:
            message = to_server.pop(0)
            method, request_id = message.get("method"), message.get("id")
            if method is None or request_id is None:
                continue
            if method == "initialize":
                server({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": LEGACY, "capabilities": {}}})
            elif method == "tools/list":
                server(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "result": tools_page((message.get("params") or {}).get("cursor")),
                    }
                )
            elif method == "tools/call" and move.startswith("ask"):
                server({"jsonrpc": "2.0", "id": f"ask-{request_id}", "method": "elicitation/create", "params": {}})
                if move == "ask-then-cancel":
                    cancel = {"requestId": f"ask-{request_id}"}
                    server({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
            elif method != "tools/call" or move != "hang":
                server({"jsonrpc": "2.0", "id": request_id, "result": {}})

    client({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()})
    upstream_turn()
    client({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for number in range(1, rng.randint(2, 6)):
        kind = rng.choice(["tools/list", "tools/call", "ping", "resources/list"])
        params = {"name": "t1", "arguments": {}} if kind == "tools/call" else {}
        client({"jsonrpc": "2.0", "id": number, "method": kind, "params": params})
        upstream_turn()
    for _ in range(int(timeout * 4) + 2):  # simulated time: every wait must end
        now += 1.0
        try:
            carry(router.expire(now))
        except Exception as exc:
            raised.append(f"expire: {exc!r}")
        upstream_turn()
    violations = [Violation("raised", detail, [move]) for detail in raised]
    violations += [
        Violation("unanswered" if not answers[key] else "duplicated", f"{move}: id {key}", [move])
        for key in sorted(owed)
        if answers[key] != 1
    ]
    if pages > 1001:
        violations.append(Violation("unbounded", f"{move}: {pages} pages read", [move]))
    if move == "bad-tools" and router.catalog is not None and "t1" not in {t["name"] for t in router.catalog.tools}:
        violations.append(Violation("quarantine", "a bad tool cost the good ones", [move]))
    if move == "bad-tools" and router.upstream.failed is not None:
        violations.append(Violation("quarantine", f"a bad tool failed the upstream: {router.upstream.failed}", [move]))
    return violations


def run_upstream(cases: int, seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    violations: list[Violation] = []
    for case in range(cases):
        for violation in run_upstream_case(seed, case):
            violation.detail = f"[case {case}] {violation.detail}"
            violations.append(violation)
    return summarize("upstream", cases, time.perf_counter() - started, violations)


def report(summary: dict[str, Any]) -> None:
    print(
        f"{summary['target']}: {summary['cases']:,} cases in {summary['seconds']:.1f} s, "
        f"{summary['violations']} violations ({summary['unknown']} not matching a known bug)"
    )
    for group in summary["groups"]:
        label = f"known: {group['known']}" if group["known"] else "NEW"
        print(f"  {group['count']:>6} x {group['kind']} [{label}]: {group['first'][:300]}")
        for item in group["frames"][:2]:
            print(f"           frame: {item[:200]}")


def split_cases(total: int, targets: Sequence[str]) -> Iterator[tuple[str, int]]:
    """The router gets most cases (it is fast); each live target a tenth of them, at least 50."""
    live = [t for t in targets if t not in ("router", "upstream")]
    live_share = {t: max(50, total // 10) for t in live} if "router" in targets else {}
    if "router" not in targets:
        live_share = {t: math.ceil(total / len(live)) for t in live}
    if "router" in targets:
        yield "router", max(1, total - sum(live_share.values()))
    if "upstream" in targets:
        yield "upstream", max(50, total // 20)
    yield from live_share.items()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=20_000, help="total cases over all targets")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", default="router,upstream,serve,proxy")
    parser.add_argument("--include-known", action="store_true", help="also send the proxy frames known to kill it")
    parser.add_argument("--replay", type=int, metavar="CASE", help="replay one router case, printing its frames")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    if args.replay is not None:
        violations, _ = run_router_case(args.seed, args.replay, verbose=True)
        for violation in violations:
            print(f"{violation.kind} [{violation.known or 'NEW'}]: {violation.detail}")
        return 1 if violations else 0
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    summaries: list[dict[str, Any]] = []
    for target, cases in split_cases(args.cases, targets):
        if target == "router":
            summary = run_router(cases, args.seed)
        elif target == "upstream":
            summary = run_upstream(cases, args.seed)
        else:
            started = time.perf_counter()
            sent, violations = anyio.run(
                lambda t=target, n=cases: run_live(t, n, args.seed, include_known=args.include_known)
            )
            summary = summarize(target, sent, time.perf_counter() - started, violations)
        report(summary)
        summaries.append(summary)
    total = sum(s["cases"] for s in summaries)
    unknown = sum(s["unknown"] for s in summaries)
    print(f"total: {total:,} cases, {sum(s['violations'] for s in summaries)} violations, {unknown} unknown")
    if args.json:
        Path(args.json).write_text(json.dumps({"seed": args.seed, "cases": total, "targets": summaries}, indent=2))
    return 1 if unknown else 0


if __name__ == "__main__":
    raise SystemExit(main())
