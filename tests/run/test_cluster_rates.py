"""Rate limits counted across gateway instances through a real Redis (``lazymcp.run.cluster_rates``):
two counters in this process synced step by step, a Redis out of reach, and two gateway processes whose
calls for one principal together hit 429 at the limit, and recover."""

from __future__ import annotations

import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from lazymcp.access.ratelimit import Rate
from lazymcp.run.cluster import REDIS_ERRORS, connect
from lazymcp.run.cluster_rates import PREFIX, SharedCounter

from ..conftest import SERVERS, free_port, until
from ..raw import TIMEOUT, http, open_session, post, tool_call
from ..services import instance, needs_redis, redis_server

PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]  # add, echo, upper
FOUR = Rate(4, 60.0)
START = 6000.0
"""The wall clock when the counters are made: the start of a minute, window 100 of a 60 s rate."""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def counter_of(port: int, clock: Clock) -> SharedCounter:
    counter = SharedCounter(wall=lambda: START + clock.now, clock=clock)
    counter.redis, counter.errors = connect(f"redis://127.0.0.1:{port}/0"), REDIS_ERRORS
    return counter


@needs_redis
@pytest.mark.anyio
async def test_instances_together_let_through_the_limit_and_a_new_one_learns_the_count() -> None:
    """One call on ``b``, three on ``a``: once both synced, neither lets a fifth through; one refill
    later, one more goes. A third instance's first call is the tolerance: its first sync charges it."""
    port, clock = free_port(), Clock()
    async with redis_server(port):
        a, b, c = counter_of(port, clock), counter_of(port, clock), counter_of(port, clock)
        with anyio.fail_after(TIMEOUT):
            first = [b.take("alice", FOUR, clock.now)] + [a.take("alice", FOUR, clock.now) for _ in range(3)]
            await a.sync()
            await b.sync()  # b learns of a's three
            await a.sync()  # a learns of b's one
            refused = [a.take("alice", FOUR, clock.now), b.take("alice", FOUR, clock.now)]
            other = a.take("bob", FOUR, clock.now)
            fresh = c.take("alice", FOUR, clock.now)
            await c.sync()
            after_sync = c.take("alice", FOUR, clock.now)
            clock.now = 15.0  # one call back in each bucket
            refilled = [a.take("alice", FOUR, clock.now), a.take("alice", FOUR, clock.now)]
            for counter in (a, b, c):
                assert counter.redis is not None
                await counter.redis.aclose()
    assert first == [0.0, 0.0, 0.0, 0.0]
    assert refused[0] > 0 and refused[1] > 0  # alone, a would let one more through and b three
    assert other == 0.0  # each principal its own count
    assert fresh == 0.0 and after_sync > 0
    assert refilled[0] == 0.0 and refilled[1] > 0


@needs_redis
@pytest.mark.anyio
async def test_a_new_instance_is_charged_the_part_of_the_previous_window_still_within_a_period() -> None:
    port, clock = free_port(), Clock()
    async with redis_server(port):
        a, b = counter_of(port, clock), counter_of(port, clock)
        with anyio.fail_after(TIMEOUT):
            clock.now = 50.0  # late in window 100
            taken = [a.take("alice", FOUR, clock.now) for _ in range(4)]
            await a.sync()
            clock.now = 62.0  # window 101, 2 s in: 4 * 58/60 of the old calls count, 3 whole ones
            b.take("alice", FOUR, clock.now)
            await b.sync()
            waits = [b.take("alice", FOUR, clock.now) for _ in range(2)]
            for counter in (a, b):
                assert counter.redis is not None
                await counter.redis.aclose()
    assert taken == [0.0] * 4
    assert waits[0] > 0  # 4 - 1 - 3 = 0 left; without the previous window, three more would go


@pytest.mark.anyio
async def test_with_redis_out_of_reach_an_instance_counts_alone_and_owes_its_calls() -> None:
    """Nothing listens at the Redis address: a sync fails within its bound and says so, the calls are
    counted here, and kept to be written when Redis answers."""
    clock, failures = Clock(), list[BaseException]()
    counter = counter_of(free_port(), clock)
    counter.on_error = failures.append
    with anyio.fail_after(TIMEOUT):
        taken = [counter.take("alice", FOUR, clock.now) for _ in range(5)]
        await counter.sync()
        await counter.sync()
        assert counter.redis is not None
        await counter.redis.aclose()
    assert taken[:4] == [0.0] * 4 and taken[4] > 0
    assert len(failures) == 2
    assert counter._owed == {("alice", 100): (FOUR, 4)}  # pyright: ignore[reportPrivateUsage]


