"""Messages are decoded once and encoded once: ``jsonrpc.Frame``, and a ``tools/call`` with its answer
through the gateway's driver and core, in this process, over a real server process, with every JSON
decode and encode of the process counted."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.front import Gateway
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.run.driver import Driver
from lazymcp.run.wire import sdk_serializer
from lazymcp.surfaces.options import Options

SERVERS = Path(__file__).parents[1] / "servers"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "counting", "version": "1"}}
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "counting", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def test_a_frame_read_is_written_as_the_bytes_that_came() -> None:
    line = b'{"jsonrpc": "2.0",  "id": 1, "method": "ping"}'
    frame = Frame.read(line)
    assert frame.line is line and frame.is_request and frame.id == 1
    changed = frame.changed(id=2)
    assert changed.message == {"jsonrpc": "2.0", "id": 2, "method": "ping"} and changed.line == orjson.dumps(
        changed.message
    )
    assert Frame.read(b'{\n"jsonrpc": "2.0", "method": "x"\n}').line == b'{"jsonrpc":"2.0","method":"x"}'


def test_a_message_made_too_deep_to_encode_is_refused_or_answered_with_an_error() -> None:
    deep: Any = {}
    for _ in range(300):
        deep = {"a": deep}
    request = Frame({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": deep})
    assert not request.fits()
    answer = Frame({"jsonrpc": "2.0", "id": 5, "result": deep})
    written = jsonrpc.line_of(answer)
    assert written is not None and json.loads(written)["error"]["code"] == -32603
    assert jsonrpc.line_of(Frame({"jsonrpc": "2.0", "method": "n", "params": deep})) is None


class Counts:
    """Every JSON decode and encode of this process, while counting."""

    def __init__(self) -> None:
        self.decoded: list[str] = []
        self.encoded: list[str] = []

    def reset(self) -> tuple[list[str], list[str]]:
        seen = (self.decoded, self.encoded)
        self.decoded, self.encoded = [], []
        return seen


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    counts = Counts()

    def wrap(real: Callable[..., Any], into: Callable[[], list[str]]) -> Callable[..., Any]:
        def counted(value: Any, *args: Any, **kwargs: Any) -> Any:
            into().append(repr(value)[:60])
            return real(value, *args, **kwargs)

        return counted

    for module, name, into in (
        (orjson, "loads", lambda: counts.decoded),
        (orjson, "dumps", lambda: counts.encoded),
        (json, "loads", lambda: counts.decoded),
        (json, "dumps", lambda: counts.encoded),
    ):
        monkeypatch.setattr(module, name, wrap(getattr(module, name), into))
    yield counts


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_call_and_its_answer_through_the_gateway_are_each_decoded_once_and_encoded_once_at_most(
    monkeypatch: pytest.MonkeyPatch, era: str
) -> None:
    entry = ServerEntry("plain", command=(sys.executable, str(SERVERS / "plain_server.py")))
    core = Gateway([entry], Options(mode="eager"), serialize=sdk_serializer)
    written: list[bytes] = []
    arrived = asyncio.Event()

    def to_client(frame: Frame) -> None:  # what the stdio client side writes
        line = jsonrpc.line_of(frame)
        assert line is not None
        written.append(line)
        arrived.set()

    def request(request_id: int, method: str, params: dict[str, Any]) -> bytes:
        if era == "modern":
            params = {**params, "_meta": MODERN}
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()

    async def answer(request_id: int) -> dict[str, Any]:
        while True:
            for line in written:
                message = orjson.loads(line)
                if message.get("id") == request_id and "method" not in message:
                    written.clear()
                    return message
            arrived.clear()
            await arrived.wait()

    driver = Driver(core, to_client)
    try:
        with anyio.fail_after(30):
            await driver.start()
            if era == "legacy":
                driver.from_client(request(0, "initialize", INIT))
                driver.from_client(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            driver.from_client(request(1, "tools/list", {}))
            assert [tool["name"] for tool in (await answer(1))["result"]["tools"]] == [
                "plain__add",
                "plain__echo",
                "plain__upper",
            ]
            call = {"name": "plain__echo", "arguments": {"text": "once"}}
            driver.from_client(request(2, "tools/call", call))  # the first: validators compiled, caches warm
            assert "once" in json.dumps(await answer(2))
            line = request(3, "tools/call", call)
            with counting(monkeypatch) as counts:
                driver.from_client(line)
                call_decoded, call_encoded = counts.reset()
                arrived.clear()
                await arrived.wait()
                answer_decoded, answer_encoded = counts.reset()
            reply = orjson.loads(written[-1])
    finally:
        await driver.close()
    assert reply["id"] == 3 and reply["result"]["content"][0]["text"] == "once"
    assert len(call_decoded) == 1, call_decoded  # the client's line, once
    assert len(call_encoded) == 1, call_encoded  # renamed for its server, once
    assert len(answer_decoded) == 1, answer_decoded  # the server's line, once
    if era == "legacy":
        assert answer_encoded == [], answer_encoded  # written as the server wrote it
    else:
        assert len(answer_encoded) == 1, answer_encoded  # enveloped for the 2026 client, once
        assert reply["result"]["resultType"] == "complete"
