"""Rate limits counted across the gateway instances that share a Redis (``--redis``).

A call never waits on Redis: ``SharedCounter.take`` is ``MemoryCounter.take`` on this instance's own
token buckets, and remembers each call it lets through. Every ``SYNC_EVERY`` seconds (``sync``, one
round trip for at most ``SYNC_KEYS`` buckets) the instance adds those calls to a count per bucket and
fixed window in Redis (``INCRBY`` and ``EXPIRE`` of ``lazymcp:rate:<hash of the key>:<period>:<window>``,
windows of the rate's period on the wall clock) and reads back the total: what grew beyond its own calls
since its last read, the other instances let through, and it is charged to the local bucket. Each
instance's bucket is so a replica of one bucket per principal, filled at the rate everywhere and emptied
by every instance's calls: together the instances let through the limit, plus at most what the others let
through in one sync interval (``SYNC_EVERY`` and a round trip) before this one hears of it. A bucket an
instance has not counted yet is charged, at its first sync, with the current window's count and the
previous window's in proportion to what of it is still within one period (a sliding-window estimate).

Redis unreachable: the instance counts alone (each instance then lets through up to the limit), keeps the
calls it owes Redis (at most ``MAX_OWED`` buckets) and writes them once Redis answers again. The cluster
(``lazymcp.run.cluster``) runs ``sync_forever`` and counts its failures towards ``degraded``.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lazymcp.access.ratelimit import MemoryCounter, Rate

if TYPE_CHECKING:
    from redis.asyncio import Redis

SYNC_EVERY = 0.1
"""Seconds between two syncs of the counts with Redis (only while some bucket was used)."""
SYNC_KEYS = 1_000
"""Buckets synced in one round trip; the least recently used wait for the next."""
MAX_OWED = 10_000
"""Buckets whose calls are kept for Redis while it is out of reach; past it the oldest are dropped."""
PREFIX = "lazymcp:rate:"

Window = tuple[str, int]
"""A bucket's key and the number of its window."""


class SharedCounter:
    """A ``Counter`` whose buckets are charged with the calls every instance lets through."""

    def __init__(self, wall: Callable[[], float] = time.time, clock: Callable[[], float] = time.monotonic) -> None:
        self.local = MemoryCounter()
        self.redis: Redis | None = None
        self.errors: tuple[type[BaseException], ...] = (OSError, asyncio.TimeoutError)
        self.on_error: Callable[[BaseException], None] = lambda exc: None
        self.on_ok: Callable[[], None] = lambda: None
        self.wait = 2.0
        """Seconds one sync may take as a whole (the cluster sets it from ``REDIS_WAIT``)."""
        self.clock = clock
        self._offset = wall() - clock()
        self._active: OrderedDict[str, tuple[Rate, float]] = OrderedDict()
        """Buckets used lately: key -> (rate, last use)."""
        self._owed: dict[Window, tuple[Rate, int]] = {}
        """Calls let through here and not yet added in Redis."""
        self._seen: dict[Window, tuple[float, int]] = {}
        """The total last read of a window: (its period, the total)."""

    def window(self, rate: Rate, now: float) -> int:
        """The number of the fixed window ``now`` (monotonic) falls in, the same in every instance."""
        return int((now + self._offset) // rate.period)

    def take(self, key: str, rate: Rate, now: float) -> float:
        wait = self.local.take(key, rate, now)
        self._active[key] = (rate, now)
        self._active.move_to_end(key)
        if len(self._active) > self.local.max_keys:
            self._active.popitem(last=False)
        if wait == 0:
            window = (key, self.window(rate, now))
            _, calls = self._owed.get(window, (rate, 0))
            self._owed[window] = (rate, calls + 1)
        return wait

    async def sync_forever(self) -> None:
        while True:
            await asyncio.sleep(SYNC_EVERY)
            await self.sync()

    def _batch(self, now: float) -> list[tuple[Window, Rate, int]]:
        """What one sync writes and reads: the calls owed, and the current window of each bucket in use."""
        while self._active:  # buckets not used for two periods are full again: nothing to learn of them
            key, (rate, last) = next(iter(self._active.items()))
            if now - last <= 2 * rate.period:
                break
            del self._active[key]
        batch: dict[Window, tuple[Rate, int]] = {}
        for key, (rate, _) in reversed(self._active.items()):
            if len(batch) >= SYNC_KEYS:
                break
            current = self.window(rate, now)
            for number in (current, current - 1):
                window = (key, number)
                owed = self._owed.pop(window, None)
                if owed is not None:
                    batch[window] = owed
                elif number == current or (key, current) not in self._seen:  # a new bucket: the previous too
                    batch[window] = (rate, 0)
        for window in list(self._owed)[: max(0, SYNC_KEYS - len(batch))]:  # calls of buckets no longer in use
            batch[window] = self._owed.pop(window)
        return [(window, rate, calls) for window, (rate, calls) in batch.items()]

    async def sync(self) -> None:
        """Add this instance's calls in Redis and charge the local buckets with the others'."""
        redis = self.redis
        now = self.clock()
        batch = self._batch(now)
        if redis is None or not batch:
            return
        try:
            async with redis.pipeline(transaction=False) as pipe:
                for (key, number), rate, calls in batch:
                    name = _name(key, rate, number)
                    if calls:
                        pipe.incrby(name, calls)
                        pipe.expire(name, int(2 * rate.period) + 1)
                    else:
                        pipe.get(name)
                answers: list[Any] = await asyncio.wait_for(pipe.execute(), self.wait)
        except self.errors as exc:
            self._owe_again(batch)
            self.on_error(exc)
            return
        self.on_ok()
        self._charge(batch, answers, self.clock())

    def _charge(self, batch: list[tuple[Window, Rate, int]], answers: list[Any], now: float) -> None:
        at = 0
        for window, rate, calls in batch:
            answer = answers[at]
            at += 2 if calls else 1
            try:
                total = int(answer or 0)
            except (TypeError, ValueError):
                continue
            key, number = window
            before = self._seen.get(window)
            others = total - calls - (before[1] if before is not None else 0)
            self._seen[window] = (rate.period, total)
            if before is None and number < self.window(rate, now):  # the part still within one period
                within = 1.0 - ((now + self._offset) / rate.period - (number + 1))
                others = int(others * max(0.0, within))
            if others > 0:
                self.local.charge(key, rate, others, now)
        wall = now + self._offset
        for window, (period, _) in list(self._seen.items()):
            if (window[1] + 2) * period < wall:
                del self._seen[window]

    def _owe_again(self, batch: list[tuple[Window, Rate, int]]) -> None:
        for window, rate, calls in batch:
            if calls:
                _, more = self._owed.get(window, (rate, 0))
                self._owed[window] = (rate, calls + more)
        while len(self._owed) > MAX_OWED:
            del self._owed[next(iter(self._owed))]


def _name(key: str, rate: Rate, number: int) -> str:
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{PREFIX}{digest}:{rate.period:g}:{number}"
