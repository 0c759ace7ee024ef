"""A bare stdio MCP server (stdlib only, 2025-11-25) with tools that break the connection in each way an
upstream can: exit mid-request, never answer, or write something that is not JSON-RPC."""

import json
import os
import sys
import time

TOOLS = [
    {"name": name, "description": text, "inputSchema": {"type": "object", "properties": props}}
    for name, text, props in [
        ("ok", "Answer normally.", {"text": {"type": "string"}}),
        ("die", "Exit the process at once, mid-request.", {}),
        ("hang", "Never answer.", {}),
        ("garbage", "Write something that is not JSON-RPC to stdout.", {}),
    ]
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    if "--fail-at-start" in sys.argv:
        sys.exit(7)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, request_id = message.get("method"), message["id"]
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "faulty"}}
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name = message["params"]["name"]
            if name == "die":
                print("faulty_server: dying on purpose", file=sys.stderr, flush=True)
                os._exit(3)
            if name == "hang":
                time.sleep(3600)
            if name == "garbage":
                sys.stdout.write("this is not json\n")
                sys.stdout.flush()
            text = message["params"].get("arguments", {}).get("text", "done")
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
