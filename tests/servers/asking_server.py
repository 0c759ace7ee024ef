"""A 2025-11-25 stdio MCP server (raw JSON-RPC) that asks its client, numbering its requests from 1 in
each process, as most servers do (the SDK's sessions count from 0).

Tools: ``ask`` sends the client ``elicitation/create`` (id ``q-N``, asking for progress under the token
``"p"``, as every process of it does) and answers the call with the client's answer to it and the
progress notifications it was sent meanwhile; ``die`` exits with status 3."""

import json
import sys
from typing import Any

from raw_jsonrpc import answer, hello, messages, not_found, send

TOOLS = [
    {"name": name, "description": f"The {name} tool.", "inputSchema": {"type": "object"}} for name in ("ask", "die")
]
asked: dict[str, object] = {}  # our request id -> the call waiting for its answer
progress: list[dict[str, Any]] = []  # the params of each progress notification heard


for _, message in messages():
    method, request_id = message.get("method"), message.get("id")
    params: dict[str, Any] = message.get("params") or {}
    if method is None and request_id in asked:  # the client's answer to one of our requests
        text = json.dumps({"answer": message.get("result") or message.get("error"), "progress": progress})
        answer(asked.pop(request_id), {"content": [{"type": "text", "text": text}]})
    elif method == "notifications/progress":
        progress.append(message.get("params") or {})
    elif request_id is None or method is None:
        continue
    elif method == "initialize":
        answer(request_id, hello("asking"))
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call" and params.get("name") == "ask":
        ours = f"q-{len(asked) + 1}"
        asked[ours] = request_id
        question = {"message": "?", "_meta": {"progressToken": "p"}}
        send({"jsonrpc": "2.0", "id": ours, "method": "elicitation/create", "params": question})
    elif method == "tools/call" and params.get("name") == "die":
        sys.exit(3)
    elif method == "ping":
        answer(request_id, {})
    else:
        not_found(request_id)
