"""How uvicorn reads and writes an HTTP front's connections (``lazymcp.run.http_serve``).

- A front on its own keeps uvicorn's h11 server, as it always has.
- A front among peers (``--redis``) pays for its requests twice when they are forwarded: the instance a
  request reaches reads it, and so does its session's owner (``lazymcp.run.forward``). It reads them with
  uvicorn's httptools server (a C parser, the ``redis`` extra installs it), and writes each answer in one
  piece: uvicorn writes an answer's head and its body apart, two TCP segments (its sockets send at once,
  without Nagle's delay), so the client, or the instance that forwarded the request, wakes twice to read
  one answer. What one step of the event loop writes to a connection is gathered and sent at the end of
  that step, in one ``send``; an event stream's events still go as they come, each in its own step.
  Measured with ``python -m bench.cluster``: bench/README.md.

Bounds: nothing is held past the step that wrote it; the transport's own flow control (``pause_writing``,
its write buffer) is untouched, since every write reaches it, in order, before the next step.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast


class _GatheredWrites:
    """A transport whose writes within one step of the loop reach the real one as one write."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._pending: list[bytes] = []
        self._loop = asyncio.get_running_loop()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))

    def _flush(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def front_protocol(among_peers: bool) -> type[asyncio.Protocol] | str:
    """uvicorn's ``http`` setting for a front: ``h11`` for one on its own; for one among peers, httptools'
    server (h11's when httptools is not installed) with each step's writes gathered."""
    if not among_peers:
        return "h11"
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as server
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as server
    return _gathering(server)


def _gathering(server: Any) -> type[asyncio.Protocol]:
    """uvicorn's ``server`` protocol, its transport's writes gathered per step (``_GatheredWrites``)."""

    class Gathering(server):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(_GatheredWrites(cast(asyncio.Transport, transport)))  # pyright: ignore[reportUnknownMemberType]

    return Gathering