def plain_config(tmp_path: Path) -> Path:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"math": {"command": PLAIN[0], "args": PLAIN[1:]}}}))
    return config


@needs_redis
@pytest.mark.anyio
async def test_a_principals_calls_over_two_instances_hit_429_at_the_limit_and_recover(tmp_path: Path) -> None:
    """``--rate-limit 4/min``, alice's calls alternating between two instances: four go through, the
    next on each instance gets 429 (alone, each would let two more through); bob is not counted with
    her; a refill later, a call goes through again."""
    redis_port, one, two = free_port(), free_port(), free_port()
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-alice-1\nbob: tok-bob-2\n")
    tokens.chmod(0o600)
    flags = ["--token-file", str(tokens), "--rate-limit", "4/min", "--mode", "proxy"]
    config = plain_config(tmp_path)
    echo = tool_call(2, "math__echo", text="hi")
    alice, bob = {"Authorization": "Bearer tok-alice-1"}, {"Authorization": "Bearer tok-bob-2"}
    async with redis_server(redis_port):
        redis = connect(f"redis://127.0.0.1:{redis_port}/0")
        async with instance(config, tmp_path / "a", one, redis_port, flags):
            async with instance(config, tmp_path / "b", two, redis_port, flags):
                with anyio.fail_after(TIMEOUT * 4):
                    sessions = {one: await open_session(one, alice), two: await open_session(two, alice)}
                    statuses: list[int] = []

                    async def counted() -> bool:
                        keys: list[Any] = await redis.keys(PREFIX + "*")  # pyright: ignore[reportUnknownMemberType]
                        values: list[Any] = [await redis.get(key) for key in keys]
                        return sum(int(value) for value in values) >= len(statuses)

                    for port in (one, two, one, two):
                        statuses.append((await post(port, echo, sessions[port]))[0])
                        await until(counted, within=TIMEOUT, what="the call counted in Redis")
                        await anyio.sleep(1.0)  # ten syncs of the other instance
                    body = json.dumps(echo).encode()
                    refused = [await http(port, "POST", body, sessions[port]) for port in (one, two)]
                    for_bob = await post(two, echo, await open_session(two, bob))
                    later: list[int] = []

                    async def through() -> bool:
                        later.append((await post(one, echo, sessions[one]))[0])
                        return later[-1] == 200

                    await until(through, within=TIMEOUT * 2, what="a call once the bucket refills")
        await redis.aclose()
    assert statuses == [200, 200, 200, 200]
    assert [status for status, _, _ in refused] == [429, 429]
    assert all(int(headers["retry-after"]) >= 1 for _, headers, _ in refused)
    assert for_bob[0] == 200
    assert later[-1] == 200


@needs_redis
@pytest.mark.anyio
async def test_with_redis_stopped_an_instance_counts_alone_and_never_hangs(tmp_path: Path) -> None:
    """Redis stopped under a running instance: its calls are still answered at once, counted here (two
    go through, the third gets 429), and ``/readyz`` says degraded."""
    redis_port, port = free_port(), free_port()
    flags = ["--rate-limit", "2/min", "--mode", "proxy"]
    echo = tool_call(2, "math__echo", text="hi")
    async with AsyncExitStack() as redis:
        await redis.enter_async_context(redis_server(redis_port))
        async with instance(plain_config(tmp_path), tmp_path / "a", port, redis_port, flags):
            with anyio.fail_after(TIMEOUT * 2):
                session = await open_session(port)
                await redis.aclose()  # Redis stops
                statuses = [(await post(port, echo, session))[0] for _ in range(3)]

                async def degraded() -> bool:
                    async with httpx2.AsyncClient(trust_env=False, timeout=60) as client:
                        answer = await client.get(f"http://127.0.0.1:{port}/readyz")
                    return answer.json()["status"] == "degraded"

                await until(degraded, within=TIMEOUT, what="/readyz saying degraded")
    assert statuses == [200, 200, 429]
