"""Embedding models on the CPU: what lazymcp asks of one (``Encoder``), the threads each may use, and the
turns background embeddings take.

Theory of operation. An embedding model runs on the threads ``LAZYMCP_EMBED_THREADS`` gives it (one by
default). Embedding a new catalog in the background is minutes of CPU for a thousand tools, and several
catalogs or models may want it at once: ``TURNS`` runs one such job at a time, a slice of texts per turn,
and between turns lets a waiting job of a cheaper model go first, so a catalog gets its fastest model's
vectors first. The models themselves load in ``lazymcp.search.semantic``; here only a turn's rows need numpy.
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any, Final, Protocol

THREADS_ENV: Final = "LAZYMCP_EMBED_THREADS"
"""Threads an embedding model may use (default 1: on a shared 2-core machine one thread is faster per query)."""
TURN_TEXTS: Final = 64
"""A background embedding lets a cheaper model's go first after every this many texts (``Turns``)."""


class Encoder(Protocol):
    """A sentence-embedding model: L2-normalized rows for documents, one vector for a query."""

    @property
    def key(self) -> str:
        """Names the model and its weights exactly (part of every cache key)."""
        ...

    def documents(self, texts: list[str]) -> Any: ...

    def query(self, text: str) -> Any: ...


def embed_threads() -> int:
    """``LAZYMCP_EMBED_THREADS``, default 1: the threads each embedding model may use.

    Raises:
        ValueError: it is set to something other than a positive integer (the message names it).
    """
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return 1
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{THREADS_ENV} must be a positive integer, not {raw!r}")
    return int(raw)


class Turns:
    """Background embeddings take turns on the CPU, one at a time, the cheapest model first.

    An encoder may declare ``cost`` (its time per text, relative: MiniLM 1, e5 4; default 1). A job
    embeds ``TURN_TEXTS`` texts per turn and, between turns, gives the CPU to any waiting job of a
    cheaper model: a new catalog gets its fastest model's vectors first, whichever was started first.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: dict[int, tuple[float, int]] = {}
        self._running: int | None = None
        self._order = 0

    def documents(self, encoder: Encoder, texts: list[str]) -> Any:
        np: Any = importlib.import_module("numpy")
        cost = float(getattr(encoder, "cost", 1.0))
        job = id(threading.current_thread())
        rows: list[Any] = []
        for start in range(0, len(texts), TURN_TEXTS):
            self._take(job, cost)
            try:
                rows.append(np.asarray(encoder.documents(texts[start : start + TURN_TEXTS]), dtype=np.float32))
            finally:
                self._give(job)
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def _take(self, job: int, cost: float) -> None:
        with self._cond:
            self._order += 1
            self._waiting[job] = (cost, self._order)
            self._cond.wait_for(lambda: self._running is None and min(self._waiting.values()) == self._waiting[job])
            del self._waiting[job]
            self._running = job

    def _give(self, job: int) -> None:
        with self._cond:
            if self._running == job:
                self._running = None
            self._cond.notify_all()


TURNS: Final = Turns()
"""The one queue every background embedding of this process goes through."""


class InTurns:
    """An encoder whose documents are embedded in ``TURNS``."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.key = encoder.key

    def documents(self, texts: list[str]) -> Any:
        return TURNS.documents(self.encoder, texts)

    def query(self, text: str) -> Any:
        return self.encoder.query(text)
