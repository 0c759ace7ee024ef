"""A request's progress through ``lazymcp proxy --http`` comes before its answer, on the request's own POST
(``lazymcp.run.http_answers``): on the wire, the POST's event stream carries the call's progress, in order,
then its answer; a real SDK client over HTTP, in both eras, counts every progress notification by the time
its call returns."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ..conftest import ERAS
from ..raw import MODERN_HEADERS, http, http_proxy, mcp_url, modern_call, open_session, tool_call

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parents[1] / "interop" / "conformance_server.py"
TEST_TIMEOUT = 60.0
"""Bound on one test's whole conversation (the proxy's start, its server's, the calls)."""
CALLS = 3


def events_of(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an event-stream body, in the order they came."""
    rows = body.decode().splitlines()
    return [json.loads(row[5:]) for row in rows if row.startswith("data:") and row[5:].strip()]


@pytest.mark.parametrize("mode", ERAS)
async def test_the_posts_event_stream_carries_the_progress_in_order_then_the_answer(mode: str) -> None:
    async with http_proxy(sys.executable, str(FIXTURE), "--plain") as (port, _):
        with anyio.fail_after(TEST_TIMEOUT):
            if mode == "legacy":
                headers = await open_session(port)
                call = tool_call(2, "test_tool_with_progress")
                call["params"]["_meta"] = {"progressToken": "mine"}
            else:
                headers, call = MODERN_HEADERS, modern_call(2, "test_tool_with_progress", token="mine")
            answers = [await http(port, "POST", json.dumps(call).encode(), headers) for _ in range(CALLS)]
    for status, fields, body in answers:
        assert status == 200 and fields["content-type"].startswith("text/event-stream"), (status, fields, body)
        *progress, answer = events_of(body)
        told = [(event["method"], event["params"]["progressToken"], event["params"]["progress"]) for event in progress]
        assert told == [("notifications/progress", "mine", value) for value in (0, 50, 100)], events_of(body)
        assert answer["id"] == 2 and "executed successfully" in answer["result"]["content"][0]["text"], answer


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
