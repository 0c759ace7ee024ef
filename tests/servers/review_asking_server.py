"""A 2025-11-25 stdio MCP server (raw JSON-RPC) that asks its client, numbering its requests from 1 in
each process, as most servers do (the SDK's sessions count from 0).

Tools: ``ask`` sends the client ``elicitation/create`` (id ``q-N``) and answers the call with the
client's answer to it; ``die`` exits with status 3."""

import json
import sys
from typing import Any

TOOLS = [
    {"name": name, "description": f"The {name} tool.", "inputSchema": {"type": "object"}} for name in ("ask", "die")
]
asked: dict[str, object] = {}  # our request id -> the call waiting for its answer


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id: object, result: object) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method, request_id = message.get("method"), message.get("id")
    params: dict[str, Any] = message.get("params") or {}
    if method is None and request_id in asked:  # the client's answer to one of our requests
        text = json.dumps(message.get("result") or message.get("error"))
        answer(asked.pop(request_id), {"content": [{"type": "text", "text": text}]})
    elif request_id is None or method is None:
        continue
    elif method == "initialize":
        info = {"name": "asking", "version": "1"}
        answer(request_id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info})
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call" and params.get("name") == "ask":
        ours = f"q-{len(asked) + 1}"
        asked[ours] = request_id
        send({"jsonrpc": "2.0", "id": ours, "method": "elicitation/create", "params": {"message": "?"}})
    elif method == "tools/call" and params.get("name") == "die":
        sys.exit(3)
    elif method == "ping":
        answer(request_id, {})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})
