"""A local model API that a host is pointed at: it records every request and answers as ``agent.py`` decides.

One server speaks the three wire formats the hosts use, each on its own path: Anthropic's Messages API
(``/v1/messages``, streamed, and ``/v1/messages/count_tokens``, answered with real counts), OpenAI's
Responses API (``/v1/responses``, streamed) and the Gemini API (``/v1beta/models/M:streamGenerateContent``
and ``:generateContent``). It runs in a thread of the test process, on loopback.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lazymcp.tools.tokens import count_tokens

from .agent import Call, Unseen, View, next_call

MAX_BODY = 16 * 1024 * 1024
"""The largest request body read."""
ANSWER = "Done: the issue was fetched."


@dataclass
class Exchange:
    """One request to the model and what the scripted model answered."""

    api: str
    body: dict[str, Any]
    view: View | None
    call: Call | None
    problem: str | None = None


@dataclass
class Recording:
    exchanges: list[Exchange] = field(default_factory=list[Exchange])
    lock: threading.Lock = field(default_factory=threading.Lock)

    def agent(self) -> list[Exchange]:
        """The requests of the agent's loop (those that offer tools), in order."""
        with self.lock:
            return [exchange for exchange in self.exchanges if exchange.view is not None]


_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


MAX_CALLS = 12
"""The scripted model gives up after this many tool calls in one run (a host that loops)."""


def _decide(view: View) -> tuple[Call | None, str | None]:
    if len(view.results) >= MAX_CALLS:
        return None, f"no successful call after {MAX_CALLS} tool calls"
    try:
        return next_call(view), None
    except Unseen as exc:
        return None, str(exc)


# --- Anthropic's Messages API ----------------------------------------------------------------------------


def _anthropic_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(block.get("text", "") for block in value if isinstance(block, dict))
    return ""


def anthropic_view(body: dict[str, Any]) -> View | None:
    texts = [_anthropic_text(body.get("system"))]
    results: list[str] = []
    referenced: set[str] = set()
    searched: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        texts.append(_anthropic_text(content))
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "ToolSearch":
                searched.append(str((block.get("input") or {}).get("query")))
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append(_anthropic_text(block.get("content")))
                inner = block.get("content")
                for item in inner if isinstance(inner, list) else []:
                    if isinstance(item, dict) and item.get("type") == "tool_reference":
                        referenced.add(str(item.get("tool_name")))
    # a tool sent with defer_loading is shown to the model once a search result references it
    tools = {
        tool["name"]: tool.get("input_schema") or {}
        for tool in body.get("tools", [])
        if "name" in tool and (not tool.get("defer_loading") or tool["name"] in referenced)
    }
    if not tools:
        return None
    deferred = set(re.findall(r"\bmcp__lazy__\w+", "\n".join(texts))) - set(tools)
    return View(tools, deferred, results, "ToolSearch" if "ToolSearch" in tools else None, searched)


def anthropic_events(body: dict[str, Any], call: Call | None) -> Iterator[tuple[str, dict[str, Any]]]:
    model = body.get("model", "model")
    usage = {"input_tokens": 1, "output_tokens": 1}
    message = {"id": _id("msg"), "type": "message", "role": "assistant", "model": model, "content": []}
    yield "message_start", {"type": "message_start", "message": {**message, "stop_reason": None, "usage": usage}}
    if call is None:
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        delta = {"type": "text_delta", "text": ANSWER}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    else:
        block = {"type": "tool_use", "id": _id("toolu"), "name": call.name, "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    reason = "end_turn" if call is None else "tool_use"
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 1}}
    yield "message_stop", {"type": "message_stop"}


def anthropic_count(body: dict[str, Any]) -> int:
    """Real cl100k_base counts of what the request would send: its system, messages and tools."""
    parts = {key: body.get(key) for key in ("system", "messages", "tools") if body.get(key) is not None}
    return count_tokens(json.dumps(parts, separators=(",", ":"), ensure_ascii=False))


# --- OpenAI's Responses API ------------------------------------------------------------------------------


def _responses_functions(
    tools: list[Any], into: dict[str, dict[str, Any]], spaces: dict[str, tuple[str, str]], *, loaded: bool = False
) -> None:
    """The functions the model sees: those not deferred, and (``loaded``) those a search result brought."""
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function" and (loaded or not tool.get("defer_loading")):
            into[tool["name"]] = tool.get("parameters") or {}
        elif tool.get("type") == "namespace":
            for inner in tool.get("tools", []):
                if inner.get("type") == "function" and (loaded or not inner.get("defer_loading")):
                    full = f"{tool['name']}__{inner['name']}"
                    into[full] = inner.get("parameters") or {}
                    spaces[full] = (tool["name"], inner["name"])


def responses_view(body: dict[str, Any]) -> tuple[View, dict[str, tuple[str, str]]]:
    tools: dict[str, dict[str, Any]] = {}
    spaces: dict[str, tuple[str, str]] = {}
    _responses_functions(body.get("tools", []), tools, spaces)
    search = next((tool for tool in body.get("tools", []) if tool.get("type") == "tool_search"), None)
    if search is not None:
        tools["tool_search"] = search.get("parameters") or {}
    results: list[str] = []
    searched: list[str] = []
    for item in body.get("input", []):
        kind = item.get("type")
        if kind == "tool_search_call":
            arguments = item.get("arguments")
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments or {}
            searched.append(str(arguments.get("query")))
        if kind == "function_call_output":
            output = item.get("output")  # a string, or content blocks (Codex puts its timing in the first)
            blocks = output if isinstance(output, list) else [{"text": output}]
            results.extend(str(block.get("text", "")) for block in blocks if isinstance(block, dict))
        elif kind == "tool_search_output":
            _responses_functions(item.get("tools", []), tools, spaces, loaded=True)
            results.append(json.dumps(item.get("tools", [])))
    return View(tools, set(), results, "tool_search" if search is not None else None, searched), spaces


