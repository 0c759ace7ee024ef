"""A 2025-11-25 stdio MCP server (raw JSON-RPC) whose request to the client spells its ``method`` key
with a JSON escape (``"\\u006dethod"``): valid JSON, the same message to any parser, but not the bytes
``"method"``. Its one tool, ``ask``, sends that request (``elicitation/create``, id 7) and answers the
call with whatever the client answers it."""

import json
import sys
from typing import Any

TOOL = {"name": "ask", "description": "Ask the client.", "inputSchema": {"type": "object"}}
ESCAPED = '{"jsonrpc":"2.0","id":7,"\\u006dethod":"elicitation/create","params":{"message":"?"}}'
waiting: list[object] = []


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method, request_id = message.get("method"), message.get("id")
    if method is None and request_id == 7 and waiting:
        text = json.dumps(message.get("result"))
        send({"jsonrpc": "2.0", "id": waiting.pop(), "result": {"content": [{"type": "text", "text": text}]}})
    elif request_id is None or method is None:
        continue
    elif method == "initialize":
        info = {"name": "escaped", "version": "1"}
        result: dict[str, Any] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        waiting.append(request_id)
        sys.stdout.write(ESCAPED + "\n")
        sys.stdout.flush()
    else:
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
