"""A shutdown never waits for ever on a loop that swallowed its cancellation (``stop_loops``): Python 3.11's
``wait_for`` can swallow a cancellation that arrives just as its inner wait ends, and a Redis loop then
goes on, so ``await task`` after ``task.cancel()`` would never return."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from lazymcp.run.redis_link import REDIS_WAIT, STOP_TRIES, stop_loops


async def swallowing(times: int, ended: list[str], release: asyncio.Event | None = None) -> None:
    """A loop that goes on after its first ``times`` cancellations, as one whose ``wait_for`` swallowed them
    (until ``release`` is set, when there is one)."""
    swallowed = 0
    try:
        while release is None or not release.is_set():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed == times:
                    raise
                swallowed += 1
    finally:
        ended.append(f"after {swallowed}")


@pytest.mark.anyio
async def test_a_loop_that_swallowed_one_cancellation_is_stopped_by_the_next() -> None:
    ended: list[str] = []
    tasks = [asyncio.create_task(swallowing(times, ended)) for times in (0, 1, 2)]
    await asyncio.sleep(0)
    await stop_loops([*tasks, None])
    assert all(task.done() for task in tasks)
    assert sorted(ended) == ["after 0", "after 1", "after 2"]


@pytest.mark.anyio
async def test_a_loop_that_swallows_every_cancellation_is_left_after_a_bounded_wait() -> None:
    ended: list[str] = []
    release = asyncio.Event()
    stubborn = asyncio.create_task(swallowing(10**9, ended, release))
    await asyncio.sleep(0)
    with anyio.fail_after(STOP_TRIES * REDIS_WAIT * 20):  # returns: that is what is tested, not how soon
        await stop_loops([stubborn])
    assert not stubborn.done() and not ended  # left running: the shutdown goes on without it
    release.set()  # this test's own cleanup: the loop may end now
    stubborn.cancel()
    await asyncio.wait([stubborn])
    assert ended
