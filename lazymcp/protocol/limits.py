"""Every bound of ``lazymcp proxy`` and ``lazymcp serve`` in one place (spec/lazy-tools.md, "Limits").

A peer, hostile or broken, gets bounded time and memory: each wait ends (``--timeout``), each buffer
has a size, and what cannot be kept is dropped and counted, never queued without end.
"""

from __future__ import annotations

import asyncio
import ctypes
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

DEFAULT_TIMEOUT = 300.0
"""Seconds the upstream may take to answer a request (``--timeout``); also the bound on a server's
request to the client, and on the answers still owed when the client's input ends."""
CLIENT_TIMEOUT = 600.0
"""Seconds the client may take to answer a request of the upstream's (``--client-timeout``): past it
the upstream gets an error for it and the client a cancellation. Longer than ``--timeout``, since a
person may be answering an elicitation."""
SHUTDOWN_GRACE = 2.0
"""Seconds the upstream gets to exit after its stdin closes, before it is terminated (then killed)."""
EXPIRE_EVERY = 0.25
"""Seconds between checks for requests that have waited too long."""
DEFAULT_MAX_SESSIONS = 32
"""HTTP client sessions at once (``--max-sessions``): each 2025 session spawns its own upstream process."""
MAX_BODY = 4 * 1024 * 1024
"""Bytes of one HTTP request body (the SDK server's own limit): past it, 413."""
EVENT_BUFFER = 1024
"""Messages kept for one session's event stream (or one listen stream) while nobody reads it: past
it the oldest is dropped, counted, and the first drop is reported on stderr."""
CONNECT_TIMEOUT = 4.0
"""Seconds a remote server gets to take a connection (its name resolved, TCP and TLS done), apart from
``--timeout``: an address that cannot be reached is named in seconds, not after the request's timeout."""
ISSUER_ANSWER = 64 * 1024
"""Bytes of one answer of an authorization server (its metadata, a registration, a token, an introspection,
a token exchange): past it the answer is refused. Real ones are a few kilobytes."""
OUTBOX = 256
"""Lines queued toward an HTTP upstream before the proxy stops reading from its client."""
MAX_PAGES = 1000
"""Pages of an upstream's ``tools/list`` read for one catalog; past it (or a repeated cursor, or the
timeout) the listing fails with an error naming the upstream."""
READ_SIZE = 64 * 1024
"""Bytes read from a pipe at once. asyncio reads 256 KiB, a buffer glibc maps afresh (and unmaps) on
every read when that is above its mmap threshold: three system calls and page faults per message,
some 40 us of a proxied call. Under the threshold, the buffer comes from the heap."""
MMAP_THRESHOLD = 256 * 1024
"""Bytes from which glibc's malloc gives a block a mapping of its own, returned to the system when the
block is freed. Fixed (``fix_mmap_threshold``): glibc otherwise raises it to the size of each large
block freed, so that after one full listing of a large catalog (1.8 MB at 954 tools) every later
block of that size stays in the process's heap for good."""
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number, in glibc's malloc.h
FLUSH_GRACE = 5.0
"""Seconds given to write the last answers to a client at exit."""
MAX_UNANSWERED = 64
"""Requests of one stdio client read and not yet answered (``serve``, ``proxy``, ``gateway``): past it the
client is not read until answers go out, whoever makes them, so a client that never reads its answers
cannot make lazymcp make and keep them without end."""
MAX_ASKED = 64
"""Requests of one server awaiting the client's answer (sampling, elicitation, roots): past it the server
gets an error for each new one at once."""
SERVER_INPUT = 16 * 1024 * 1024
"""Bytes waiting for one gateway server to read them: past it (or when it has read nothing for
``--timeout``) the server fails alone, its calls answered with an error, and the client and the other
servers go on. (The proxy's one server holds its client instead: there is no one else to serve.)"""
REFETCH_EVERY = 1.0
"""Seconds between two fetches of one server's tool list: a server announcing changes faster has them
gathered into one fetch (and one rebuild) a second."""
HELD_CHANGES = 64
"""A server's ``tools/list_changed`` notices held until its new tool list is in place, each then passed on
to the client; past it, later ones are dropped (the client hears of the change all the same)."""
FIRST_LIST_WAIT = 10.0
"""Seconds the gateway's first ``tools/*`` request waits for servers without a manifest to list their
tools (``--first-list-wait``): past it the answer goes out without them, and their tools are announced
with ``list_changed`` when they come."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds one proxy runs with; each has a flag or a constant above."""

    timeout: float | None = DEFAULT_TIMEOUT
    client_timeout: float | None = CLIENT_TIMEOUT
    max_sessions: int = DEFAULT_MAX_SESSIONS
    max_principal_sessions: int | None = None
    """Sessions of one principal at once (``--max-sessions-per-principal``); None: ``max_sessions``."""
    max_body: int = MAX_BODY
    event_buffer: int = EVENT_BUFFER

    @property
    def wait(self) -> float:
        """The longest any one wait may last: the timeout, or a day when it is off."""
        return self.timeout if self.timeout else 86_400.0


T = TypeVar("T")


class DropOldest(Generic[T]):
    """A bounded queue for one reader: a full queue drops its oldest item, counts it, and reports the
    first drop through ``on_first_drop`` (once, so a flood does not flood the log too)."""

    def __init__(self, size: int, on_first_drop: Callable[[], None] | None = None) -> None:
        self._items: deque[T] = deque()
        self._size = size
        self._ready = asyncio.Event()
        self._on_first_drop = on_first_drop
        self.dropped = 0

    def put(self, item: T) -> None:
        if len(self._items) >= self._size:
            self._items.popleft()
            self.dropped += 1
            if self.dropped == 1 and self._on_first_drop is not None:
                self._on_first_drop()
        self._items.append(item)
        self._ready.set()

    async def get(self) -> T:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)


def fix_mmap_threshold() -> None:
    """Fix glibc's mmap threshold at ``MMAP_THRESHOLD`` (a C library without ``mallopt``: nothing to do)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
