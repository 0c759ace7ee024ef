"""A 2025-11-25 stdio MCP server (raw JSON-RPC) that answers in its own name, so a test sees which server a
request reached: ``routes_server.py NAME LISTS`` (``LISTS``: JSON ``{"resources": [uri...], "prompts":
[name...]}``, repeats kept as given).

``resources/read``, ``prompts/get`` and ``completion/complete`` answer ``NAME:<what was asked>``; each
resource is listed with the title ``NAME``."""

import json
import sys

from raw_jsonrpc import answer, hello, not_found, requests, send

NAME = sys.argv[1]
LISTS: dict[str, list[str]] = json.loads(sys.argv[2])
CAPABILITIES = {"tools": {}, "prompts": {}, "resources": {}, "completions": {}}


def said(what: object) -> str:
    return f"{NAME}:{what}"


for method, request_id, params in requests():
    if method == "initialize":
        answer(request_id, hello(NAME, CAPABILITIES))
    elif method == "tools/list":
        answer(request_id, {"tools": []})
    elif method == "prompts/list":
        answer(request_id, {"prompts": [{"name": name} for name in LISTS.get("prompts", [])]})
    elif method == "prompts/get" and params.get("name") in LISTS.get("prompts", []):
        text = {"type": "text", "text": said(params["name"])}
        answer(request_id, {"messages": [{"role": "user", "content": text}]})
    elif method == "prompts/get":
        error = {"code": -32602, "message": f"Unknown prompt: {params.get('name')}"}
        send({"jsonrpc": "2.0", "id": request_id, "error": error})
    elif method == "completion/complete":
        answer(request_id, {"completion": {"values": [said(params.get("ref", {}).get("name"))]}})
    elif method == "resources/list":
        answer(request_id, {"resources": [{"uri": uri, "name": NAME} for uri in LISTS.get("resources", [])]})
    elif method == "resources/read":
        answer(request_id, {"contents": [{"uri": params.get("uri"), "text": said(params.get("uri"))}]})
    elif method == "ping":
        answer(request_id, {})
    else:
        not_found(request_id)
