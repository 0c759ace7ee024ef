"""One server cannot stall the others or grow the gateway: real ``lazymcp gateway`` (and ``proxy``)
processes over servers that misbehave on purpose (``servers/hostile_upstream.py``). Each conversation is
bounded by a timeout far below ``--timeout``, so a client held for it fails the test."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from lazymcp.protocol.limits import MAX_ASKED, REFETCH_EVERY

from ..conftest import exited, free_port
from ..forkserver import stand_in_pid
from ..raw import (
    INIT,
    INITIALIZED,
    TIMEOUT,
    Peer,
    children,
    config_of,
    frame,
    gateway,
    hostile,
    http,
    http_gateway,
    http_proxy,
    open_session,
    peer,
    post,
    proxy,
    put_in_flight,
    request,
    rss_kib,
    tool_call,
)

BIG = "x" * 400_000
DEAF = "deaf from now on"


def command_line(pid: int) -> str:
    return Path(f"/proc/{stand_in_pid(pid)}/cmdline").read_bytes().decode(errors="replace")


def text_of(answer: dict[str, Any]) -> Any:
    assert "result" in answer, answer
    return json.loads(answer["result"]["content"][0]["text"])


async def deafened(client: Peer, request_id: int, name: str) -> None:
    """Call the ``deaf`` tool ``name``, and return once its server reads no more."""
    await client.send(tool_call(request_id, name))
    while jsonrpc_data(await client.read()) != DEAF:
        pass


def jsonrpc_data(message: dict[str, Any]) -> object:
    params: dict[str, Any] = message.get("params") or {}
    return params.get("data")


# --- a server that stops reading ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_server_that_stops_reading_stalls_neither_the_client_nor_the_others(tmp_path: Path) -> None:
    config = config_of(tmp_path, a=hostile(), b=hostile())
    with anyio.fail_after(TIMEOUT * 2):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as client:
            await client.begin()
            await deafened(client, 2, "a__deaf")
            await client.send(tool_call(3, "a__echo", text=BIG))  # more than its pipe holds
            await client.send(request(4, "ping"), tool_call(5, "b__echo", text="still here"))
            assert "result" in await client.answer(4)  # at once, not after --timeout (300 s)
            assert text_of(await client.answer(5))["arguments"] == {"text": "still here"}
            # Past its bound (16 MiB unread) it fails alone, and every call it owed gets an error.
            owed = {2, 3, *range(10, 55)}
            await client.send(*(tool_call(n, "a__echo", text=BIG) for n in range(10, 55)))
            errors: dict[object, str] = {}
            while set(errors) != owed:
                message = await client.read()
                if message.get("id") in owed and "method" not in message:
                    errors[message["id"]] = message["error"]["message"]
            await client.send(tool_call(6, "b__echo", text="and still"))
            assert "result" in await client.answer(6)
    assert all("server 'a'" in error and "does not read its input" in error for error in errors.values())


@pytest.mark.anyio
async def test_over_http_a_server_that_stops_reading_fails_at_its_bound_and_memory_stays_flat(tmp_path: Path) -> None:
    """Calls of 4 MB each for ``a``, which stopped reading, wait for it until 16 MiB of them do: then it
    fails, every call waiting on it is answered with the error (a later one starts it again), and ``b`` (sent
    none of it) answers on."""
    port = free_port()
    config = config_of(tmp_path, a=hostile(), b=hostile())
    outcome: list[Any] = []
    flooded: list[Any] = []
    before = peak = 0
    with anyio.fail_after(TIMEOUT * 4):
        async with http_gateway(config, tmp_path / "cache", port, ["--mode", "eager"]) as process:
            session = await open_session(port)
            async with anyio.create_task_group() as group:
                await put_in_flight(group, port, tool_call(2, "a__deaf"), session, outcome)
                before = rss_kib(process.pid)
                for number in range(30):  # 120 MB for a server that reads none of it
                    call = tool_call(100 + number, "a__echo", text="x" * 4_000_000)
                    await put_in_flight(group, port, call, session, flooded)
                    peak = max(peak, rss_kib(process.pid))
            status, echoed = await post(port, tool_call(3, "b__echo", text="still here"), session)
    assert len(flooded) == 30 and all(answer is not None for _, answer in flooded)  # each answered, none lost
    [(status_deaf, refused)] = outcome
    assert status_deaf == 200 and refused is not None
    assert "server 'a'" in refused["error"]["message"] and "does not read its input" in refused["error"]["message"]
    assert status == 200 and echoed is not None and "result" in echoed
    # Unbounded, each 4 MB post stayed in memory (~10 MB each: +300 MB here); bounded, at most 16 MiB
    # wait for the server before it fails.
    assert peak - before < 150_000


@pytest.mark.anyio
async def test_over_http_the_proxy_refuses_posts_with_503_while_its_server_does_not_read() -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress"}
    progress["params"] = {"progressToken": "t", "progress": 1, "message": "x" * 1_000_000}  # type: ignore[assignment]
    statuses: list[int] = []
    headers: dict[str, str] = {}
    before = peak = 0
    with anyio.fail_after(TIMEOUT * 2):
        async with http_proxy(*hostile()) as (port, process):
            session = await open_session(port)
            before = rss_kib(process.pid)
            async with anyio.create_task_group() as group:
                sent = anyio.Event()
                group.start_soon(lambda: post(port, tool_call(2, "deaf"), session, sent=sent))
                await sent.wait()
                while 503 not in statuses and len(statuses) < 200:  # 1 MB each, for a server that stops reading
                    status, headers, _ = await http(port, "POST", json.dumps(progress).encode(), session)
                    statuses.append(status)
                    peak = max(peak, rss_kib(process.pid))
                group.cancel_scope.cancel()
    assert statuses[0] == 202 and statuses[-1] == 503  # taken until its input is full, then refused
    assert headers["retry-after"] == "1"
    assert peak - before < 100_000


# --- a server's requests to the client ------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("front", ["gateway", "proxy"])
async def test_a_server_flooding_the_client_with_requests_gets_errors_past_the_cap(front: str, tmp_path: Path) -> None:
    if front == "gateway":
        opened = gateway(config_of(tmp_path, s=hostile()), tmp_path / "cache", "--mode", "eager")
        name = "s__swamp"
    else:
        opened = peer(proxy(*hostile(), flags=["--mode", "eager"]))
        name = "swamp"
    roots = {"roots": {"listChanged": True}}
    asked = 0
    with anyio.fail_after(TIMEOUT * 2):
        async with opened as client:
            await client.begin(roots)
            await client.send(tool_call(2, name, count=1000))
            while True:  # the client never answers a roots/list
                message = await client.read()
                if message.get("method") == "roots/list":
                    asked += 1
                elif message.get("id") == 2:
                    break
    assert asked == MAX_ASKED
    assert text_of(message) == {"errors": 1000 - MAX_ASKED}


# --- a client that reads nothing ---------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("front", ["proxy", "gateway"])
async def test_requests_waiting_for_the_first_list_stop_the_reading_when_the_client_reads_nothing(
    front: str, tmp_path: Path
) -> None:
    """The server lists ~150 kB of tools after 2 s; meanwhile the client writes listings and reads none."""
    if front == "proxy":
        opened = peer(proxy(*hostile("slow-big")))
    else:
        opened = gateway(config_of(tmp_path, s=hostile("slow-big")), tmp_path / "cache")
    written = 0
    with anyio.fail_after(TIMEOUT * 2):
        async with opened as client:
            await client.send(request(0, "initialize", INIT))
            await client.answer(0)
            await client.send(INITIALIZED)
            assert client.process.stdin is not None
            peak = 0
            with anyio.move_on_after(6):  # reading stops: the writes block
                while written < 300_000:
                    chunk = b"".join(
                        frame(request(written + n + 1, "tools/list", {"lazy": False})) for n in range(1000)
                    )
                    await client.process.stdin.send(chunk)
                    written += 1000
                    peak = max(peak, rss_kib(client.process.pid))
            peak = max(peak, rss_kib(client.process.pid))
            client.process.kill()
    # Unbounded, every request was read while the list was awaited (300,000 here), and their answers
    # (150 kB each) made all at once when it came: past 1.5 GB.
    assert written < 20_000
    assert peak < 400_000


# --- the first listing --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_first_listing_waits_a_bounded_time_for_a_server_that_never_answers(tmp_path: Path) -> None:
    config = config_of(tmp_path, ok=hostile(), mute=hostile("mute"))
    flags = ["--first-list-wait", "1", "--timeout", "4"]
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", *flags) as client:
            started = time.monotonic()
            await client.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/list"))
            listed = await client.answer(1)
            waited = time.monotonic() - started
            names = [tool["name"] for tool in listed["result"]["tools"]]
            await client.send(tool_call(2, "describe_tools", names=["ok__echo"]))
            described = text_of(await client.answer(2))
            [mute] = [pid for pid in children(client.process.pid) if "mute" in command_line(pid)]
            await exited(mute, within=TIMEOUT)  # failed past --timeout: stopped at once, the session going on
            assert client.process.returncode is None  # the session goes on
            assert client.process.stdin is not None
            await client.process.stdin.aclose()
            stderr = await client.stderr()
    assert waited < 4  # the first list came before --timeout failed the mute server
    assert "ok__echo" in names and not any(name.startswith("mute__") for name in names)
    assert described["unlisted"] == {"mute": "it has not listed its tools yet"}
    assert "server 'mute' did not list its tools within 1 s" in stderr


@pytest.mark.anyio
async def test_a_server_listed_late_is_announced_when_its_tools_come(tmp_path: Path) -> None:
    config = config_of(tmp_path, ok=hostile(), late=hostile("late"))
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--first-list-wait", "0.5", "--mode", "eager") as client:
            await client.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/list"))
            first = [tool["name"] for tool in (await client.answer(1))["result"]["tools"]]
            while (await client.read()).get("method") != "notifications/tools/list_changed":
                pass
            await client.send(request(2, "tools/list"))
            then = [tool["name"] for tool in (await client.answer(2))["result"]["tools"]]
    assert "ok__echo" in first and "late__seen" not in first
    assert "late__seen" in then


# --- cancelling a call that waits for its server --------------------------------------------------------


@pytest.mark.anyio
async def test_a_call_cancelled_while_its_server_starts_is_never_sent(tmp_path: Path) -> None:
    config = config_of(tmp_path, late=hostile("late"))
    cache = tmp_path / "cache"
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, cache, "--mode", "eager") as client:  # writes the server's manifest
            await client.begin()
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, cache, "--mode", "eager") as client:
            await client.begin()  # from the manifest: the server starts on the first call
            await client.send(tool_call(2, "late__echo", text="never"))
            cancel = {"requestId": 2, "reason": "changed my mind"}
            await client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
            await client.send(tool_call(3, "late__seen"))
            seen = text_of(await client.answer(3))
    assert seen == ["seen"]


# --- a server whose tools keep changing ------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_server_whose_list_keeps_changing_is_listed_at_most_once_a_second(tmp_path: Path) -> None:
    config = config_of(tmp_path, churn=hostile("churn"))
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache", "--mode", "eager") as client:
            await client.begin()
            started = time.monotonic()
            await anyio.sleep(3)  # the window measured: it announces a change every millisecond meanwhile
            await client.send(tool_call(2, "churn__fetches"))
            fetches = text_of(await client.answer(2))
            elapsed = time.monotonic() - started
    # The first list, then at most one a second (unbounded: one per change, hundreds a second).
    assert 2 <= fetches <= 2 + elapsed / REFETCH_EVERY
