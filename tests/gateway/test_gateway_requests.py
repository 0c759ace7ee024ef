"""The gateway core over stdio, request by request: ids that cross between a server and the client,
state kept per request id that must not outlive its request, and what a 2026-07-28 client is answered.
Real ``lazymcp gateway`` processes (or a real ``Driver`` over a real server process) in front of the raw
servers in ``servers/``; every wait is bounded."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.front import Gateway
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.run.driver import Driver
from lazymcp.run.wire import sdk_serializer
from lazymcp.surfaces.options import Options

from ..conftest import SERVERS, until
from ..raw import INIT, INITIALIZED, TIMEOUT, Peer, config_of, gateway, hostile, modern, request, tool_call


async def through_answer(peer: Peer, request_id: object) -> list[dict[str, Any]]:
    """Every message up to and including the answer to ``request_id``."""
    seen: list[dict[str, Any]] = []
    while True:
        message = await peer.read()
        seen.append(message)
        if message.get("id") == request_id and "method" not in message:
            return seen


ELICITATION = {"elicitation": {}}
"""The capabilities of a client that servers may ask (``elicitation/create``)."""


class Outbox:
    """What a ``Driver`` sends its client, as it comes."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._arrived = anyio.Event()

    def __call__(self, frame: Frame) -> None:
        self.messages.append(frame.message)
        self._arrived.set()

    async def answer(self, request_id: object) -> dict[str, Any]:
        """The answer to ``request_id``, once it has come."""
        while True:
            for message in self.messages:
                if message.get("id") == request_id and "method" not in message:
                    return message
            self._arrived = anyio.Event()
            await self._arrived.wait()


# --- ids that cross, and state per request id --------------------------------------------------------


@pytest.mark.anyio
async def test_a_2026_client_reusing_the_id_of_a_cancelled_call_gets_its_tool_list(tmp_path: Path) -> None:
    """A cancelled call's entry among the 2026 client's calls is removed with it. Kept, it would re-shape
    the next request under the same id (here a tools/list the gateway answers itself) as a ``tools/call``
    result, whose wire model drops the ``tools``."""
    config = config_of(tmp_path, h=hostile())
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache") as peer:
            await peer.send(modern(1, "tools/list"))
            first = await peer.answer(1)
            assert "tools" in first["result"]
            await peer.send(modern(7, "tools/call", {"name": "h__hang", "arguments": {}}))
            await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
            await peer.send(modern(7, "tools/list"))
            again = await peer.answer(7)
    assert "tools" in again["result"], again


@pytest.mark.anyio
async def test_a_servers_cancellation_of_its_request_names_the_id_the_client_was_given(tmp_path: Path) -> None:
    """A server's request to the client goes out under a gateway id (``lazymcp-gateway-N``), and so must the
    server's ``notifications/cancelled`` for it: under the server's own id the client could not tell which
    request was cancelled (and two servers' ids may collide)."""
    config = config_of(tmp_path, h=hostile())
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as peer:
            await peer.begin(ELICITATION)
            await peer.send(tool_call(2, "h__ask", cancel=True))
            seen = await through_answer(peer, 2)
    asked = [m["id"] for m in seen if m.get("method") == "elicitation/create"]
    cancelled = [m["params"]["requestId"] for m in seen if m.get("method") == "notifications/cancelled"]
    assert asked and str(asked[0]).startswith("lazymcp-gateway-")
    assert cancelled == asked, f"asked as {asked}, cancelled as {cancelled}"


async def _link(**settings: Any) -> tuple[Gateway, Driver, Outbox]:
    entry = ServerEntry("h", command=tuple(hostile()))
    core = Gateway([entry], Options(mode="eager"), serialize=sdk_serializer, **settings)
    out = Outbox()
    link = Driver(core, out)
    await link.start()
    return core, link, out


def _send(link: Driver, message: dict[str, Any]) -> None:
    link.from_client(json.dumps(message).encode())


