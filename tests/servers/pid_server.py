"""A 2025-11-25 stdio MCP server (raw JSON-RPC) whose tool ``whoami`` answers with its process id (which
client shares which server process is then plain to see), and whose tool ``raw`` answers with the line
of the call exactly as it was read (what a proxy changed on the way is then plain to see). ``fetch``
answers with structured content that has a ``method`` member, as an HTTP client tool's does. With
``HOLD_UNTIL`` set, it answers ``initialize`` only once that path exists (and writes ``<path>.held`` as it
starts to wait): a test then holds a process in its handshake, and says when it may go on."""

import json
import os
import time
from typing import Any

from raw_jsonrpc import answer, hello, messages, not_found

TOOLS = [
    {"name": "whoami", "description": "This server's process id.", "inputSchema": {"type": "object"}},
    {"name": "raw", "description": "The call's line as read.", "inputSchema": {"type": "object"}},
    {"name": "fetch", "description": "An HTTP request's outcome.", "inputSchema": {"type": "object"}},
]
FETCHED = {"method": "GET", "status": 200}


for line, message in messages():
    method, request_id = message.get("method"), message.get("id")
    params: dict[str, Any] = message.get("params") or {}
    if request_id is None or method is None:
        continue
    if method == "initialize":
        gate = os.environ.get("HOLD_UNTIL")
        if gate:
            open(f"{gate}.held", "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.02)
        answer(request_id, hello("pid"))
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call" and params.get("name") == "raw":
        answer(request_id, {"content": [{"type": "text", "text": line.rstrip("\n")}]})
    elif method == "tools/call" and params.get("name") == "fetch":
        answer(request_id, {"content": [{"type": "text", "text": json.dumps(FETCHED)}], "structuredContent": FETCHED})
    elif method == "tools/call":
        answer(request_id, {"content": [{"type": "text", "text": str(os.getpid())}]})
    elif method == "ping":
        answer(request_id, {})
    else:
        not_found(request_id)
