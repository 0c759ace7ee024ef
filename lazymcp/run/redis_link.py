"""How an instance reaches the Redis it shares with its peers (``--redis URL``): a client each call of which
is bounded by ``REDIS_WAIT`` and never retried, what such a call raises when Redis is out of reach
(``REDIS_ERRORS``), and where that Redis is, said without the password a URL may carry."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from lazymcp.protocol.errors import ConfigError

if TYPE_CHECKING:
    from redis.asyncio import Redis

REDIS_WAIT = 1.0
"""Seconds to connect to Redis, and to read one answer of its; a call as a whole waits twice that."""


def _redis_errors() -> tuple[type[BaseException], ...]:
    try:
        from redis.exceptions import RedisError
    except ImportError:
        return (OSError, asyncio.TimeoutError)
    return (RedisError, OSError, asyncio.TimeoutError)


REDIS_ERRORS = _redis_errors()
"""What a call to Redis that cannot reach it raises."""


def connect(url: str) -> Redis:
    """A client of the Redis at ``url``, each call bounded by ``REDIS_WAIT`` and never retried.

    Raises:
        ConfigError: the ``redis`` client is not installed, or the URL is not one.
    """
    try:
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
    except ImportError:
        raise ConfigError("--redis needs the redis client: pip install 'lazymcp[redis]'") from None
    try:
        return Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            url,
            socket_timeout=REDIS_WAIT,
            socket_connect_timeout=REDIS_WAIT,
            retry=Retry(NoBackoff(), 0),
        )
    except ValueError as exc:
        raise ConfigError(f"--redis {url!r}: {exc}") from None


def where(url: str) -> str:
    """The host and port of the Redis at ``url``, to name it in a log line (never its password)."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 6379}"
