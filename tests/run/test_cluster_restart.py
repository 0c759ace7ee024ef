"""A Redis restarted under two gateway instances (real ``redis-server`` and gateway processes, raw HTTP):
once the owner's ``/readyz`` says ok again, its sessions are in the new Redis and the other instance's
first request reaches them; and a session record of another type than a string is ignored, not a 500."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from lazymcp.run.cluster import PREFIX

from ..conftest import free_port, until
from ..raw import PID_SERVER, TIMEOUT, config_of, open_session, pid_of, post, request, tool_call
from ..services import instance, needs_redis, redis_server

WHOAMI = tool_call(2, "p__whoami")


async def ready(port: int) -> dict[str, Any]:
    async with httpx2.AsyncClient(trust_env=False, timeout=60) as client:
        return (await client.get(f"http://127.0.0.1:{port}/readyz")).json()


@needs_redis
@pytest.mark.anyio
async def test_after_a_quick_redis_restart_readyz_is_ok_only_once_the_sessions_are_reachable(tmp_path: Path) -> None:
    """Redis stopped and started again at once (empty), between two heartbeats: the owner notices (one
    line), writes its sessions again, and only then says ok; once the other instance says ok too (it may
    have seen Redis gone as well), its first request of the session, whose pooled connection Redis dropped,
    reaches the owner."""
    redis_port, one, two = free_port(), free_port(), free_port()
    config = config_of(tmp_path, p=PID_SERVER)
    log = tmp_path / "a.log"
    with log.open("wb") as written:
        async with AsyncExitStack() as redis:
            await redis.enter_async_context(redis_server(redis_port))
            a = instance(config, tmp_path / "a", one, redis_port, stderr=written.fileno())
            async with a, instance(config, tmp_path / "b", two, redis_port):
                with anyio.fail_after(TIMEOUT * 2):
                    session = await open_session(one)
                    _, own = await post(one, WHOAMI, session)
                    await redis.aclose()
                    await redis.enter_async_context(redis_server(redis_port))  # again, empty

                    def noticed() -> bool:
                        return "Redis restarted" in log.read_text()

                    await until(noticed, within=TIMEOUT, what="the owner noticing the restart")

                    async def ok() -> bool:  # both: an instance that saw Redis go too is not ready until it is back
                        return all([(await ready(port)) == {"status": "ok"} for port in (one, two)])

                    await until(ok, within=TIMEOUT, what="/readyz ok again on both instances")
                    first, through_two = await post(two, WHOAMI, session)
    lines = log.read_text().splitlines()
    assert (first, pid_of(through_two)) == (200, pid_of(own)), (first, through_two)
    assert len([line for line in lines if "Redis restarted" in line]) == 1, lines
    assert "Traceback" not in log.read_text()


@needs_redis
@pytest.mark.anyio
async def test_a_session_key_of_another_type_is_ignored_with_one_line(tmp_path: Path) -> None:
    """A list where a session's record should be: its requests get 404, twice, one line says why, and
    the instance does not count Redis as lost (``/readyz`` stays ok)."""
    from redis.asyncio import Redis

    redis_port, port = free_port(), free_port()
    log = tmp_path / "stderr"
    session_id = "9" * 32
    with log.open("wb") as sink:
        async with redis_server(redis_port):
            store = Redis(port=redis_port)
            await store.rpush(PREFIX + session_id, b"garbage")  # pyright: ignore[reportUnknownMemberType]
            await store.aclose()
            config = config_of(tmp_path, p=PID_SERVER)
            async with instance(config, tmp_path / "cache", port, redis_port, stderr=sink.fileno()):
                with anyio.fail_after(TIMEOUT * 2):
                    statuses = [
                        (await post(port, request(2, "ping"), {"Mcp-Session-Id": session_id}))[0] for _ in range(3)
                    ]
                    readiness = await ready(port)
    text = log.read_text()
    assert statuses == [404, 404, 404]
    assert readiness == {"status": "ok"}
    said = [line for line in text.splitlines() if "ignoring the record of session" in line]
    assert len(said) == 1, text
    assert "Redis lost" not in text and "Traceback" not in text
