"""A 2025-11-25 stdio MCP server (raw JSON-RPC) whose request to the client spells its ``method`` key
with a JSON escape (``"\\u006dethod"``): valid JSON, the same message to any parser, but not the bytes
``"method"``. Its one tool, ``ask``, sends that request (``elicitation/create``, id 7) and answers the
call with whatever the client answers it."""

import json

from raw_jsonrpc import answer, hello, messages, send_line

TOOL = {"name": "ask", "description": "Ask the client.", "inputSchema": {"type": "object"}}
ESCAPED = '{"jsonrpc":"2.0","id":7,"\\u006dethod":"elicitation/create","params":{"message":"?"}}'
waiting: list[object] = []


for _, message in messages():
    method, request_id = message.get("method"), message.get("id")
    if method is None and request_id == 7 and waiting:
        text = json.dumps(message.get("result"))
        answer(waiting.pop(), {"content": [{"type": "text", "text": text}]})
    elif request_id is None or method is None:
        continue
    elif method == "initialize":
        answer(request_id, hello("escaped"))
    elif method == "tools/list":
        answer(request_id, {"tools": [TOOL]})
    elif method == "tools/call":
        waiting.append(request_id)
        send_line(ESCAPED)
    else:
        answer(request_id, {})
