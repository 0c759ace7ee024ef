"""Server processes per principal over HTTP (``lazymcp.run.shared_servers``): a real gateway process, real
server processes, raw HTTP clients with tokens of a token file. The sessions of one principal share one
process of each server, two principals never do, ``"share": "session"`` gives each session its own, and
a server's request reaches the session whose call caused it. Every wait is bounded."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from lazymcp.access.policy import Principal
from lazymcp.core.entries import ServerEntry
from lazymcp.run.shared_servers import Lease, SharedServers

from ..conftest import ROOT, SERVERS, free_port, until
from ..raw import (
    INIT,
    MODERN_HEADERS,
    PID_SERVER,
    TIMEOUT,
    children,
    gone,
    http,
    http_gateway,
    modern_call,
    open_session,
    pid_of,
    post,
    post_streamed,
    tool_call,
)
from .test_cluster import ASKING
from .test_observe import samples

PEOPLE = ("ada", "bob", "cy", "dee", "eve")
ELICITATION: dict[str, Any] = {**INIT, "capabilities": {"elicitation": {}}}


def token_file(tmp_path: Path) -> list[str]:
    """A token file of five named tokens: the flags that use it."""
    path = tmp_path / "tokens"
    path.write_text("".join(f"{name}: token-of-{name}\n" for name in PEOPLE))
    return ["--token-file", str(path), "--max-sessions", "64"]


def bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer token-of-{name}"}


def config(tmp_path: Path, share: str | None = None, **servers: list[str]) -> Path:
    entries: dict[str, Any] = {n: {"command": c[0], "args": c[1:]} for n, c in servers.items()}
    if share is not None:
        for entry in entries.values():
            entry["share"] = share
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": entries}))
    return path


async def whoami_in_sessions(port: int, sessions: int) -> list[tuple[str, str]]:
    """Open ``sessions`` sessions, spread over the five people, each calling ``whoami`` once: who called,
    and the server process that answered."""
    found: list[tuple[str, str]] = []
    limit = anyio.Semaphore(10)

    async def one(number: int) -> None:
        name = PEOPLE[number % len(PEOPLE)]
        async with limit:
            session = await open_session(port, bearer(name))
            status, answer = await post(port, tool_call(2, "p__whoami"), session)
        assert status == 200, (status, answer)
        found.append((name, pid_of(answer)))

    async with anyio.create_task_group() as group:
        for number in range(sessions):
            group.start_soon(one, number)
    return found


@pytest.mark.anyio
async def test_fifty_sessions_of_five_people_start_five_server_processes(tmp_path: Path) -> None:
    port = free_port()
    async with http_gateway(config(tmp_path, p=PID_SERVER), tmp_path / "cache", port, token_file(tmp_path)) as gw:
        with anyio.fail_after(TIMEOUT * 4):
            found = await whoami_in_sessions(port, 50)
            running = children(gw.pid)
    assert len(found) == 50
    by_person = {name: {pid for who, pid in found if who == name} for name in PEOPLE}
    assert all(len(pids) == 1 for pids in by_person.values()), by_person  # one process per person
    assert len({pid for pids in by_person.values() for pid in pids}) == 5  # never one process for two
    assert len(running) == 5, running


@pytest.mark.anyio
async def test_metrics_count_the_processes_started_not_each_sessions_start(tmp_path: Path) -> None:
    port = free_port()
    async with http_gateway(config(tmp_path, p=PID_SERVER), tmp_path / "cache", port, token_file(tmp_path)):
        with anyio.fail_after(TIMEOUT * 2):
            found = await whoami_in_sessions(port, 10)  # two sessions of each of the five people
            async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
                page = await client.get(f"http://127.0.0.1:{port}/metrics", headers=bearer("ada"))
    assert len(found) == 10 and page.status_code == 200
    assert samples(page.text)[("lazymcp_server_starts_total", (("server", "p"),))] == 5


@pytest.mark.anyio
async def test_a_persons_2026_requests_use_the_same_process_as_their_2025_sessions(tmp_path: Path) -> None:
    port = free_port()
    async with http_gateway(config(tmp_path, p=PID_SERVER), tmp_path / "cache", port, token_file(tmp_path)):
        with anyio.fail_after(TIMEOUT * 2):
            session = await open_session(port, bearer("ada"))
            _, in_session = await post(port, tool_call(2, "p__whoami"), session)
            call = modern_call(3, "p__whoami")
            _, for_ada = await post(port, call, {**bearer("ada"), **MODERN_HEADERS})
            _, for_bob = await post(port, call, {**bearer("bob"), **MODERN_HEADERS})
    assert pid_of(for_ada) == pid_of(in_session) != pid_of(for_bob)


@pytest.mark.anyio
async def test_share_session_gives_each_session_its_own_process(tmp_path: Path) -> None:
    port = free_port()
    path = config(tmp_path, "session", p=PID_SERVER)
    async with http_gateway(path, tmp_path / "cache", port, token_file(tmp_path)):
        with anyio.fail_after(TIMEOUT * 2):
            found = await whoami_in_sessions(port, 10)
    assert len({pid for _, pid in found}) == 10


@pytest.mark.anyio
async def test_a_wrong_share_is_refused_in_one_line(tmp_path: Path) -> None:
    from lazymcp.gateway.config import parse_config
    from lazymcp.protocol.errors import ConfigError

    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {"p": {"command": "x", "share": "everyone"}}}, source="mcp.json")
    expected = "mcp.json: server 'p': field 'share' must be 'principal' or 'session', not 'everyone'"
    assert raised.value.message == expected


async def ask_on_stream(
    port: int, session: dict[str, str], answer_with: str, asked: anyio.Event, go: anyio.Event
) -> str:
    """Call ``ask`` in ``session`` with its GET stream open; set ``asked`` when the stream carries its
    elicitation, and answer it with ``answer_with`` once ``go`` is set. Returns the call's answer text."""
    headers = {**session, "Accept": "text/event-stream"}
    outcome: list[Any] = []
    async with httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT) as client:
        url = f"http://127.0.0.1:{port}/mcp"
        async with client.stream("GET", url, headers=headers) as stream, anyio.create_task_group() as group:
            assert stream.status_code == 200

            async def call() -> None:
                outcome.append(await post(port, tool_call(2, "a__ask"), session))

            group.start_soon(call)
            question: dict[str, Any] = {}
            async for row in stream.aiter_lines():
                question = json.loads(row[5:]) if row.startswith("data:") else {}
                if question.get("method") == "elicitation/create":
                    break
            assert question.get("method") == "elicitation/create", question
            asked.set()
            reply = {"action": "accept", "content": {"who": answer_with}}
            await go.wait()
            status, _ = await post(port, {"jsonrpc": "2.0", "id": question["id"], "result": reply}, session)
            assert status == 202
    [(status, answer)] = outcome
    assert status == 200 and answer is not None
    return answer["result"]["content"][0]["text"]


