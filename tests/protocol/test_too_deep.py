"""Messages too deep to write again, and what the operator is told: the gateway and the proxy answer in
words, under ids their peers know, and never stop a session over them.

The process tests drive a real ``lazymcp gateway`` over its stdio and import nothing of lazymcp, so they
run against any checkout (``PYTHONPATH=<checkout>`` reaches the subprocess too); the core tests drive
``lazymcp.gateway.front.Gateway`` directly. Every wait is bounded by ``anyio.fail_after``.

Messages nested deeper than the JSON encoder takes (orjson writes at most 254 levels and reads 1024)
can be read but not written again: whatever the gateway renames on its way (a gathered list's part, a
server's request to the client, the client's answer to it) must then be answered in words, under an id
its peer knows, and must not stop the session.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

SERVERS = Path(__file__).parents[1] / "servers"
TIMEOUT = 30
QUICK = 10
"""Seconds an answer that needs no server's help may take on this shared machine."""
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "peer", "version": "1"}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
DEPTH = 300
"""Levels of nesting orjson reads (at most 1024) but cannot write again (at most 254)."""
DEEP = "[" * DEPTH + "]" * DEPTH


def request(request_id: object, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


class Peer:
    """A raw JSON-RPC client on a gateway process's pipes."""

    def __init__(self, process: Process) -> None:
        assert process.stdout is not None and process.stdin is not None
        self.process = process
        self.out = BufferedByteReceiveStream(process.stdout)
        self.seen: list[dict[str, Any]] = []

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def send(self, *messages: dict[str, Any]) -> None:
        await self.write(b"".join(line(message) for message in messages))

    async def read(self) -> dict[str, Any]:
        message = json.loads(await self.out.receive_until(b"\n", 1 << 26))
        self.seen.append(message)
        return message

    async def answer(self, request_id: object) -> dict[str, Any]:
        """The answer to ``request_id`` (what comes before it is kept in ``seen``)."""
        while True:
            message = await self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def asked(self, method: str) -> dict[str, Any]:
        """The next request of ``method`` the gateway sends the client."""
        while True:
            message = await self.read()
            if message.get("method") == method and "id" in message:
                return message


def config_of(tmp_path: Path, **servers: list[str]) -> Path:
    path = tmp_path / "mcp.json"
    entries = {name: {"command": command[0], "args": command[1:]} for name, command in servers.items()}
    path.write_text(json.dumps({"mcpServers": entries}))
    return path


@asynccontextmanager
async def gateway(config: Path, cache: Path, *flags: str) -> AsyncIterator[Peer]:
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), *flags]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(cache)}
    async with await anyio.open_process(command, env=env) as process:
        try:
            yield Peer(process)
        finally:
            if process.returncode is None:
                process.kill()


def server(name: str, *args: str) -> list[str]:
    return [sys.executable, str(SERVERS / name), *args]


# --- a gathered list whose params nest too deeply ------------------------------------------------------


@pytest.mark.anyio
async def test_a_gathered_list_whose_params_nest_too_deeply_is_answered_under_the_clients_id(
    tmp_path: Path,
) -> None:
    config = config_of(tmp_path, h=server("hostile_upstream.py"))
    deep = b'{"jsonrpc":"2.0","id":9,"method":"prompts/list","params":{"x":' + DEEP.encode() + b"}}\n"
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache") as peer:
            await peer.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/list"))
            await peer.answer(1)  # the server has listed its tools: its handshake is done
            await peer.write(deep)
            await peer.send(request(10, "ping"))
            await peer.answer(10)
            leaked = [m for m in peer.seen if str(m.get("id", "")).startswith("lazymcp-gateway-list-")]
            answered = [m for m in peer.seen if m.get("id") == 9 and "method" not in m]
            if not answered:
                with anyio.move_on_after(QUICK):
                    answered = [await peer.answer(9)]
    assert leaked == [], f"the client got answers under ids it never sent: {leaked}"
    assert answered, "the client's prompts/list was never answered"


