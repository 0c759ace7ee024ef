"""A request's progress through ``lazymcp proxy --http`` comes before its answer, on the request's own POST
(``lazymcp.run.http_answers``): a real SDK client over HTTP, in both eras, counts every progress notification
by the time its call returns."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from ..conftest import ERAS, free_port, until_listening

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parents[1] / "interop" / "conformance_server.py"
HOST = "127.0.0.1"
TEST_TIMEOUT = 60.0
"""Bound on one test's whole conversation (the proxy's start, its server's, the calls)."""
STOP_TIMEOUT = 10.0
CALLS = 3


@asynccontextmanager
async def proxy_over_http(log: Path) -> AsyncIterator[str]:
    """``lazymcp proxy --http`` in front of the conformance fixture (which reports progress 0, 50, 100)."""
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "proxy", "--http", f"{HOST}:{port}"]
    command += ["--", sys.executable, str(FIXTURE), "--plain"]
    with log.open("wb") as log_file:
        process = await anyio.open_process(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file
        )
        try:
            await until_listening(port, process, within=TEST_TIMEOUT / 2)
            yield f"http://{HOST}:{port}/mcp"
        finally:
            if process.returncode is None:
                process.terminate()
            try:
                with anyio.fail_after(STOP_TIMEOUT):
                    await process.wait()
            except TimeoutError:
                process.kill()
                raise
            finally:
                await process.aclose()


@pytest.mark.parametrize("mode", ERAS)
async def test_every_progress_notification_arrives_before_the_answer(mode: str, tmp_path: Path) -> None:
    counted: list[int] = []
    async with proxy_over_http(tmp_path / "proxy.log") as url:
        with anyio.fail_after(TEST_TIMEOUT):
            async with Client(url, mode=mode) as client:
                for _ in range(CALLS):
                    seen: list[float] = []

                    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                        seen.append(progress)  # noqa: B023 (each call's own list, read before the next)

                    result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
                    assert not result.is_error
                    counted.append(len(seen))
                    assert seen == [0, 50, 100], f"progress seen by the time the answer came: {seen}"
    assert counted == [3] * CALLS
