"""JSON-RPC 2.0 lines: parsing once at the edge, and the one place wire errors are built.

A line here is one message without its terminating newline; whoever writes it adds the newline.
"""

from __future__ import annotations

from typing import Any, TypeGuard, cast

import orjson

from lazymcp.errors import ErrorCode, LazyMCPError

Message = dict[str, Any]
RequestId = int | str


class NotJSONRPC(ValueError):
    """A line that is not a JSON-RPC 2.0 message."""


def parse(line: bytes) -> Message:
    """The message on one line.

    Raises:
        NotJSONRPC: the line is not JSON, or not a JSON-RPC object.
    """
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise NotJSONRPC(f"not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise NotJSONRPC("not a JSON object")
    return message  # pyright: ignore[reportUnknownVariableType]


def parse_or_refuse(line: bytes, message: Message | None = None) -> Message | bytes:
    """``line`` as a message (``message``, when the caller parsed it already), or the error line that
    answers a line that is not JSON-RPC."""
    if message is not None:
        return message
    try:
        return parse(line)
    except NotJSONRPC:
        return error_line(None, ErrorCode.PARSE_ERROR, "Parse error: not a JSON-RPC message")


def encode(message: Message) -> bytes:
    """One message as a line (no newline)."""
    return orjson.dumps(message)


def valid_id(value: object) -> TypeGuard[RequestId]:
    """Is ``value`` a request id lazymcp accepts: a string or an integer (JSON-RPC's numbers with a
    fraction, and ``null``, are not ids MCP allows; a boolean is not an integer here)?"""
    return isinstance(value, int | str) and not isinstance(value, bool)


def id_key(request_id: object) -> tuple[str, object]:
    """A dict key for a request id that keeps ``1`` and ``"1"`` apart, for any JSON value (an array or
    object id, invalid as it is, must not crash the one who reads it)."""
    if isinstance(request_id, list | dict):
        return ("json", orjson.dumps(request_id, option=orjson.OPT_SORT_KEYS))
    return (type(request_id).__name__, request_id)


def result_line(request_id: RequestId, result: dict[str, Any]) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_message(request_id: object, code: ErrorCode, message: str, data: object = None) -> Message:
    """The one builder of a JSON-RPC error: an id that is not a valid request id answers as null."""
    error: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id if valid_id(request_id) else None, "error": error}


def error_line(request_id: RequestId | None, code: ErrorCode, message: str, data: object = None) -> bytes:
    return encode(error_message(request_id, code, message, data))


def error_from(request_id: RequestId | None, exc: LazyMCPError) -> bytes:
    """The wire error for a lazymcp error (the translation boundary)."""
    return error_line(request_id, exc.code, exc.message, exc.data)


def request_line(request_id: RequestId, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return encode(message)


def notification_line(method: str, params: dict[str, Any] | None = None) -> bytes:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return encode(message)


def field(value: object, key: str) -> object:
    """``value[key]`` when ``value`` is a JSON object, else None."""
    return cast(dict[str, object], value).get(key) if isinstance(value, dict) else None


def params_meta(message: Message) -> dict[str, object]:
    """The ``params._meta`` object of a message ({} when absent)."""
    meta = field(message.get("params"), "_meta")
    return cast(dict[str, object], meta) if isinstance(meta, dict) else {}