def responses_events(call: Call | None, spaces: dict[str, tuple[str, str]]) -> Iterator[tuple[str, dict[str, Any]]]:
    response_id = _id("resp")
    yield "response.created", {"type": "response.created", "response": {"id": response_id}}
    if call is None:
        content = [{"type": "output_text", "text": ANSWER, "annotations": []}]
        item: dict[str, Any] = {
            "type": "message",
            "id": _id("msg"),
            "role": "assistant",
            "status": "completed",
            "content": content,
        }
    elif call.host_search:
        item = {
            "type": "tool_search_call",
            "id": _id("ts"),
            "call_id": _id("call"),
            "execution": "client",
            "status": "completed",
            "arguments": call.arguments,
        }
    else:
        namespace, name = spaces.get(call.name, (None, call.name))
        item = {
            "type": "function_call",
            "id": _id("fc"),
            "call_id": _id("call"),
            "name": name,
            "arguments": json.dumps(call.arguments),
        }
        if namespace:
            item["namespace"] = namespace
    yield "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    completed = {"id": response_id, "status": "completed", "output": [item], "usage": usage}
    yield "response.completed", {"type": "response.completed", "response": completed}


# --- the Gemini API ----------------------------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def gemini_view(body: dict[str, Any]) -> View | None:
    tools: dict[str, dict[str, Any]] = {}
    for group in body.get("tools", []):
        for declaration in group.get("functionDeclarations", []):
            tools[declaration["name"]] = declaration.get("parametersJsonSchema") or declaration.get("parameters") or {}
    if not tools:
        return None
    results = [
        text
        for content in body.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
        for text in _strings(part["functionResponse"].get("response"))
    ]
    return View(tools, set(), results)


def gemini_chunk(call: Call | None) -> dict[str, Any]:
    part = {"text": ANSWER} if call is None else {"functionCall": {"name": call.name, "args": call.arguments}}
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
    usage = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "fake"}


# --- the server --------------------------------------------------------------------------------------------


def _deferred(body: dict[str, Any]) -> int | None:
    """The index of the first tool of an Anthropic request sent with ``defer_loading`` (None: none is)."""
    tools = body.get("tools")
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        if isinstance(tool, dict) and "defer_loading" in tool:
            return index
    return None


class Handler(BaseHTTPRequestHandler):
    recording: Recording
    refuse_deferred: bool = False
    """Answer a request with a deferred tool as an endpoint that does not know ``defer_loading`` does."""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # the server's own log, silenced
        return

    def do_GET(self) -> None:
        self._json(404, {"error": {"message": f"no {self.path} here"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            self._json(413, {"error": {"message": "too large"}})
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "not JSON"}})
            return
        path = self.path.split("?", 1)[0]
        deferred = _deferred(body) if self.refuse_deferred and "/messages" in path else None
        if deferred is not None:
            counted = path.endswith("/count_tokens")
            self._record(Exchange("anthropic-count-refused" if counted else "anthropic-refused", body, None, None))
            message = f"tools.{deferred}.defer_loading: Extra inputs are not permitted"
            self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        elif path.endswith("/messages/count_tokens"):
            self._record(Exchange("anthropic-count", body, None, None))
            self._json(200, {"input_tokens": anthropic_count(body)})
        elif path.endswith("/messages"):
            self._anthropic(body)
        elif path.endswith("/responses"):
            self._responses(body)
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self._gemini(body, stream=":streamGenerateContent" in path)
        elif path.endswith(":countTokens"):
            self._json(200, {"totalTokens": count_tokens(json.dumps(body))})
        else:
            self._json(404, {"error": {"message": f"no {path} here"}})

    def _record(self, exchange: Exchange) -> None:
        with self.recording.lock:
            self.recording.exchanges.append(exchange)

    def _anthropic(self, body: dict[str, Any]) -> None:
        view = anthropic_view(body)
        call, problem = _decide(view) if view is not None else (None, None)
        self._record(Exchange("anthropic", body, view, call, problem))
        events = list(anthropic_events(body, call))
        if body.get("stream"):
            self._sse((name, data) for name, data in events)
            return
        start = events[0][1]["message"]
        block = events[1][1]["content_block"]
        if call is not None:
            block = {**block, "input": call.arguments}
        else:
            block = {"type": "text", "text": ANSWER}
        stop = "end_turn" if call is None else "tool_use"
        self._json(200, {**start, "content": [block], "stop_reason": stop})

    def _responses(self, body: dict[str, Any]) -> None:
        view, spaces = responses_view(body)
        call, problem = _decide(view)
        self._record(Exchange("responses", body, view, call, problem))
        self._sse(responses_events(call, spaces))

    def _gemini(self, body: dict[str, Any], *, stream: bool) -> None:
        view = gemini_view(body)
        call, problem = _decide(view) if view is not None else (None, None)
        self._record(Exchange("gemini", body, view, call, problem))
        if stream:
            self._sse(((None, gemini_chunk(call)),))
        else:
            self._json(200, gemini_chunk(call))

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Any) -> None:
        chunks = []
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {json.dumps(data)}\n\n")
        payload = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@contextmanager
def fake_model(*, refuse_deferred: bool = False) -> Iterator[tuple[str, Recording]]:
    """A fake model API on a free loopback port: its base URL and what it recorded, until the block ends
    (``refuse_deferred``: it refuses Anthropic requests with deferred tools, 400)."""
    recording = Recording()
    handler = type("BoundHandler", (Handler,), {"recording": recording, "refuse_deferred": refuse_deferred})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", recording
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
