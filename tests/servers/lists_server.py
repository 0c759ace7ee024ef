"""A 2025-11-25 stdio MCP server (raw JSON-RPC) whose resources are kept in a file, as a filesystem or a
notes server keeps them: ``lists_server.py FILE`` (a JSON list of URIs).

Its one tool, ``add``, appends ``arguments.uri`` to the file and sends
``notifications/resources/list_changed``; ``resources/list`` reads the file each time."""

import json
import sys
from pathlib import Path
from typing import Any

from raw_jsonrpc import answer, hello, not_found, requests, send

STORE = Path(sys.argv[1])
TOOL = {"name": "add", "description": "Add a resource.", "inputSchema": {"type": "object"}}


for method, request_id, params in requests():
    if method == "initialize":
        answer(request_id, hello("lists", {"tools": {}, "resources": {"listChanged": True}}))
    elif method == "tools/list":
        answer(request_id, {"tools": [TOOL]})
    elif method == "tools/call":
        uris = json.loads(STORE.read_text())
        arguments: dict[str, Any] = params.get("arguments") or {}
        uris.append(arguments.get("uri"))
        STORE.write_text(json.dumps(uris))
        send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
        answer(request_id, {"content": [{"type": "text", "text": "added"}]})
    elif method == "resources/list":
        answer(request_id, {"resources": [{"uri": uri, "name": uri} for uri in json.loads(STORE.read_text())]})
    elif method == "ping":
        answer(request_id, {})
    else:
        not_found(request_id)