def _ready_gateway() -> Any:
    """A gateway core over one server ``a`` (listed from its manifest), past the client's handshake and
    the server's (it is started by a first call)."""
    from lazymcp.gateway.config import parse_config
    from lazymcp.gateway.front import Gateway
    from lazymcp.protocol.jsonrpc import parse, request_line, result_line
    from lazymcp.tools.manifest import Manifest

    config = parse_config({"mcpServers": {"a": {"command": "x"}}})
    tool = {"name": "echo", "inputSchema": {"type": "object"}}
    core = Gateway(config.servers, manifests={"a": Manifest((tool,), 0.0)}, mode="describe")
    hello = {**INIT, "capabilities": {"elicitation": {}}}
    core.from_client(request_line(0, "initialize", hello), 0.0)
    core.from_client(request_line(1, "tools/call", {"name": "a__echo", "arguments": {}}), 0.0)
    [init] = core.started("a", 0.0)
    server_hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "a"}}
    core.from_server("a", result_line(parse(init.data)["id"], server_hello), 0.0)
    return core


def _to_client(actions: list[Any]) -> list[dict[str, Any]]:
    """What the client reads of ``actions``, written as the stdio side writes them."""
    from lazymcp.core.actions import ToClient
    from lazymcp.protocol.jsonrpc import line_of

    written = [line_of(action.frame) for action in actions if isinstance(action, ToClient)]
    return [json.loads(data) for data in written if data is not None]


def test_the_gateway_core_answers_a_too_deep_gathered_list_under_the_clients_id() -> None:
    core = _ready_gateway()
    deep = b'{"jsonrpc":"2.0","id":9,"method":"prompts/list","params":{"x":' + DEEP.encode() + b"}}"
    written = _to_client(core.from_client(deep, 0.0))
    assert [message.get("id") for message in written] == [9], written
    assert core.passthrough.gathers == {}


# --- a server's request, or the client's answer to one, that nests too deeply -------------------------


@pytest.mark.anyio
async def test_a_too_deep_answer_to_a_servers_request_does_not_stall_the_clients_next_request(
    tmp_path: Path,
) -> None:
    config = config_of(tmp_path, s=server("asking_server.py"))
    init: dict[str, Any] = {**INIT, "capabilities": {"elicitation": {}}}
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as peer:
            await peer.send(request(0, "initialize", init), INITIALIZED, request(1, "tools/list"))
            await peer.answer(1)
            await peer.send(request(2, "tools/call", {"name": "s__ask", "arguments": {}}))
            asked = await peer.asked("elicitation/create")
            deep = b'{"jsonrpc":"2.0","id":' + json.dumps(asked["id"]).encode()
            deep += b',"result":{"action":"accept","content":{"x":' + DEEP.encode() + b"}}}\n"
            await peer.write(deep + line(request(3, "ping")))  # one write: one read of the gateway's
            pong: dict[str, Any] | None = None
            with anyio.move_on_after(QUICK):
                pong = await peer.answer(3)
    assert pong is not None and pong.get("result") == {}, "the ping sent after the deep answer was never answered"


def test_a_too_deep_server_request_sends_the_client_no_answer_to_a_request_it_never_made() -> None:
    core = _ready_gateway()
    asking = b'{"jsonrpc":"2.0","id":"q1","method":"elicitation/create","params":{"x":' + DEEP.encode() + b"}}"
    written = _to_client(core.from_server("a", asking, 0.0))
    assert [message for message in written if "method" not in message] == [], written


# --- what the operator is told --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_reason_a_proxy_fails_is_on_stderr_under_log_level_error() -> None:
    command = [sys.executable, "-m", "lazymcp", "proxy", "--log-level", "error", "--", *server("hostile_upstream.py")]
    command.append("endless")
    with anyio.fail_after(TIMEOUT):
        async with await anyio.open_process(command) as process:
            try:
                peer = Peer(process)
                await peer.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/list"))
                answer = await peer.answer(1)
                code = await process.wait()
                assert process.stderr is not None
                stderr = b"".join([chunk async for chunk in process.stderr]).decode()
            finally:
                if process.returncode is None:
                    process.kill()
    assert "did not end within 1000 pages" in answer["error"]["message"]
    assert code == 1
    assert "did not end within 1000 pages" in stderr, stderr
