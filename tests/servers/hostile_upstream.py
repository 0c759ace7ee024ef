"""A 2025-11-25 stdio MCP server that misbehaves on purpose (raw JSON-RPC, no SDK): ``hostile_upstream.py KIND``.

KIND shapes its ``tools/list``:
- ``plain``: two tools;
- ``endless``: every page names a new next cursor, for ever;
- ``looping``: every page names the same next cursor;
- ``bad-tools``: a duplicate name and a schema nested past the JSON encoder's depth limit, among good tools;
- ``slow-big``: its tools and 300 more with long descriptions (~150 kB), each page after 2 s;
- ``mute``: never answers ``initialize`` (nor anything after it);
- ``late``: reads nothing for its first 2.5 s; its tool ``seen`` answers with the calls it received;
- ``churn``: once initialized, announces ``list_changed`` every millisecond, its list one tool longer
  each time; its tool ``fetches`` answers with how many ``tools/list`` requests it received.

Its tools: ``echo`` answers at once with its arguments and the ``_meta`` it got; ``slow`` answers after
``arguments.seconds``; ``hang`` never answers; ``ask`` sends the client an elicitation request and
then, when ``arguments.cancel`` is true, cancels it itself (answering the call at once); ``flood``
sends ``arguments.count`` log notifications, then answers; ``die`` exits with status 3; ``deaf`` sends
the log notification "deaf from now on", then never answers and never reads its stdin again.
``swamp`` sends the client ``arguments.count`` ``roots/list`` requests at once and answers, once the
errors among their answers stop coming (or after 10 s), with how many were errors.
``resources/list`` answers with one resource. A client's progress notification is read and let go without
being parsed, so that a server still reading keeps up with a flood of large ones.
"""

import json
import sys
import threading
import time

KIND = sys.argv[1] if len(sys.argv) > 1 else "plain"
LOCK = threading.Lock()
DEAF = "deaf from now on"
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = [{"name": name, "description": f"The {name} tool.", "inputSchema": SCHEMA} for name in ("echo", "slow", "hang")]
TOOLS += [
    {"name": name, "description": f"The {name} tool.", "inputSchema": {"type": "object"}}
    for name in ("ask", "flood", "die", "deaf", "swamp")
]
TOOLS += [{"name": "seen", "description": "What it received.", "inputSchema": {"type": "object"}}] * (KIND == "late")
TOOLS += [{"name": "fetches", "description": "Its listings.", "inputSchema": {"type": "object"}}] * (KIND == "churn")
RECEIVED: list[str] = []
ERRORS = [0]
FETCHES = [0]


def deep(levels: int) -> dict:
    node: dict = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"x": node}}
    return node


def send(message: dict) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def answer(request_id: object, result: object) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def text(request_id: object, value: object) -> None:
    answer(request_id, {"content": [{"type": "text", "text": json.dumps(value)}]})


def listing(request_id: object, params: dict) -> None:
    cursor = params.get("cursor")
    if KIND == "endless":
        page = int(cursor or 0) + 1
        answer(request_id, {"tools": TOOLS if page == 1 else [], "nextCursor": str(page)})
    elif KIND == "looping":
        answer(request_id, {"tools": TOOLS if cursor is None else [], "nextCursor": "again"})
    elif KIND == "bad-tools":
        twin = {"name": "echo", "description": "A second echo.", "inputSchema": {"type": "object"}}
        nested = {"name": "nested", "description": "Too deep.", "inputSchema": deep(300)}
        answer(request_id, {"tools": [*TOOLS, twin, nested]})
    elif KIND == "churn":
        FETCHES[0] += 1
        grown = [{"name": f"grown_{n}", "inputSchema": SCHEMA} for n in range(FETCHES[0])]
        answer(request_id, {"tools": [*TOOLS, *grown]})
    elif KIND == "slow-big":
        padding = [{"name": f"pad_{n}", "description": "p" * 400, "inputSchema": SCHEMA} for n in range(300)]
        threading.Timer(2.0, answer, (request_id, {"tools": [*TOOLS, *padding]})).start()
    else:
        answer(request_id, {"tools": TOOLS})


def call(request_id: object, params: dict) -> None:
    name, arguments = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        text(request_id, {"arguments": arguments, "meta": params.get("_meta")})
    elif name == "slow":
        threading.Timer(float(arguments.get("seconds", 1)), text, (request_id, {"slow": True})).start()
    elif name == "hang":
        return
    elif name == "ask":
        asked = f"ask-{request_id}"
        send({"jsonrpc": "2.0", "id": asked, "method": "elicitation/create", "params": {"message": "?"}})
        if arguments.get("cancel"):
            send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": asked}})
            text(request_id, {"asked": asked, "cancelled": True})
    elif name == "flood":
        for number in range(int(arguments.get("count", 1000))):
            note = {"level": "info", "data": f"note {number} " + "x" * int(arguments.get("size", 100))}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": note})
        text(request_id, {"flooded": True})
    elif name == "die":
        sys.exit(3)
    elif name == "seen":
        text(request_id, RECEIVED)
    elif name == "fetches":
        text(request_id, FETCHES[0])
    elif name == "swamp":
        count = int(arguments.get("count", 100))
        for number in range(count):
            send({"jsonrpc": "2.0", "id": f"swamp-{number}", "method": "roots/list", "params": {}})
        threading.Thread(target=swamped, args=(request_id,), daemon=True).start()
    elif name == "deaf":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": DEAF}})
        threading.Event().wait()
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


def swamped(request_id: object) -> None:
    """Answer the ``swamp`` call once the errors for its requests have stopped coming."""
    last, deadline = -1, time.monotonic() + 10
    while ERRORS[0] != last and time.monotonic() < deadline:
        last = ERRORS[0]
        time.sleep(0.5)
    text(request_id, {"errors": ERRORS[0]})


def churn() -> None:
    while True:
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        time.sleep(0.001)


if KIND == "late":
    time.sleep(2.5)
for line in sys.stdin:
    if '"notifications/progress"' in line[:100]:
        continue  # read and let go unparsed: a flood of large ones is read as fast as the pipe gives it
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method, request_id = message.get("method"), message.get("id")
    if method is None and "error" in message:
        ERRORS[0] += 1
    if method == "notifications/initialized" and KIND == "churn":
        threading.Thread(target=churn, daemon=True).start()
    if request_id is None or method is None:
        continue  # notifications, and the client's answers
    if method == "tools/call":
        RECEIVED.append(str((message.get("params") or {}).get("name")))
    if KIND == "mute":
        continue
    params = message.get("params") or {}
    if method == "initialize":
        capabilities = {"tools": {}, "resources": {}}
        answer(
            request_id,
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "serverInfo": {"name": "hostile", "version": "1"},
            },
        )
    elif method == "tools/list":
        listing(request_id, params)
    elif method == "tools/call":
        call(request_id, params)
    elif method == "resources/list":
        answer(request_id, {"resources": [{"uri": "memo://one", "name": "one"}]})
    elif method == "ping":
        answer(request_id, {})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})
