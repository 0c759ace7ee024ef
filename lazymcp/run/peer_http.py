"""One HTTP/1.1 request and its whole answer, on connections kept open to a peer instance: the hop of a
forwarded POST or DELETE (``lazymcp.run.forward``). Kept lean, since every forwarded request pays for
it: ``h11`` on asyncio streams, no more.

Bounds: connecting takes at most the connect wait, the whole exchange at most the answer wait; an answer
body of at most ``MAX_ANSWER`` bytes; at most ``IDLE_PER_PEER`` idle connections per peer, each dropped
after ``KEEP_ALIVE`` seconds (less than the 5 a peer's server keeps one, so none is reused just as the
peer closes it). A connection is reused only after a whole, clean exchange.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from urllib.parse import urlsplit

import h11

KEEP_ALIVE = 2.0
IDLE_PER_PEER = 64
MAX_ANSWER = 64 * 1024 * 1024
"""Bytes of one answer at most (a tool's answer the owner already holds whole)."""
READ_SIZE = 64 * 1024


class PeerUnreachable(Exception):
    """The peer could not be connected to, or closed the connection before its whole answer."""


class PeerTimeout(Exception):
    """The peer took longer than the answer wait."""


class Answer:
    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status = status
        self.headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in headers}
        self.body = body


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.http = h11.Connection(h11.CLIENT, max_incomplete_event_size=64 * 1024)
        self.idle_since = 0.0

    def close(self) -> None:
        self.writer.close()


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
    ) -> Answer:
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
            answer = await asyncio.wait_for(self._exchange(connection, method, path, fields, body), answer_wait)
        except TimeoutError:
            connection.close()
            raise PeerTimeout from None
        except (OSError, h11.ProtocolError, asyncio.IncompleteReadError) as exc:
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
    ) -> Answer:
        http = connection.http
        out = http.send(h11.Request(method=method, target=path, headers=fields))
        out += http.send(h11.Data(data=body)) if body else b""
        out += http.send(h11.EndOfMessage())
        connection.writer.write(out)
        await connection.writer.drain()
        head: h11.Response | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                data = await connection.reader.read(READ_SIZE)
                http.receive_data(data)  # b"": the peer closed; h11 then says what that means
                continue
            if isinstance(event, h11.Response):
                head = event
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > MAX_ANSWER:
                    raise PeerUnreachable(f"an answer past {MAX_ANSWER} bytes")
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                return Answer(head.status_code, list(head.headers), b"".join(chunks))
            elif isinstance(event, h11.ConnectionClosed):
                raise PeerUnreachable("the peer closed the connection before answering")

    def _keep(self, peer: tuple[str, int], connection: _Connection) -> None:
        http = connection.http
        if http.our_state is not h11.DONE or http.their_state is not h11.DONE:
            connection.close()
            return
        http.start_next_cycle()
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
