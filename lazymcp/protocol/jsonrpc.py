"""JSON-RPC 2.0 lines: parsing once at the edge, and the one place wire errors are built.

A line here is one message without its terminating newline; whoever writes it adds the newline. A
``Frame`` is a message decoded once, with the bytes it came as: the cores pass frames to each other, and
whatever they pass on unchanged is written as it arrived.
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard, cast

import orjson

from lazymcp.protocol.errors import ErrorCode, LazyMCPError

Message = dict[str, Any]
RequestId = int | str


class NotJSONRPC(ValueError):
    """A line that is not a JSON-RPC 2.0 message."""


def parse(line: bytes) -> Message:
    """The message on one line.

    Raises:
        NotJSONRPC: the line is not JSON, or not a JSON-RPC object.
    """
    return Frame.read(line).message


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


TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
"""A W3C trace context, as the ``traceparent`` header and ``_meta.traceparent`` carry it."""


def params_meta(message: Message) -> dict[str, object]:
    """The ``params._meta`` object of a message ({} when absent)."""
    meta = field(message.get("params"), "_meta")
    return cast(dict[str, object], meta) if isinstance(meta, dict) else {}


class Frame:
    """One JSON-RPC message, decoded once: ``message``, and ``line``, the bytes it came as (when they are
    one line) or its encoding, made on first use and kept. A core that changes a message makes a new
    frame, so whatever is passed on unchanged is written as the very bytes that arrived."""

    __slots__ = ("_line", "_params", "message")

    def __init__(self, message: Message, line: bytes | None = None) -> None:
        self.message = message
        self._line = line
        self._params: dict[str, Any] | None = None

    @classmethod
    def read(cls, data: bytes) -> Frame:
        """The message in ``data``, its bytes kept as its line unless they span lines (pretty-printed JSON,
        which a stdio peer could not read).

        Raises:
            NotJSONRPC: ``data`` is not JSON, or not a JSON-RPC object.
        """
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise NotJSONRPC(f"not JSON: {exc}") from None
        if not isinstance(message, dict):
            raise NotJSONRPC("not a JSON object")
        return cls(message, None if b"\n" in data or b"\r" in data else data)  # pyright: ignore[reportUnknownArgumentType]

    @property
    def line(self) -> bytes:
        """The message as one line, without its newline.

        Raises:
            orjson.JSONEncodeError: a message made here nests too deeply to encode.
        """
        if self._line is None:
            self._line = encode(self.message)
        return self._line

    def changed(self, **members: object) -> Frame:
        """This message with ``members`` replaced (written anew)."""
        return Frame({**self.message, **members})

    def fits(self) -> bool:
        """Encode the message now, if it was made here (the line is kept): False when it nests too deeply
        to be written, so whoever made it can refuse it in words."""
        try:
            self.line  # noqa: B018
        except orjson.JSONEncodeError:
            return False
        return True

    @property
    def method(self) -> object:
        return self.message.get("method")

    @property
    def id(self) -> object:
        return self.message.get("id")

    @property
    def params(self) -> dict[str, Any]:
        """The params object ({} when absent or not an object), read once."""
        if self._params is None:
            params: Any = self.message.get("params")
            self._params = params if isinstance(params, dict) else {}
        return self._params

    @property
    def is_request(self) -> bool:
        return "method" in self.message and "id" in self.message

    @property
    def is_notification(self) -> bool:
        return "method" in self.message and "id" not in self.message

    @property
    def is_answer(self) -> bool:
        return "method" not in self.message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frame) and self.message == other.message

    __hash__ = None  # pyright: ignore[reportAssignmentType]

    def __repr__(self) -> str:
        return f"Frame({self.message!r})"


def line_of(frame: Frame) -> bytes | None:
    """A frame's line to write; an answer made here that nests too deeply to encode (a server's deep result
    shaped anew, say) becomes an error answering the same request instead (None: any other message, which
    is dropped: an error would answer a request nobody made)."""
    try:
        return frame.line
    except orjson.JSONEncodeError:
        if not frame.is_answer or not valid_id(frame.id):
            return None
        return encode(error_message(frame.id, ErrorCode.INTERNAL_ERROR, "Internal error: the answer nests too deeply"))


# --- the refusals every core gives a client alike ---------------------------------------------------


def client_frame(data: bytes | Frame) -> Frame | None:
    """A client's message as a frame: the one a caller parsed, or its line read (None: not JSON-RPC, to be
    answered with ``parse_refusal``)."""
    if isinstance(data, Frame):
        return data
    try:
        return Frame.read(data)
    except NotJSONRPC:
        return None


def parse_refusal() -> Frame:
    """The answer to a line that is not JSON-RPC."""
    return Frame(error_message(None, ErrorCode.PARSE_ERROR, "Parse error: not a JSON-RPC message"))


def request_refusal(frame: Frame) -> Frame | None:
    """The answer refusing a request that is not one (its method or id of the wrong type, its params not
    an object), or None for a valid one. MCP params are objects: servers built on the SDK drop any other
    request unanswered, which would leave it hanging until the server counted as hung."""
    message = frame.message
    request_id = message["id"]
    if (
        not isinstance(message["method"], str)
        or not isinstance(request_id, int | str)
        or request_id is True
        or request_id is False
    ):
        return Frame(error_message(None, ErrorCode.INVALID_REQUEST, "Invalid request"))
    if "params" in message and not isinstance(message["params"], dict):
        data = {"field": "params", "reason": "type"}
        return Frame(error_message(request_id, ErrorCode.INVALID_PARAMS, "Invalid params: expected an object", data))
    return None


def too_deep(request_id: RequestId) -> Frame:
    """The answer to a request that, changed on its way, nests too deeply to be written."""
    return Frame(error_message(request_id, ErrorCode.INVALID_REQUEST, "Invalid request: nested too deeply"))
