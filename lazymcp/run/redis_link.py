"""How an instance reaches the Redis it shares with its peers (``--redis URL``): a client each call of which
is bounded by ``REDIS_WAIT``, what such a call raises when Redis is out of reach (``REDIS_ERRORS``), and
where that Redis is, said without the password a URL may carry.

A call is retried once, and only when its pooled connection was found closed (Redis restarted, or a
proxy dropped an idle connection): the retry opens a new one, so the first calls after a restart reach
the new Redis instead of failing on a socket it dropped. A timeout is never retried. Each new connection
asks the server's ``run_id``, so that a restarted (empty) Redis is told from the one the instance wrote to.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lazymcp.local.extras import install_hint
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


STOP_TRIES = 3
"""Cancellations sent to a Redis loop's task before it is left to the event loop's end."""


async def stop_loops(tasks: Iterable[asyncio.Task[Any] | None]) -> None:
    """Cancel the tasks of Redis loops and wait for them, a bounded time. Python 3.11's ``wait_for`` can
    swallow a cancellation that arrives as its inner wait ends, and such a loop then goes on: the
    cancellation is sent again, ``STOP_TRIES`` times at most, ``REDIS_WAIT`` apart; a task still running
    after that is left to the event loop's end, so that a shutdown never waits on it for ever."""
    pending = {task for task in tasks if task is not None and not task.done()}
    for _ in range(STOP_TRIES):
        if not pending:
            return
        for task in pending:
            task.cancel()
        done, pending = await asyncio.wait(pending, timeout=REDIS_WAIT)
        for task in done:  # retrieved, so that nothing is said of it at exit
            if not task.cancelled():
                task.exception()


def connect(url: str, on_server: Callable[[str], None] | None = None) -> Redis:
    """A client of the Redis at ``url``, each call bounded by ``REDIS_WAIT``; ``on_server`` is told the
    ``run_id`` of the server each new connection reaches.

    Raises:
        ConfigError: the ``redis`` client is not installed, or the URL is not one.
    """
    try:
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import ConnectionError as Dropped
        from redis.exceptions import ResponseError as Refused
    except ImportError:
        raise ConfigError(f"--redis needs the redis client: {install_hint('redis')}") from None

    async def connected(connection: Any) -> None:
        await connection.on_connect()
        if on_server is not None:
            await connection.send_command("INFO", "server")
            try:
                info = await connection.read_response()
            except Refused:  # INFO renamed away (some hosted Redis): restarts go unseen, calls still work
                info = b""
            on_server(run_id(info))

    try:
        return Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            url,
            socket_timeout=REDIS_WAIT,
            socket_connect_timeout=REDIS_WAIT,
            retry=Retry(NoBackoff(), 1, supported_errors=(Dropped,)),
            redis_connect_func=connected,
        )
    except ValueError as exc:
        raise ConfigError(f"--redis {url!r}: {exc}") from None


def wrong_type(exc: BaseException) -> bool:
    """Is ``exc`` Redis saying a key holds another type than the command reads (the key's fault, not
    Redis's: it answered)?"""
    return type(exc).__name__ == "ResponseError" and str(exc).startswith("WRONGTYPE")


def run_id(info: object) -> str:
    """The ``run_id`` an ``INFO server`` answer names (new at each start of a Redis); empty when none."""
    text = info.decode(errors="replace") if isinstance(info, bytes) else str(info)
    for row in text.splitlines():
        key, _, value = row.partition(":")
        if key == "run_id":
            return value.strip()
    return ""


def where(url: str) -> str:
    """The host and port of the Redis at ``url``, to name it in a log line (never its password)."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 6379}"
