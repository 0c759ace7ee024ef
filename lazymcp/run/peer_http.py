"""One HTTP/1.1 request and its whole answer, on connections kept open to a peer instance: the hop of a
forwarded POST or DELETE (``lazymcp.run.forward``). Kept lean, since every forwarded request pays for
it: the request written in one piece, the answer read with the stream's own ``readuntil`` and
``readexactly`` (h11, a general parser, took a large share of the forwarding instance's CPU time).
It reads what a peer's front (uvicorn) writes: a status line, header fields, then a body framed by
``Content-Length`` or chunked; anything else is taken for a peer that cannot be reached.

Bounds: connecting takes at most the connect wait, the whole exchange at most the answer wait; an
answer's head of at most ``READ_SIZE`` bytes, its body of at most ``MAX_ANSWER``; at most
``IDLE_PER_PEER`` idle connections per peer, each dropped after ``KEEP_ALIVE`` seconds (less than the 5 a
peer's server keeps one, so none is reused just as the peer closes it). A connection is reused only after
a whole, clean exchange.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from urllib.parse import urlsplit

KEEP_ALIVE = 2.0
IDLE_PER_PEER = 64
MAX_ANSWER = 64 * 1024 * 1024
"""Bytes of one answer at most (a tool's answer the owner already holds whole)."""
READ_SIZE = 64 * 1024


class PeerUnreachable(Exception):
    """The peer could not be connected to, or closed the connection before its whole answer."""


class PeerTimeout(Exception):
    """The peer took longer than the answer wait."""


class PeerAnswer:
    """A peer's whole answer to one request."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        """Field names in lower case; a field given more than once, its values joined by commas."""
        self.body = body


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reusable = False
        """Whether the last exchange ended whole, with no word of the peer closing the connection."""
        self.idle_since = 0.0

    def close(self) -> None:
        self.writer.close()


def request_head(method: str, path: str, fields: Sequence[tuple[str, str]]) -> bytes:
    """A request's line and header fields. A value from another request cannot hold a line break (its own
    parser would have refused it); one that does is refused here, so that no field is ever smuggled."""
    lines = [f"{method} {path} HTTP/1.1"]
    for name, value in fields:
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise ValueError(f"a header field that would break the request: {name!r}")
        lines.append(f"{name}: {value}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("latin-1")


async def read_answer(reader: asyncio.StreamReader) -> tuple[PeerAnswer, bool]:
    """One whole answer, and whether its connection may carry another.

    Raises:
        PeerUnreachable: the peer closed the connection first, or wrote what is not such an answer.
    """
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise PeerUnreachable(f"an answer's head past {READ_SIZE} bytes") from None
    lines = head[:-4].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if version not in ("HTTP/1.1", "HTTP/1.0") or not code.isdigit() or rest[3:4] not in ("", " "):
        raise PeerUnreachable(f"not an HTTP/1.1 answer: {lines[0][:80]!r}")
    status = int(code)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        name = name.lower()
        if not colon or not name or name != name.strip():
            raise PeerUnreachable(f"a malformed header field: {line[:80]!r}")
        value = value.strip(" \t")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    reusable = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    if status < 200:
        raise PeerUnreachable(f"an interim answer ({status}) to a request that asked for none")
    if "transfer-encoding" in headers:
        if headers["transfer-encoding"].lower() != "chunked":
            raise PeerUnreachable(f"an answer framed as {headers['transfer-encoding']!r}")
        body = await _chunked(reader)
    elif "content-length" in headers:
        length = headers["content-length"]
        if not length.isdigit() or int(length) > MAX_ANSWER:
            raise PeerUnreachable(f"an answer of {length[:20]!r} bytes")
        body = await reader.readexactly(int(length))
    elif status in (204, 304):
        body = b""
    else:  # the body runs to the connection's end, which then cannot be reused
        body = await reader.read(MAX_ANSWER + 1)
        while body and not reader.at_eof() and len(body) <= MAX_ANSWER:
            body += await reader.read(MAX_ANSWER + 1 - len(body))
        if len(body) > MAX_ANSWER:
            raise PeerUnreachable(f"an answer past {MAX_ANSWER} bytes")
        reusable = False
    return PeerAnswer(status, headers, body), reusable


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        line = (await reader.readuntil(b"\r\n"))[:-2].split(b";", 1)[0].strip()
        if not line or len(line) > 16 or line.strip(b"0123456789abcdefABCDEF"):
            raise PeerUnreachable(f"a malformed chunk size: {line[:20]!r}")
        length = int(line, 16)
        if length == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailer fields: none is used
                pass
            return b"".join(chunks)
        size += length
        if size > MAX_ANSWER:
            raise PeerUnreachable(f"an answer past {MAX_ANSWER} bytes")
        chunks.append(await reader.readexactly(length))
        if await reader.readexactly(2) != b"\r\n":
            raise PeerUnreachable("a chunk that does not end where its size says")


class PeerPool:
    """Connections to peers, by address (``http://host:port``)."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}

    async def request(
        self,
        address: str,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        *,
        connect_wait: float,
        answer_wait: float,
    ) -> PeerAnswer:
        """Send one request and read its whole answer.

        Raises:
            PeerUnreachable: no connection, or it ended before the whole answer.
            PeerTimeout: no whole answer within ``answer_wait`` seconds.
        """
        parts = urlsplit(address)
        peer = (parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80))
        connection = await self._connection(peer, parts.scheme == "https", connect_wait)
        host = parts.netloc
        fields = [("host", host), *((k, v) for k, v in headers if k != "host"), ("content-length", str(len(body)))]
        fields = [(k, v) for k, v in fields if k != "transfer-encoding"]
        try:
            async with asyncio.timeout(answer_wait):  # in this task: a ``wait_for`` would start another
                answer = await self._exchange(connection, method, path, fields, body)
        except TimeoutError:
            connection.close()
            raise PeerTimeout from None
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            connection.close()
            raise PeerUnreachable(str(exc)) from None
        except BaseException:
            connection.close()
            raise
        self._keep(peer, connection)
        return answer

    async def _connection(self, peer: tuple[str, int], tls: bool, wait: float) -> _Connection:
        loop = asyncio.get_running_loop()
        idle = self._idle.get(peer, [])
        while idle:
            connection = idle.pop()
            if loop.time() - connection.idle_since < KEEP_ALIVE and not connection.reader.at_eof():
                return connection
            connection.close()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(peer[0], peer[1], ssl=True if tls else None, limit=READ_SIZE), wait
            )
        except (TimeoutError, OSError) as exc:
            raise PeerUnreachable(str(exc) or type(exc).__name__) from None
        return _Connection(reader, writer)

    async def _exchange(
        self, connection: _Connection, method: str, path: str, fields: list[tuple[str, str]], body: bytes
    ) -> PeerAnswer:
        connection.reusable = False
        connection.writer.write(request_head(method, path, fields) + body)
        await connection.writer.drain()
        answer, connection.reusable = await read_answer(connection.reader)
        return answer

    def _keep(self, peer: tuple[str, int], connection: _Connection) -> None:
        if not connection.reusable:
            connection.close()
            return
        idle = self._idle.setdefault(peer, [])
        if len(idle) >= IDLE_PER_PEER:
            connection.close()
            return
        connection.idle_since = asyncio.get_running_loop().time()
        idle.append(connection)

    def close(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