@pytest.mark.anyio
async def test_server_requests_the_server_cancels_leave_nothing_behind_in_the_gateway() -> None:
    """``Gateway._asked`` (gateway id -> server, its id) gets an entry per request a server makes of the
    client, and loses it when the server cancels it too: otherwise a server that asks and cancels would
    grow it without bound for the whole session."""
    with anyio.fail_after(TIMEOUT):
        core, link, out = await _link()
        try:
            _send(link, request(0, "initialize", {**INIT, "capabilities": ELICITATION}))
            _send(link, INITIALIZED)
            _send(link, request(1, "tools/list"))
            await out.answer(1)
            for number in range(2, 42):
                _send(link, tool_call(number, "h__ask", cancel=True))
                await out.answer(number)
            left = len(core.session.asked)
        finally:
            await link.close()
    assert left == 0, f"{left} cancelled server requests are still mapped"


@pytest.mark.anyio
async def test_cancelled_2026_calls_leave_nothing_behind_in_the_gateway() -> None:
    """The 2026 client's calls (``ModernClient._calls``) get an entry per request a server answers, and
    a cancelled call's goes too: otherwise every POST a 2026 HTTP client closes or that times out (on the
    one shared 2026 session) would stay in it for the life of the gateway."""
    with anyio.fail_after(TIMEOUT):
        core, link, out = await _link()
        try:
            _send(link, modern(1, "tools/list"))
            await out.answer(1)
            for number in range(2, 42):
                _send(link, modern(number, "tools/call", {"name": "h__hang", "arguments": {}}))
                _send(link, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": number}})
            _send(link, modern(99, "ping"))
            await out.answer(99)
            left = len(core.session.calls)
        finally:
            await link.close()
    assert left == 0, f"{left} cancelled 2026 calls are still kept"


@pytest.mark.anyio
async def test_a_2026_result_holding_a_method_member_still_gets_its_envelope(tmp_path: Path) -> None:
    """A result that holds a ``method`` member (an HTTP tool's structured content, a prompt or resource
    named "method") is still an answer: it goes out in the 2026 envelope like any other, and does not
    leave its calls entry behind (as it would if answers were told from requests by the bytes
    ``"method"`` in the line)."""
    config = config_of(tmp_path, p=[sys.executable, str(SERVERS / "pid_server.py")])
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache") as peer:
            await peer.send(modern(1, "tools/call", {"name": "p__whoami", "arguments": {}}))
            plain = await peer.answer(1)
            await peer.send(modern(2, "tools/call", {"name": "p__fetch", "arguments": {}}))
            fetched = await peer.answer(2)
    assert plain["result"].get("resultType") == "complete"  # the envelope, on a result without "method"
    assert fetched["result"]["structuredContent"] == {"method": "GET", "status": 200}
    assert fetched["result"].get("resultType") == "complete", fetched["result"]


@pytest.mark.anyio
async def test_an_answer_to_a_dead_servers_request_does_not_reach_its_successor(tmp_path: Path) -> None:
    """The requests a server process asked end with it: the client's late answer to the dead process's
    request (gateway id 1, server id ``q-1``) must not reach the restarted process as the answer to *its*
    ``q-1``, a different question (gateway id 2)."""
    config = config_of(tmp_path, a=[sys.executable, str(SERVERS / "asking_server.py")])
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as peer:
            await peer.begin(ELICITATION)
            await peer.send(tool_call(2, "a__ask"))
            old = await peer.read()
            assert old.get("method") == "elicitation/create", old
            await peer.send(tool_call(3, "a__die"))
            await peer.answer(3)
            new: dict[str, Any] = {}

            async def asks_again() -> bool:  # refused within the backoff, then started again
                nonlocal new
                await peer.send(tool_call(4, "a__ask"))
                new = await peer.read()
                return new.get("method") == "elicitation/create"

            await until(asks_again, within=TIMEOUT / 2, what="server 'a' started again after its backoff")
            assert new["id"] != old["id"]
            stale = {"action": "accept", "content": {"who": "the dead process's question"}}
            await peer.send({"jsonrpc": "2.0", "id": old["id"], "result": stale})
            fresh = {"action": "accept", "content": {"who": "the new process's question"}}
            await peer.send({"jsonrpc": "2.0", "id": new["id"], "result": fresh})
            answered = await peer.answer(4)
    assert "new process" in answered["result"]["content"][0]["text"], answered


@pytest.mark.anyio
async def test_the_clients_progress_on_a_servers_request_reaches_that_server_alone(tmp_path: Path) -> None:
    """Two servers ask the client at once, each for progress under the token ``"p"``. The client sees two
    tokens (the gateway ids), and its progress on one request reaches the server that asked it, under
    ``"p"``; the other server hears nothing of it. Progress naming no request in flight goes nowhere."""
    asking = [sys.executable, str(SERVERS / "asking_server.py")]
    config = config_of(tmp_path, a=asking, b=asking)
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as peer:
            await peer.begin(ELICITATION)
            await peer.send(tool_call(2, "a__ask"))
            first = await peer.asked("elicitation/create")
            await peer.send(tool_call(3, "b__ask"))
            second = await peer.asked("elicitation/create")
            tokens = [asked["params"]["_meta"]["progressToken"] for asked in (first, second)]
            assert tokens == [first["id"], second["id"]] and tokens[0] != tokens[1], tokens
            for token, step in ((tokens[0], 1), ("p", 2), (first["id"] + "x", 3), (1, 4)):
                progress = {"progressToken": token, "progress": step}
                await peer.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
            done = {"action": "accept", "content": {}}
            for asked in (first, second):
                await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": done})
            answers: dict[object, dict[str, Any]] = {}
            while len(answers) < 2:  # in whichever order the two servers answer
                message = await peer.read()
                if message.get("id") in (2, 3) and "method" not in message:
                    answers[message["id"]] = message
            heard_a, heard_b = (json.loads(answers[n]["result"]["content"][0]["text"]) for n in (2, 3))
    assert heard_a["progress"] == [{"progressToken": "p", "progress": 1}], heard_a
    assert heard_b["progress"] == [], heard_b


@pytest.mark.anyio
async def test_a_server_request_spelled_with_an_escaped_key_still_gets_a_gateway_id(tmp_path: Path) -> None:
    """A server that writes the key as ``"\\u006dethod"`` still makes a request, and it goes to the client
    under a gateway id. Were a line taken to need no mapping when its bytes lack ``"method"``, it would go
    under the server's own id (two servers' ids may then meet, and the client's answer is dropped)."""
    config = config_of(tmp_path, e=[sys.executable, str(SERVERS / "escaped_server.py")])
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as peer:
            await peer.begin(ELICITATION)
            await peer.send(tool_call(2, "e__ask"))
            asked = await peer.read()
    assert asked.get("method") == "elicitation/create", asked
    assert str(asked["id"]).startswith("lazymcp-gateway-"), asked


# --- what a 2026 client is answered ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_2026_client_gets_enveloped_lists_and_discovery_without_initialize(tmp_path: Path) -> None:
    config = config_of(tmp_path, h=hostile())
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache") as peer:
            await peer.send(modern(1, "server/discover"), modern(2, "resources/list"), modern(3, "prompts/list"))
            discovered, resources, prompts = await peer.answer(1), await peer.answer(2), await peer.answer(3)
    assert discovered["result"]["supportedVersions"] == ["2026-07-28"]
    for answer in (resources, prompts):
        result = answer["result"]
        assert result["resultType"] == "complete" and "ttlMs" in result and "cacheScope" in result, result
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "lazymcp-gateway"
    assert [entry["uri"] for entry in resources["result"]["resources"]] == ["memo://one"]


@pytest.mark.anyio
async def test_a_2026_listen_stream_hears_a_servers_new_tools_until_it_is_cancelled(tmp_path: Path) -> None:
    config = config_of(tmp_path, c=[sys.executable, str(SERVERS / "changing_server.py")])
    listen = modern(9, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache") as peer:
            await peer.send(modern(1, "tools/list"))
            await peer.answer(1)
            await peer.send(listen)
            ack = await peer.read()
            await peer.send(modern(2, "tools/call", {"name": "c__grow", "arguments": {}}))
            heard = [await peer.read(), await peer.read()]
            await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}})
            await peer.send(modern(3, "tools/call", {"name": "c__grow", "arguments": {}}))
            after = await through_answer(peer, 3)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    events = [m for m in heard if m.get("method") == "notifications/tools/list_changed"]
    assert events and events[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 9, heard
    assert not [m for m in after if m.get("method") == "notifications/tools/list_changed"], after
