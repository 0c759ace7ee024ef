"""How many ``tools/call`` requests a principal may send: rates, and the counters that keep them.

A ``Rate`` is ``N/s`` or ``N/min``: a token bucket of ``N`` that fills at that rate, so a principal may
send a burst of ``N`` calls at once, then one each ``period / N``. ``--rate-limit`` sets one rate for
each principal's calls (meta-tools included); a server entry's ``"rateLimit"`` sets another for each
principal's calls to that server's tools. The gateway's core asks ``Limiter.admit`` before a call goes
on; a refused call is answered with a ``RATE_LIMITED`` error whose data says when to retry (over HTTP
the front sends it with status 429 and ``Retry-After``). See spec/gateway.md, "Rate limits".

The counting is behind ``Counter``, one method; ``MemoryCounter`` counts in this process. Several
gateway instances sharing a Redis (``--redis``) count with ``lazymcp.run.cluster_rates.SharedCounter``,
which keeps a ``MemoryCounter`` and charges it with the calls the other instances let through.
"""

from __future__ import annotations

import json
import math
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from lazymcp.protocol.errors import ConfigError

_RATE = re.compile(r"\s*([1-9][0-9]{0,8})\s*/\s*(s|sec|second|min|minute)\s*")
_PERIODS = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0}
MAX_KEYS = 100_000
"""Buckets a ``MemoryCounter`` keeps; past it the least recently used goes (it was full, or nearly)."""


@dataclass(frozen=True, slots=True)
class Rate:
    """``count`` calls per ``period`` seconds, in bursts of up to ``count``."""

    count: int
    period: float

    def __str__(self) -> str:
        return f"{self.count}/{'s' if self.period == 1.0 else 'min'}"


def parse_rate(text: object, where: str) -> Rate:
    """``N/s`` or ``N/min`` as a ``Rate``.

    Raises:
        ConfigError: anything else (one line naming ``where``).
    """
    found = _RATE.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        raise ConfigError(f"{where}: expected a rate like '10/s' or '100/min', got {text!r}")
    return Rate(int(found.group(1)), _PERIODS[found.group(2)])


class Counter(Protocol):
    """Keeps the buckets: one method, so a counter shared by several instances can take this one's place."""

    def take(self, key: str, rate: Rate, now: float) -> float:
        """Take one call from ``key``'s bucket: 0 when it had one, else the seconds until it has."""
        ...


class MemoryCounter:
    """Token buckets in this process, at most ``MAX_KEYS`` of them (``now``: monotonic seconds)."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        """Key -> (calls left, when counted)."""

    def take(self, key: str, rate: Rate, now: float) -> float:
        left, then = self._buckets.pop(key, (float(rate.count), now))
        left = min(float(rate.count), left + max(0.0, now - then) * rate.count / rate.period)
        if left >= 1.0:
            left -= 1.0
            wait = 0.0
        else:
            wait = (1.0 - left) * rate.period / rate.count
        self._keep(key, left, now)
        return wait

    def charge(self, key: str, rate: Rate, calls: int, now: float) -> None:
        """Take ``calls`` that another instance let through from ``key``'s bucket, which may go below
        empty (down to minus one burst): the calls to come then wait for the ones already let through."""
        left, then = self._buckets.pop(key, (float(rate.count), now))
        left = min(float(rate.count), left + max(0.0, now - then) * rate.count / rate.period)
        self._keep(key, max(-float(rate.count), left - calls), now)

    def _keep(self, key: str, left: float, now: float) -> None:
        self._buckets[key] = (left, now)
        if len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Limited:
    """A call refused: which limit (``what``) and the seconds until one more is let through."""

    what: str
    retry_after: float

    @property
    def seconds(self) -> int:
        """Whole seconds to wait (``Retry-After``), at least 1."""
        return max(1, math.ceil(self.retry_after))


@dataclass(frozen=True, slots=True)
class Limiter:
    """The rates of one gateway and the counter they share, for every session of every principal."""

    counter: Counter
    rate: Rate | None = None
    """Each principal's calls (``--rate-limit``)."""
    servers: tuple[tuple[str, Rate], ...] = ()
    """Each principal's calls to one server's tools (its entry's ``rateLimit``)."""

    def __bool__(self) -> bool:
        return self.rate is not None or bool(self.servers)

    def admit(self, principal: str, now: float) -> Limited | None:
        """Count one ``tools/call`` of ``principal`` (any: a meta-tool's, an unknown tool's); None lets it on."""
        if self.rate is None:
            return None
        wait = self.counter.take(principal, self.rate, now)
        return Limited(f"{self.rate} per principal (--rate-limit)", wait) if wait > 0 else None

    def admit_server(self, principal: str, server: str, now: float) -> Limited | None:
        """Count one call of ``principal`` to a tool of ``server``; None lets it on."""
        for name, rate in self.servers:
            if name == server:
                wait = self.counter.take(json.dumps([principal, name]), rate, now)  # never a joined text
                if wait > 0:
                    return Limited(f"{rate} per principal for server {name!r} (rateLimit)", wait)
        return None
