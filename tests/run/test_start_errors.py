"""What the gateway says when something it needs is not there: a server whose working directory is missing
is reported as that directory, not as a missing program; a session record in Redis that no instance
wrote is ignored with one line, never a 500. Real gateway processes, a real ``redis-server``, raw HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import orjson
import pytest

from lazymcp.access.policy import ANONYMOUS
from lazymcp.run.cluster import PREFIX, principal_hash

from ..conftest import free_port
from ..raw import PID_SERVER, TIMEOUT, config_of, gateway, post, request, tool_call
from ..services import instance, needs_redis, redis_server


@pytest.mark.anyio
async def test_a_server_whose_working_directory_is_missing_is_reported_as_that_directory(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    path = tmp_path / "mcp.json"
    entry = {"command": PID_SERVER[0], "args": PID_SERVER[1:], "cwd": str(missing)}
    path.write_text(json.dumps({"mcpServers": {"p": entry}}))
    async with gateway(path, tmp_path / "cache", "--mode", "proxy") as peer:
        with anyio.fail_after(TIMEOUT * 2):
            await peer.handshake()
            await peer.send(tool_call(2, "p__whoami"))
            answer = await peer.answer(2)
            assert peer.process.stdin is not None
            await peer.process.stdin.aclose()
            stderr = await peer.stderr()
    said = [line for line in stderr.splitlines() if "cannot start" in line]
    assert said and all(f"its working directory {str(missing)!r}: No such file or directory" in s for s in said)
    assert not any(f"{sys.executable!r}: No such file" in line for line in stderr.splitlines())
    assert "Traceback" not in stderr and answer is not None


BAD_RECORDS = {
    "a" * 32: b"not json",
    "b" * 32: b'["only", "two"]',
    "c" * 32: orjson.dumps(["x", 7, "h"]),
    "d" * 32: orjson.dumps(["x", "not a url", principal_hash(ANONYMOUS)]),
    "e" * 32: orjson.dumps(["x", "http://[::1", principal_hash(ANONYMOUS)]),
    "f" * 32: orjson.dumps(["x", "http://127.0.0.1:99999", principal_hash(ANONYMOUS)]),
}


@needs_redis
@pytest.mark.anyio
async def test_a_malformed_session_record_in_redis_is_ignored_with_one_line(tmp_path: Path) -> None:
    """Each record is of this instance's principal, so one that parsed would be forwarded: each request
    gets 404 (no session here), twice, and each record is named once on stderr."""
    from redis.asyncio import Redis

    redis_port, port = free_port(), free_port()
    log = tmp_path / "stderr"
    with log.open("wb") as sink:
        async with redis_server(redis_port):
            store = Redis(port=redis_port)
            for session_id, record in BAD_RECORDS.items():
                await store.set(PREFIX + session_id, record, ex=600)
            await store.aclose()
            config = config_of(tmp_path, p=PID_SERVER)
            async with instance(config, tmp_path / "cache", port, redis_port, stderr=sink.fileno()):
                with anyio.fail_after(TIMEOUT * 2):
                    statuses = [
                        (await post(port, request(2, "ping"), {"Mcp-Session-Id": session_id}))[0]
                        for session_id in [*BAD_RECORDS, *BAD_RECORDS]
                    ]
    assert statuses == [404] * len(BAD_RECORDS) * 2
    text = log.read_text()
    said = [line for line in text.splitlines() if "ignoring the record of session" in line]
    assert len(said) == len(BAD_RECORDS), said
    assert "Traceback" not in text