@pytest.mark.anyio
async def test_a_servers_request_reaches_the_session_whose_call_caused_it(tmp_path: Path) -> None:
    """Two sessions of one person on one process, both calling a tool that asks the client: each session's
    question comes on its own stream, and each answer goes back to its own call."""
    port = free_port()
    async with http_gateway(config(tmp_path, a=ASKING), tmp_path / "cache", port, token_file(tmp_path)):
        with anyio.fail_after(TIMEOUT * 2):
            first = await open_session_asking(port)
            second = await open_session_asking(port)
            first_asked, second_asked = anyio.Event(), anyio.Event()
            texts: dict[str, str] = {}

            async def one() -> None:  # answers only once the second's question came: both calls in flight
                texts["first"] = await ask_on_stream(port, first, "the first", first_asked, second_asked)

            async def two() -> None:
                await first_asked.wait()
                texts["second"] = await ask_on_stream(port, second, "the second", second_asked, second_asked)

            async with anyio.create_task_group() as group:
                group.start_soon(one)
                group.start_soon(two)
    assert "the first" in texts["first"] and "the second" in texts["second"], texts


async def open_session_asking(port: int) -> dict[str, str]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ELICITATION}).encode()
    status, found, _ = await http(port, "POST", body, bearer("ada"))
    assert status == 200
    session = {**bearer("ada"), "Mcp-Session-Id": found["mcp-session-id"]}
    await post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


async def until_gone(pid: int) -> None:
    await until(lambda: gone(pid), within=TIMEOUT, what=f"process {pid} to exit")


