"""A request's progress through ``lazymcp proxy --http`` comes before its answer, on the request's own POST
(``lazymcp.run.http_answers``): a real SDK client over HTTP, in both eras, counts every progress notification
by the time its call returns."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from ..conftest import ERAS
from ..raw import http_proxy, mcp_url

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parents[1] / "interop" / "conformance_server.py"
TEST_TIMEOUT = 60.0
"""Bound on one test's whole conversation (the proxy's start, its server's, the calls)."""
CALLS = 3


@pytest.mark.parametrize("mode", ERAS)
async def test_every_progress_notification_arrives_before_the_answer(mode: str) -> None:
    counted: list[int] = []
    async with http_proxy(sys.executable, str(FIXTURE), "--plain") as (port, _):
        with anyio.fail_after(TEST_TIMEOUT):
            async with Client(mcp_url(port), mode=mode) as client:
                for _ in range(CALLS):
                    seen: list[float] = []

                    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                        seen.append(progress)  # noqa: B023 (each call's own list, read before the next)

                    result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
                    assert not result.is_error
                    counted.append(len(seen))
                    assert seen == [0, 50, 100], f"progress seen by the time the answer came: {seen}"
    assert counted == [3] * CALLS
