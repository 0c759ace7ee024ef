"""A team's gateway changes without a restart: SIGHUP does not stop it, and an edit of the token file, the
principals' secrets or the configuration applies to the running sessions (a removed token's sessions end
and its processes stop, an added one works at once; a changed server restarts alone, a new one joins, a
new policy applies, and clients hear ``list_changed``); an edit that does not load keeps the last good
state. Real gateway processes over HTTP, real SDK clients and server processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from ..conftest import ROOT, exited, free_port, until
from ..raw import (
    INIT,
    INITIALIZED,
    MODERN_HEADERS,
    PID_SERVER,
    TIMEOUT,
    http,
    listening,
    mcp_url,
    modern_call,
    open_session,
    pid_of,
    post,
    request,
    tool_call,
)
from ..services import needs_redis

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def write_config(path: Path, servers: dict[str, dict[str, Any]], access: dict[str, Any] | None = None) -> None:
    """Written whole, as an editor saves: the gateway never reads half of it."""
    body: dict[str, Any] = {"mcpServers": servers}
    if access is not None:
        body["lazymcp"] = {"access": access}
    draft = path.with_suffix(".draft")
    draft.write_text(json.dumps(body))
    draft.replace(path)


def pid_entry(**env: str) -> dict[str, Any]:
    return {"command": PID_SERVER[0], "args": PID_SERVER[1:], "env": env}


def write_tokens(path: Path, text: str) -> None:
    draft = path.with_suffix(".draft")
    draft.write_text(text)
    draft.chmod(0o600)
    draft.replace(path)


def command(config: Path, port: int, *flags: str) -> list[str]:
    return [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"127.0.0.1:{port}", *flags]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def initialize_status(port: int, token: str) -> int:
    status, _ = await post(port, request(1, "initialize", INIT), bearer(token))
    return status


@dataclass
class Held:
    """An SSE server that takes its stream's request and answers nothing until ``answer`` is set: a session
    connecting to it is still starting meanwhile."""

    entry: dict[str, Any]
    asked: anyio.Event = field(default_factory=anyio.Event)
    answer: anyio.Event = field(default_factory=anyio.Event)


def read_again(stderr: Path) -> bool:
    """The gateway has said it read its files again."""
    return b"read again" in stderr.read_bytes()


@asynccontextmanager
async def held_sse() -> AsyncIterator[Held]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    held = Held({"type": "sse", "url": f"http://127.0.0.1:{listener.extra(anyio.abc.SocketAttribute.local_port)}/sse"})

    async def hold(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive()
            held.asked.set()
            await held.answer.wait()

    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, hold)
        yield held
        group.cancel_scope.cancel()


@pytest.mark.anyio
async def test_sighup_and_token_edits_apply_without_a_restart(tmp_path: Path) -> None:
    config, tokens, stderr = tmp_path / "mcp.json", tmp_path / "tokens", tmp_path / "stderr"
    write_config(config, {"p": pid_entry()})
    write_tokens(tokens, "alice: token-a\nbob: token-b\n")
    port = free_port()
    url = mcp_url(port)
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    flags = ["--token-file", str(tokens), "--log-level", "info"]
    with stderr.open("wb") as sink:
        async with listening(command(config, port, *flags), port, env=env, stderr=sink.fileno()) as gateway:
            with anyio.fail_after(TIMEOUT * 2):
                alice_http = httpx2.AsyncClient(headers=bearer("token-a"))
                bob_http = httpx2.AsyncClient(headers=bearer("token-b"))
                async with (
                    alice_http,
                    bob_http,
                    Client(streamable_http_client(url, http_client=alice_http), mode="legacy") as alice,
                    Client(streamable_http_client(url, http_client=bob_http), mode="legacy") as bob,
                ):
                    bob_pid = int(pid_of({"result": (await bob.call_tool("p__whoami", {})).model_dump()}))
                    os.kill(gateway.pid, signal.SIGHUP)
                    await until(lambda: b"read again" in stderr.read_bytes(), within=TIMEOUT, what="SIGHUP read")
                    assert gateway.returncode is None
                    assert await initialize_status(port, "token-c") == 401
                    write_tokens(tokens, "alice: token-a\ncarol: token-c\n")

                    async def carol_in() -> bool:
                        return await initialize_status(port, "token-c") == 200

                    await until(carol_in, within=TIMEOUT, what="carol's token lets her in")
                    await exited(bob_pid, within=TIMEOUT)
                    with pytest.raises(Exception):  # noqa: B017 - the SDK raises its transport's error on 401
                        await bob.list_tools()
                    listed = await alice.list_tools()
    assert "p__whoami" in [tool.name for tool in listed.tools]
    said = stderr.read_text()
    assert "token-" not in said  # no token is ever written out


@pytest.mark.anyio
async def test_a_config_edit_restarts_only_what_changed_and_a_bad_edit_keeps_the_last_good(tmp_path: Path) -> None:
    config, stderr = tmp_path / "mcp.json", tmp_path / "stderr"
    write_config(config, {"a": pid_entry(), "b": pid_entry()})
    port = free_port()
    url = mcp_url(port)
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    changed = anyio.Event()
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.append("tools")
            changed.set()

    async def pid(client: Client, tool: str) -> int:
        return int(pid_of({"result": (await client.call_tool(tool, {})).model_dump()}))

    with stderr.open("wb") as sink:
        async with listening(command(config, port, "--log-level", "info"), port, env=env, stderr=sink.fileno()):
            with anyio.fail_after(TIMEOUT * 2):
                async with Client(streamable_http_client(url), mode="legacy", message_handler=on_message) as client:
                    a_before, b_before = await pid(client, "a__whoami"), await pid(client, "b__whoami")
                    write_config(config, {"a": pid_entry(), "b": pid_entry(EDITED="1"), "c": pid_entry()})
                    while "c__whoami" not in [tool.name for tool in (await client.list_tools()).tools]:
                        await changed.wait()
                        changed = anyio.Event()
                    await exited(b_before, within=TIMEOUT)
                    a_after, b_after = await pid(client, "a__whoami"), await pid(client, "b__whoami")
                    c_pid = await pid(client, "c__whoami")

                    config.write_text('{"mcpServers": {"a": ')  # an edit half done: it does not load
                    await until(
                        lambda: b"keeping the configuration in force" in stderr.read_bytes(),
                        within=TIMEOUT,
                        what="the bad edit said",
                    )
                    kept = await pid(client, "c__whoami")

                    write_config(config, {"a": pid_entry(), "b": pid_entry(EDITED="1")}, {"*": {"allow": ["a__*"]}})
                    while "c__whoami" in [tool.name for tool in (await client.list_tools()).tools]:
                        await changed.wait()
                        changed = anyio.Event()
                    await exited(c_pid, within=TIMEOUT)
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    refused = await client.call_tool("b__whoami", {})
    assert a_after == a_before  # unchanged: never restarted
    assert b_after != b_before  # changed: restarted from its new entry
    assert kept == c_pid
    assert "a__whoami" in names and "b__whoami" not in names  # the new policy, applied to the running session
    assert refused.is_error
    said = stderr.read_text()
    bad = [line for line in said.splitlines() if "keeping the configuration in force" in line]
    assert len(bad) == 1 and "Traceback" not in said
    assert "added c; changed b\n" in said  # the policy as it was
    assert "removed c; the access policy changed" in said


@pytest.mark.anyio
async def test_a_principals_changed_values_end_its_sessions_and_its_servers_start_with_the_new_ones(
    tmp_path: Path,
) -> None:
    config, tokens, secrets = tmp_path / "mcp.json", tmp_path / "tokens", tmp_path / "secrets"
    write_config(config, {"p": pid_entry(VALUE="${principal:VALUE}")})
    write_tokens(tokens, "alice: token-a\nbob: token-b\n")
    write_tokens(secrets, "[alice]\nVALUE=one\n[bob]\nVALUE=two\n")
    port = free_port()
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    flags = ["--token-file", str(tokens), "--principal-secrets", str(secrets)]
    async with listening(command(config, port, *flags), port, env=env):
        with anyio.fail_after(TIMEOUT * 2):
            alice = await open_session(port, bearer("token-a"))
            bob = await open_session(port, bearer("token-b"))
            alice_pid = int(pid_of((await post(port, tool_call(2, "p__whoami"), alice))[1]))
            bob_pid = int(pid_of((await post(port, tool_call(2, "p__whoami"), bob))[1]))
            write_tokens(secrets, "[alice]\nVALUE=three\n[bob]\nVALUE=two\n")
            await exited(alice_pid, within=TIMEOUT)
            ended, _ = await post(port, tool_call(3, "p__whoami"), alice)
            again = await open_session(port, bearer("token-a"))
            renewed = int(pid_of((await post(port, tool_call(2, "p__whoami"), again))[1]))
            bob_still = int(pid_of((await post(port, tool_call(3, "p__whoami"), bob))[1]))
    assert ended == 404
    assert renewed != alice_pid and bob_still == bob_pid  # bob's values did not change: nor did his server


@pytest.mark.anyio
async def test_a_changed_server_keeps_its_tools_listed_until_its_new_process_lists_them(tmp_path: Path) -> None:
    """Server ``b``'s entry changes, and its new process (no manifest of its own yet) holds its handshake.
    Meanwhile ``b__whoami`` stays listed, and a call of it waits for the new process and is answered by it;
    it was refused as an unknown tool until the new process had listed its tools."""
    config, stderr, gate = tmp_path / "mcp.json", tmp_path / "stderr", tmp_path / "go"
    write_config(config, {"a": pid_entry(), "b": pid_entry()})
    port = free_port()
    url = mcp_url(port)
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}

    async def pid(client: Client, tool: str) -> int:
        return int(pid_of({"result": (await client.call_tool(tool, {})).model_dump()}))

    with stderr.open("wb") as sink:
        async with listening(command(config, port, "--log-level", "info"), port, env=env, stderr=sink.fileno()):
            with anyio.fail_after(TIMEOUT * 2):
                async with Client(streamable_http_client(url), mode="legacy") as client:
                    before = await pid(client, "b__whoami")
                    write_config(config, {"a": pid_entry(), "b": pid_entry(HOLD_UNTIL=str(gate))})
                    await until(lambda: read_again(stderr), within=TIMEOUT, what="the edit read")
                    await until(lambda: Path(f"{gate}.held").exists(), within=TIMEOUT, what="the new b held")
                    listed = [tool.name for tool in (await client.list_tools()).tools]
                    answered: list[int] = []
                    async with anyio.create_task_group() as group:
                        group.start_soon(lambda: _append(answered, pid(client, "b__whoami")))
                        await anyio.sleep(0.5)
                        assert not answered  # waiting for the new process, not refused
                        gate.touch()
    assert "b__whoami" in listed, listed
    assert answered and answered[0] != before
    assert "Traceback" not in stderr.read_text()


async def _append(into: list[int], value: Awaitable[int]) -> None:
    into.append(await value)


@pytest.mark.anyio
async def test_an_edit_asking_for_a_principal_s_value_of_a_gateway_without_principals_keeps_the_last_good(
    tmp_path: Path,
) -> None:
    """The start's rule of ``${principal:NAME}`` holds for an edit too: a gateway with no tokens tells no
    principals apart, so an entry asking for one's value is not taken; one line says why, and the
    session goes on with the configuration in force."""
    config, stderr = tmp_path / "mcp.json", tmp_path / "stderr"
    write_config(config, {"p": pid_entry()})
    port = free_port()
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    with stderr.open("wb") as sink:
        async with listening(command(config, port, "--log-level", "info"), port, env=env, stderr=sink.fileno()):
            with anyio.fail_after(TIMEOUT * 2):
                session = await open_session(port)
                before = pid_of((await post(port, tool_call(2, "p__whoami"), session))[1])
                write_config(config, {"p": pid_entry(), "mine": pid_entry(VALUE="${principal:VALUE}")})
                await until(
                    lambda: b"keeping the configuration in force" in stderr.read_bytes(),
                    within=TIMEOUT,
                    what="the edit refused",
                )
                kept = pid_of((await post(port, tool_call(3, "p__whoami"), session))[1])
                _, unknown = await post(port, tool_call(4, "mine__whoami"), session)
    assert kept == before
    assert unknown is not None and "unknown_tool" in json.dumps(unknown), unknown  # never added
    bad = [line for line in stderr.read_text().splitlines() if "keeping the configuration in force" in line]
    assert len(bad) == 1, bad
    assert "server 'mine' uses ${principal:VALUE}" in bad[0] and "has no principals" in bad[0], bad[0]


@pytest.mark.anyio
async def test_a_policy_edit_keeps_a_principal_s_2026_session_and_its_servers(tmp_path: Path) -> None:
    """alice's 2026-07-28 requests, then a policy edit that takes q from her and leaves her p: her next
    request is served by the session she had, so her conversation's own process of p (``"share":
    "session"``) is the one that answered before, and q is refused."""
    config, tokens, stderr = tmp_path / "mcp.json", tmp_path / "tokens", tmp_path / "stderr"
    servers = {"p": {**pid_entry(), "share": "session"}, "q": pid_entry()}
    write_config(config, servers, {"alice": {"allow": ["p__*", "q__*"]}})
    write_tokens(tokens, "alice: token-a\n")
    port = free_port()
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    alice = {**bearer("token-a"), **MODERN_HEADERS}
    flags = ["--token-file", str(tokens), "--log-level", "info", "--mode", "proxy"]
    with stderr.open("wb") as sink:
        async with listening(command(config, port, *flags), port, env=env, stderr=sink.fileno()):
            with anyio.fail_after(TIMEOUT * 2):
                before = pid_of((await post(port, modern_call(1, "p__whoami"), alice))[1])
                reached = pid_of((await post(port, modern_call(2, "q__whoami"), alice))[1])
                write_config(config, servers, {"alice": {"allow": ["p__*"]}})
                await until(lambda: b"was read again" in stderr.read_bytes(), within=TIMEOUT, what="the edit read")
                after = pid_of((await post(port, modern_call(3, "p__whoami"), alice))[1])
                _, refused = await post(port, modern_call(4, "q__whoami"), alice)
    assert reached.isdigit()
    assert after == before  # the same session, and so the same process of p
    assert refused is not None and ("error" in refused or refused["result"].get("isError")), refused


@pytest.mark.anyio
async def test_a_config_edit_reaches_a_session_still_starting_its_servers(tmp_path: Path) -> None:
    """A session still connecting to its first server when the configuration changes (an SSE server that
    has not answered its stream's request yet: its ``initialize`` waits) is changed too: once open, it
    lists the server added meanwhile."""
    config, stderr = tmp_path / "mcp.json", tmp_path / "stderr"
    port = free_port()
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    opened: list[tuple[int, dict[str, str], bytes]] = []

    async def open_session_held() -> None:
        opened.append(await http(port, "POST", json.dumps(request(1, "initialize", INIT)).encode()))

    async with held_sse() as held:
        write_config(config, {"a": held.entry})
        with stderr.open("wb") as sink:
            command_line = command(config, port, "--log-level", "info")
            async with listening(command_line, port, env=env, stderr=sink.fileno()) as gw:
                with anyio.fail_after(TIMEOUT):
                    async with anyio.create_task_group() as group:
                        group.start_soon(open_session_held)
                        await held.asked.wait()
                        write_config(config, {"a": held.entry, "c": pid_entry()})
                        gw.send_signal(signal.SIGHUP)
                        await until(lambda: read_again(stderr), within=TIMEOUT, what="the edit read")
                        assert not opened  # still starting as the edit applied
                        held.answer.set()
                        await until(lambda: bool(opened), within=TIMEOUT, what="the session open")
                    status, headers, _ = opened[0]
                    assert status == 200, status
                    session = {"Mcp-Session-Id": headers["mcp-session-id"]}
                    await post(port, INITIALIZED, session)
                    _, listed = await post(port, request(2, "tools/list"), session)
    assert listed is not None
    names = [tool["name"] for tool in listed["result"]["tools"]]
    assert "c__whoami" in names, names


@pytest.mark.anyio
async def test_a_token_removed_while_its_session_still_starts_ends_that_session(tmp_path: Path) -> None:
    """Alice's session is still connecting to its server (an SSE server that has not answered yet) when her
    token is removed: once it has started, its opening request is answered as a new one would be, 401, and
    no session is left for her."""
    config, tokens, stderr = tmp_path / "mcp.json", tmp_path / "tokens", tmp_path / "stderr"
    write_tokens(tokens, "alice: token-a\nbob: token-b\n")
    port = free_port()
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    flags = ["--token-file", str(tokens), "--log-level", "info"]
    opened: list[int] = []

    async def open_session_held() -> None:
        opened.append(await initialize_status(port, "token-a"))

    async with held_sse() as held:
        write_config(config, {"a": held.entry})
        with stderr.open("wb") as sink:
            async with listening(command(config, port, *flags), port, env=env, stderr=sink.fileno()) as gw:
                with anyio.fail_after(TIMEOUT):
                    async with anyio.create_task_group() as group:
                        group.start_soon(open_session_held)
                        await held.asked.wait()
                        write_tokens(tokens, "bob: token-b\n")
                        gw.send_signal(signal.SIGHUP)
                        await until(lambda: read_again(stderr), within=TIMEOUT, what="the edit read")
                        assert not opened  # still starting as the token went
                        held.answer.set()
                        await until(lambda: bool(opened), within=TIMEOUT, what="the opening request answered")
    assert opened == [401], opened
    assert "1 session ended" in stderr.read_text()


@needs_redis
def test_the_reload_bench_loses_no_call_while_the_configuration_changes_and_each_instance_refuses_a_removed_token(
    tmp_path: Path,
) -> None:
    """``python -m bench.reload``, briefly: every instance refuses the removed token in each round, and the
    clients calling throughout the edits get every answer right (the times are the bench's to judge)."""
    out = tmp_path / "reload.json"
    command = [sys.executable, "-m", "bench.reload", "--rounds", "2", "--clients", "4", "--seconds", "4"]
    done = subprocess.run(
        [*command, "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert [entry["rounds"] for entry in results["token_removed"]["instances"]] == [2, 2]
    under_load = results["under_load"]
    assert under_load["edits"] >= 2 and under_load["calls"] > under_load["edits"], under_load
    assert under_load["failed"] == 0, under_load["problems"]
    assert any("added c" in said for said in under_load["applied"]), under_load["applied"]