@pytest.mark.anyio
async def test_a_session_ending_leaves_the_process_to_the_others_and_the_last_one_stops_it(tmp_path: Path) -> None:
    port = free_port()
    async with http_gateway(config(tmp_path, p=PID_SERVER), tmp_path / "cache", port, token_file(tmp_path)):
        with anyio.fail_after(TIMEOUT * 2):
            first, second = await open_session(port, bearer("ada")), await open_session(port, bearer("ada"))
            _, answer = await post(port, tool_call(2, "p__whoami"), first)
            pid = int(pid_of(answer))
            deleted, _, _ = await http(port, "DELETE", b"", first)
            _, still = await post(port, tool_call(3, "p__whoami"), second)
            alive = not gone(pid)
            deleted_too, _, _ = await http(port, "DELETE", b"", second)
            await until_gone(pid)  # bounded by the fail_after: the last session's end stops the process
    assert (deleted, deleted_too) == (200, 200)
    assert pid_of(still) == str(pid) and alive


@pytest.mark.anyio
async def test_a_session_closed_during_the_handshake_leaves_it_to_the_persons_other_session(tmp_path: Path) -> None:
    """ada's two sessions share her process of ``p``, held at ``initialize`` (the first session's went to
    it; the second's waits on it). The first is closed before the server answers: the second still gets
    the answer, and its call goes through."""
    gate = tmp_path / "gate"
    entry = {"command": PID_SERVER[0], "args": PID_SERVER[1:], "env": {"HOLD_UNTIL": str(gate)}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"p": entry}}))
    port = free_port()
    async with http_gateway(path, tmp_path / "cache", port, token_file(tmp_path)):
        with anyio.fail_after(TIMEOUT):
            first, second = await open_session(port, bearer("ada")), await open_session(port, bearer("ada"))
            await until(lambda: Path(f"{gate}.held").exists(), within=TIMEOUT, what="the server held in its handshake")
            deleted, _, _ = await http(port, "DELETE", b"", first)
            gate.touch()
            status, answer = await post(port, tool_call(2, "p__whoami"), second)
    assert deleted == 200 and status == 200, (deleted, status, answer)
    assert answer is not None and pid_of(answer), answer


class Heard:
    """What one lease's session hears: lines by id, and its end."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.ended: list[str] = []
        self.changed = anyio.Event()

    def line(self, line: bytes) -> None:
        self.lines.append(json.loads(line))
        self.changed.set()
        self.changed = anyio.Event()

    async def answer(self, request_id: object) -> dict[str, Any]:
        while True:
            found = [m for m in self.lines if m.get("id") == request_id and "method" not in m]
            if found:
                return found[0]
            await self.changed.wait()


async def opened_lease(pool: SharedServers, heard: Heard, principal: Principal) -> Lease:
    entry = ServerEntry("p", command=tuple(PID_SERVER))
    lease = pool.connector(principal)(entry, isolated=True)
    assert isinstance(lease, Lease)
    await lease.start(heard.line, heard.ended.append)
    lease.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode())
    await heard.answer(1)
    lease.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return lease


async def whoami(lease: Lease, heard: Heard, request_id: int) -> str:
    lease.send(json.dumps(tool_call(request_id, "whoami")).encode())
    return pid_of(await heard.answer(request_id))


@pytest.mark.anyio
async def test_an_idle_process_is_stopped_and_started_again_for_its_sessions_next_request() -> None:
    """No message for the idle timeout: the process stops; the next request of either session starts a
    new one, opened again behind the sessions' backs (neither hears a second ``initialize`` answer)."""
    pool = SharedServers(idle_timeout=0.5)
    one, two = Heard(), Heard()
    ada = Principal(name="ada")
    with anyio.fail_after(TIMEOUT):
        first = await opened_lease(pool, one, ada)
        second = await opened_lease(pool, two, ada)
        before = await whoami(first, one, 2)
        assert await whoami(second, two, 2) == before
        await until_gone(int(before))
        after = await whoami(first, one, 3)
        again = await whoami(second, two, 3)
        await first.stop()
        await second.stop()
        await until_gone(int(after))
    assert after != before and again == after
    assert [m["id"] for m in one.lines] == [1, 2, 3] and [m["id"] for m in two.lines] == [1, 2, 3]
    assert one.ended == two.ended == []
    assert pool.started == 2


