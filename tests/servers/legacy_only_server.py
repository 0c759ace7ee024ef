"""A stdio MCP server that speaks only 2025-11-25, as most servers in the field do (raw JSON-RPC).

``legacy_only_server.py [TOOLS.json]`` lists the tools of that file (default: two note tools); a call
answers with what it received: ``{"tool", "arguments", "meta"}`` as JSON text. It starts in a blink,
with no SDK to import.
"""

import json
import sys

TOOLS = [
    {
        "name": "notes_add",
        "description": "Add a note with a title and a body.",
        "inputSchema": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
            "required": ["title"],
        },
    },
    {
        "name": "notes_find",
        "description": "Find notes whose title contains a word.",
        "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    },
]


def answer(request_id: object, result: object = None, error: object = None) -> None:
    message = {"jsonrpc": "2.0", "id": request_id}
    message.update({"error": error} if error is not None else {"result": result})
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if len(sys.argv) > 1:
    with open(sys.argv[1]) as file:
        TOOLS = json.load(file)

for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None or method is None:
        continue  # notifications, and answers to requests this server never makes
    params = message.get("params") or {}
    if method == "initialize":
        info = {"name": "legacy-notes", "version": "1"}
        answer(request_id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info})
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call":
        text = json.dumps(
            {"tool": params.get("name"), "arguments": params.get("arguments"), "meta": params.get("_meta")}
        )
        answer(request_id, {"content": [{"type": "text", "text": text}]})
    elif method == "ping":
        answer(request_id, {})
    else:
        answer(request_id, error={"code": -32601, "message": f"Method not found: {method}"})
