"""The framing the raw test servers share: messages read one per line from stdin, answers written one
per line to stdout, and the parts of a 2025-11-25 handshake. No SDK, so a server shows exactly what
goes over the wire."""

import json
import sys
from collections.abc import Iterator
from typing import Any


def messages() -> Iterator[tuple[str, dict[str, Any]]]:
    """Each line read and its message; a line that is not JSON is skipped."""
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        yield line, message


def requests() -> Iterator[tuple[str, object, dict[str, Any]]]:
    """Each request read: its method, id and params (notifications and answers are skipped)."""
    for _, message in messages():
        method, request_id = message.get("method"), message.get("id")
        if request_id is not None and isinstance(method, str):
            yield method, request_id, message.get("params") or {}


def send(message: dict[str, Any]) -> None:
    send_line(json.dumps(message))


def send_line(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def answer(request_id: object, result: object) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def not_found(request_id: object) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


def hello(name: str, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``initialize`` result of a 2025-11-25 server with tools (and ``capabilities``, when given)."""
    return {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities or {"tools": {}},
        "serverInfo": {"name": name, "version": "1"},
    }