@pytest.mark.anyio
async def test_a_list_change_reaches_every_session_of_the_person_and_no_one_elses(tmp_path: Path) -> None:
    """A real SDK server that adds a tool when called: ada's other session is told on its event stream and
    lists the new tool; bob's session, on a process of his own, does not."""
    port = free_port()
    changing = [sys.executable, str(SERVERS / "changing_server.py")]

    async def names(session: dict[str, str], request_id: int) -> list[str]:
        status, answer = await post(port, {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}, session)
        assert status == 200 and answer is not None, answer
        return [tool["name"] for tool in answer["result"]["tools"]]

    async with http_gateway(config(tmp_path, c=changing), tmp_path / "cache", port, token_file(tmp_path)):
        with anyio.fail_after(TIMEOUT * 2):
            first, second = await open_session(port, bearer("ada")), await open_session(port, bearer("ada"))
            other = await open_session(port, bearer("bob"))

            async def listed() -> bool:
                return "c__grow" in await names(second, 2)

            await until(listed, within=TIMEOUT, what="the first listing")
            told: dict[str, Any] = {}
            async with httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT) as client:
                headers = {**second, "Accept": "text/event-stream"}
                async with client.stream("GET", f"http://127.0.0.1:{port}/mcp", headers=headers) as stream:
                    status, _ = await post(port, tool_call(3, "c__grow"), first)
                    assert status == 200
                    listed_by_ada: list[str] = []
                    async for row in stream.aiter_lines():  # told (an earlier announcement may come first),
                        told = json.loads(row[5:]) if row.startswith("data:") else {}  # then listing it
                        if told.get("method") == "notifications/tools/list_changed":
                            listed_by_ada = await names(second, 4)
                            if "c__extra_1" in listed_by_ada:
                                break
            listed_by_bob = await names(other, 5)
    assert told.get("method") == "notifications/tools/list_changed"
    assert "c__extra_1" in listed_by_ada
    assert "c__grow" in listed_by_bob and "c__extra_1" not in listed_by_bob


@pytest.mark.anyio
async def test_progress_reaches_only_the_session_whose_call_it_is(tmp_path: Path) -> None:
    """Two sessions of one person call a real SDK server's progress tool at once, on one process, each
    with a progress token of its own: each session's event stream carries its own call's three reports,
    under its own token, and none of the other's."""
    port = free_port()
    fixture = [sys.executable, str(ROOT / "tests" / "interop" / "conformance_server.py"), "--plain"]
    heard: dict[str, list[tuple[object, object]]] = {"first": [], "second": []}
    texts: list[str] = []
    running: list[int] = []
    both = anyio.Event()

    async def calls(who: str, session: dict[str, str], gateway: int) -> None:
        call = tool_call(2, "c__test_tool_with_progress")
        call["params"]["_meta"] = {"progressToken": f"{who}-token"}
        headers = {**session, "Accept": "text/event-stream"}
        async with httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT) as client:
            url = f"http://127.0.0.1:{port}/mcp"
            async with client.stream("GET", url, headers=headers) as stream:
                status, answer, before = await post_streamed(port, call, session)
                assert status == 200 and answer is not None, answer
                texts.append(answer["result"]["content"][0]["text"])
                for told in before:  # the reports that came ahead of the answer, on the call's own POST
                    if told.get("method") == "notifications/progress":
                        heard[who].append((told["params"]["progressToken"], told["params"]["progress"]))
                rows = stream.aiter_lines()
                while len(heard[who]) < 3:  # the others, on the session's event stream
                    row = await anext(rows)
                    told = json.loads(row[5:]) if row.startswith("data:") else {}
                    if told.get("method") == "notifications/progress":
                        heard[who].append((told["params"]["progressToken"], told["params"]["progress"]))
                if len(texts) == 2 and not both.is_set():  # both sessions still open: the processes serving
                    running.extend(children(gateway))  # them, taken once (both tasks may see two answers)
                    both.set()
                await both.wait()

    async with http_gateway(config(tmp_path, c=fixture), tmp_path / "cache", port, token_file(tmp_path)) as gw:
        with anyio.fail_after(TIMEOUT * 2):
            first, second = await open_session(port, bearer("ada")), await open_session(port, bearer("ada"))
            async with anyio.create_task_group() as group:
                group.start_soon(calls, "first", first, gw.pid)
                group.start_soon(calls, "second", second, gw.pid)
    assert len(texts) == 2 and all("executed successfully" in text for text in texts)
    for who in ("first", "second"):
        assert heard[who] == [(f"{who}-token", 0), (f"{who}-token", 50), (f"{who}-token", 100)], heard
    assert len(running) == 1  # both calls on one process
