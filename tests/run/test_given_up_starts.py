"""A server start given up on while others wait for it or follow it: a session's ``Driver`` whose server is
replaced while it still starts, and a principal's shared process that one of its sessions stops waiting
for. Real server processes (the raw ``pid_server``); where the order of two starts matters, one is held
back until the test lets it go on."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from lazymcp.access.policy import Principal
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.front import Gateway
from lazymcp.gateway.reconfigure import reconfigure
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.run.connections import Connection, LineSink, connect
from lazymcp.run.driver import Driver
from lazymcp.run.shared_servers import Lease, SharedServers
from lazymcp.run.wire import sdk_serializer
from lazymcp.surfaces.options import Options

from ..raw import INIT, PID_SERVER, TIMEOUT


class Held:
    """A real connection whose start waits for ``go`` before it begins."""

    def __init__(self, inner: Connection, go: asyncio.Event) -> None:
        self.inner = inner
        self.go = go

    async def start(self, on_line: LineSink, on_gone: Any) -> None:
        await self.go.wait()
        await self.inner.start(on_line, on_gone)

    def send(self, line: bytes) -> None:
        self.inner.send(line)

    @property
    def buffered(self) -> int:
        return self.inner.buffered

    def pause(self, paused: bool) -> None:
        self.inner.pause(paused)

    @property
    def on_pressure(self) -> Any:
        return self.inner.on_pressure

    @on_pressure.setter
    def on_pressure(self, value: Any) -> None:
        self.inner.on_pressure = value

    async def stop(self) -> None:
        await self.inner.stop()


def entry(**env: str) -> ServerEntry:
    return ServerEntry("b", command=tuple(PID_SERVER), env=env)


@pytest.mark.anyio
async def test_a_server_replaced_while_it_starts_does_not_take_its_successor_down_when_its_start_ends() -> None:
    """``b`` changes to an entry whose start is held, then changes again before that start ends: the third
    entry starts and runs. When the held start ends at last, that connection is stopped alone; the third
    one still answers ``b``'s calls (were it dropped from the session, they would wait for ever)."""
    go = asyncio.Event()

    def connector(server: ServerEntry, *, isolated: bool) -> Connection:
        inner = connect(server, isolated=isolated)
        return Held(inner, go) if server.env.get("HELD") else inner

    core = Gateway([entry()], Options(mode="eager"), serialize=sdk_serializer)
    answers: dict[object, dict[str, Any]] = {}
    arrived = asyncio.Event()

    def to_client(frame: Frame) -> None:
        answers[frame.message.get("id")] = frame.message
        arrived.set()

    async def answer(request_id: int) -> dict[str, Any]:
        while request_id not in answers:
            arrived.clear()
            await arrived.wait()
        return answers.pop(request_id)

    def call(request_id: int) -> bytes:
        params = {"name": "b__whoami", "arguments": {}}
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()

    driver = Driver(core, to_client, connector=connector)
    try:
        async with asyncio.timeout(TIMEOUT):
            await driver.start()
            driver.from_client(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}).encode())
            driver.from_client(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            driver.from_client(call(1))
            first = await answer(1)
            for replacement in (entry(HELD="1"), entry(THIRD="1")):
                driver.apply(lambda now, e=replacement: reconfigure(core, [e], None, {"b": None}, now))
                await asyncio.sleep(0.2)  # the third entry's process started and opened
            go.set()
            await asyncio.sleep(0.2)  # the held start ends, and is stopped
            driver.from_client(call(2))
            second = await answer(2)
    finally:
        await driver.close()
    assert "result" in first and "result" in second, (first, second)
    assert first["result"] != second["result"]  # another process: the third entry's


@pytest.mark.anyio
async def test_a_session_that_stops_waiting_for_a_shared_process_leaves_it_to_the_others_waiting() -> None:
    """Two sessions of one principal wait for the start of their shared process of ``b``; the first is given
    up on meanwhile (its server retired by a configuration change). Once started, the process serves the
    second: it is not stopped as held by no one, which would make the second start another (and, with
    the same happening three times, fail with "stopped while it started")."""
    pool = SharedServers()
    key = (Principal(name="alice"), "b")
    first, second = Lease(pool, key, entry()), Lease(pool, key, entry())
    try:
        async with asyncio.timeout(TIMEOUT):
            starts = [
                asyncio.create_task(lease.start(lambda line: None, lambda reason: None)) for lease in (first, second)
            ]
            await asyncio.sleep(0)  # both wait for the process's start
            await first.stop()
            await asyncio.gather(*starts)
            assert second.pid is not None and first.pid is None
            assert pool.started == 1, f"{pool.started} processes started for one principal's one server"
    finally:
        await second.stop()
