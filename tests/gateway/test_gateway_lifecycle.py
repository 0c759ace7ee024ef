"""How a gateway's sessions end and fail, through the one ``Driver``: the gateway over stdio at a signal
and at the end of its input, a server that dies among others, and an HTTP session's DELETE. Real
processes; every wait is bounded."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from ..conftest import exited, free_port, until
from ..raw import (
    PID_SERVER,
    TIMEOUT,
    Peer,
    children,
    config_of,
    gateway,
    gone,
    hostile,
    http,
    http_gateway,
    open_session,
    pid_of,
    post,
    request,
    tool_call,
)


async def answers_to(client: Peer, *ids: object) -> dict[object, dict[str, Any]]:
    """The answers to ``ids``, in whatever order they come."""
    answers: dict[object, dict[str, Any]] = {}
    while set(answers) != set(ids):
        message = await client.read()
        if "method" not in message and message.get("id") in ids:
            answers[message["id"]] = message
    return answers


@pytest.mark.anyio
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_ends_the_gateway_answering_what_is_owed_and_reaping_every_server(
    tmp_path: Path, signum: signal.Signals
) -> None:
    config = config_of(tmp_path, a=hostile(), b=hostile())
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as client:
            await client.begin()
            await client.send(tool_call(2, "a__hang"), tool_call(3, "b__hang"), request(4, "ping"))
            await client.answer(4)
            servers = children(client.process.pid)
            client.process.send_signal(signum)
            answers = await answers_to(client, 2, 3)
            code = await client.process.wait()
    assert code == 128 + signum
    assert all("error" in answer for answer in answers.values()), answers
    assert len(servers) == 2 and all(gone(pid) for pid in servers)


@pytest.mark.anyio
async def test_at_the_end_of_its_input_the_gateway_answers_what_it_read_then_exits_0(tmp_path: Path) -> None:
    config = config_of(tmp_path, a=hostile())
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as client:
            await client.begin()
            await client.send(tool_call(2, "a__slow", seconds=1), request(3, "prompts/list"))
            assert client.process.stdin is not None
            await client.process.stdin.aclose()
            answers = await answers_to(client, 2, 3)
            code = await client.process.wait()
    assert code == 0
    assert all("result" in answer for answer in answers.values()), answers


@pytest.mark.anyio
async def test_a_server_that_dies_fails_alone_and_starts_again_on_a_later_call(tmp_path: Path) -> None:
    config = config_of(tmp_path, a=hostile(), b=hostile())
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as client:
            await client.begin()
            await client.send(tool_call(2, "a__die"))
            died = await client.answer(2)
            await client.send(tool_call(3, "b__echo", text="still here"))
            other = await client.answer(3)
            again: dict[str, Any] = {}

            async def answers_again() -> bool:  # refused within the backoff (1 s), then started again
                nonlocal again
                await client.send(tool_call(4, "a__echo", text="back"))
                again = await client.answer(4)
                return "error" not in again

            await until(answers_again, within=TIMEOUT / 2, what="server 'a' started again after its backoff")
    assert "error" in died and "'a'" in died["error"]["message"]
    assert "still here" in other["result"]["content"][0]["text"]
    assert "back" in again["result"]["content"][0]["text"]


@pytest.mark.anyio
async def test_deleting_an_http_session_reaps_its_servers(tmp_path: Path) -> None:
    port = free_port()
    async with http_gateway(config_of(tmp_path, p=PID_SERVER), tmp_path / "cache", port) as process:
        with anyio.fail_after(TIMEOUT):
            session = await open_session(port, {})
            _, answer = await post(port, request(2, "tools/call", {"name": "p__whoami", "arguments": {}}), session)
            server = int(pid_of(answer))
            deleted, _, _ = await http(port, "DELETE", b"", session)
            await exited(server)
            after, _ = await post(port, request(3, "tools/list"), session)
            assert process.returncode is None
    assert deleted == 200 and after == 404
