"""Gateway instances behind a load balancer: ``/healthz`` and ``/readyz``, and several instances sharing
one real Redis (``--redis``): a session's requests answered by its owner wherever they land, its event
stream relayed, another principal kept out on both sides, an owner killed, Redis stopped and started
again. Real ``redis-server`` and gateway processes, raw HTTP; every wait is bounded."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest

from lazymcp.protocol.limits import Limits
from lazymcp.run.cluster import PREFIX, SESSION_TTL
from lazymcp.run.forward import FORWARDED_HEADER
from lazymcp.run.http_front import HttpFront

from ..conftest import SERVERS, free_port, until
from ..forkserver import program_pid
from ..raw import (
    INIT,
    PID_SERVER,
    TIMEOUT,
    children,
    config_of,
    hostile,
    http,
    http_gateway,
    open_session,
    pid_of,
    post,
    request,
    tool_call,
)
from ..servers.issuer import CLIENT_ID, CLIENT_SECRET, running_issuer
from ..services import haproxy, instance, needs_haproxy, needs_redis, redis_server

ASKING = [sys.executable, str(SERVERS / "asking_server.py")]
ELICITATION = {**INIT, "capabilities": {"elicitation": {}}}
WHOAMI = tool_call(2, "p__whoami")
SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}


async def get_json(port: int, path: str) -> tuple[int, Any]:
    async with httpx2.AsyncClient(trust_env=False, timeout=60) as client:
        answer = await client.get(f"http://127.0.0.1:{port}{path}")
    return answer.status_code, answer.json()


# --- health ------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_healthz_and_readyz_answer_a_load_balancer_without_a_token(tmp_path: Path) -> None:
    """A load balancer carries no token: the health routes answer it, while ``/mcp`` still asks for one."""
    port = free_port()
    token_file = tmp_path / "token"
    token_file.write_text("team-token\n")
    flags = ["--token-file", str(token_file)]
    async with http_gateway(config_of(tmp_path, h=hostile()), tmp_path / "cache", port, flags):
        with anyio.fail_after(TIMEOUT):
            healthy = await get_json(port, "/healthz")
            ready = await get_json(port, "/readyz")
            refused, _ = await post(port, request(1, "initialize", INIT))
    assert healthy == (200, {"status": "ok"})
    assert ready == (200, {"status": "ok"})
    assert refused == 401


@pytest.mark.anyio
async def test_readyz_is_503_while_starting_and_once_shutting_down() -> None:
    front = HttpFront(lambda: pytest.fail("no session is opened"), Limits(), "127.0.0.1")
    starting = front.readiness()
    front.loop = asyncio.get_running_loop()
    front.accepting = True
    serving = front.readiness()
    front.stopping()
    stopping = front.readiness()
    await front.close()
    assert starting == {"status": "unavailable", "reason": "starting"}
    assert serving == {"status": "ok"}
    assert stopping == {"status": "unavailable", "reason": "shutting down"}


# --- sessions shared through Redis -------------------------------------------------------------------


@needs_redis
@pytest.mark.anyio
async def test_a_sessions_requests_reach_its_owner_through_any_instance(tmp_path: Path) -> None:
    """A 2025-11-25 session opened on one instance is served by it whichever instance a request reaches
    (its server process answers), DELETE included; 2026-07-28 requests are served where they land."""
    redis_port, one, two = free_port(), free_port(), free_port()
    config = config_of(tmp_path, p=PID_SERVER)
    async with redis_server(redis_port), instance(config, tmp_path / "a", one, redis_port):
        async with instance(config, tmp_path / "b", two, redis_port):
            with anyio.fail_after(TIMEOUT):
                session = await open_session(one)
                _, direct = await post(one, WHOAMI, session)
                _, forwarded = await post(two, WHOAMI, session)
                listed, _ = await post(two, request(3, "tools/list"), session)
                deleted, _, _ = await http(two, "DELETE", b"", session)
                after, _ = await post(one, WHOAMI, session)
                ready = await get_json(two, "/readyz")
    assert pid_of(direct) == pid_of(forwarded)
    assert listed == 200
    assert deleted == 200 and after == 404  # the DELETE reached the owner
    assert ready == (200, {"status": "ok"})


@needs_redis
@pytest.mark.anyio
async def test_a_forwarded_event_stream_carries_the_servers_request_and_the_answer_goes_back(tmp_path: Path) -> None:
    """The session's GET stream, opened through another instance, carries its server's elicitation; the
    client's answer, posted through a third route, reaches the server, whose call then answers."""
    redis_port, one, two = free_port(), free_port(), free_port()
    config = config_of(tmp_path, a=ASKING)
    async with redis_server(redis_port), instance(config, tmp_path / "a", one, redis_port):
        async with instance(config, tmp_path / "b", two, redis_port):
            with anyio.fail_after(TIMEOUT):
                status, found, _ = await http(
                    one, "POST", json.dumps(request(1, "initialize", ELICITATION)).encode(), {}
                )
                assert status == 200
                session = {"Mcp-Session-Id": found["mcp-session-id"]}
                await post(one, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
                outcome: list[Any] = []
                headers = {**session, "Accept": "text/event-stream"}
                async with httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT) as client:
                    url = f"http://127.0.0.1:{two}/mcp"
                    async with client.stream("GET", url, headers=headers) as stream, anyio.create_task_group() as tg:
                        assert stream.status_code == 200
                        assert stream.headers["content-type"].startswith("text/event-stream")

                        async def call() -> None:
                            outcome.append(await post(one, tool_call(2, "a__ask"), session))

                        tg.start_soon(call)
                        asked: dict[str, Any] = {}
                        async for row in stream.aiter_lines():
                            asked = json.loads(row[5:]) if row.startswith("data:") else {}
                            if asked.get("method") == "elicitation/create":  # past any list_changed
                                break
                        assert asked.get("method") == "elicitation/create", asked
                        reply = {"action": "accept", "content": {"who": "through another instance"}}
                        accepted, _ = await post(two, {"jsonrpc": "2.0", "id": asked["id"], "result": reply}, session)
                        assert accepted == 202
    [(status, answer)] = outcome
    assert status == 200 and answer is not None
    assert "through another instance" in answer["result"]["content"][0]["text"]


@needs_redis
@pytest.mark.anyio
async def test_another_principals_token_with_a_session_id_is_refused_on_both_sides(tmp_path: Path) -> None:
    """Bob's valid token with ada's session id gets 404 from the instance it reaches (before anything is
    forwarded), and from the owner too when sent there as if forwarded."""
    redis_port, one, two = free_port(), free_port(), free_port()
    config = config_of(tmp_path, p=PID_SERVER)
    resource = f"http://127.0.0.1:{one}/mcp"
    with running_issuer(free_port(), resource) as issuer:
        issuer.tokens["bob"] = {**issuer.tokens["good"], "sub": "bob", "client_id": "bob-client"}
        flags = ["--oauth-issuer", issuer.url, "--oauth-resource", resource]
        env = {**SECRETS}
        async with redis_server(redis_port):
            a = instance(config, tmp_path / "a", one, redis_port, flags, env)
            b = instance(config, tmp_path / "b", two, redis_port, flags, env)
            async with a, b:
                with anyio.fail_after(TIMEOUT):
                    ada = await open_session(one, {"Authorization": "Bearer good"})
                    _, hers = await post(two, WHOAMI, ada)
                    as_bob = {**ada, "Authorization": "Bearer bob"}
                    elsewhere, _ = await post(two, WHOAMI, as_bob)
                    at_owner, _ = await post(one, WHOAMI, {**as_bob, FORWARDED_HEADER: "peer"})
    assert pid_of(hers)
    assert (elsewhere, at_owner) == (404, 404)


@needs_redis
@pytest.mark.anyio
async def test_a_dead_owners_sessions_get_404_and_leave_redis(tmp_path: Path) -> None:
    """``kill -9`` of the owner: its session's next request through another instance gets 404 (never a
    hang), and its record is gone from Redis once its heartbeat's TTL runs out."""
    from redis.asyncio import Redis

    redis_port, one, two = free_port(), free_port(), free_port()
    config = config_of(tmp_path, p=PID_SERVER)
    async with redis_server(redis_port), instance(config, tmp_path / "b", two, redis_port):
        store = Redis(port=redis_port)
        async with instance(config, tmp_path / "a", one, redis_port) as owner:
            with anyio.fail_after(TIMEOUT):
                session = await open_session(one)
                _, before = await post(two, WHOAMI, session)
                owner.kill()
                await owner.wait()
        with anyio.fail_after(TIMEOUT):
            after, answer = await post(two, WHOAMI, session)
            key = PREFIX + session["Mcp-Session-Id"]

            async def forgotten() -> bool:
                return not await store.exists(key)

            await until(forgotten, within=SESSION_TTL * 5, what="the dead owner's session leaving Redis")
            again, _ = await post(two, WHOAMI, session)
            await store.aclose()
    assert pid_of(before)
    assert after == 404 and answer is not None and "initialize again" in answer["error"]["message"]
    assert again == 404


@needs_redis
@pytest.mark.anyio
async def test_without_redis_instances_serve_their_own_sessions_and_route_again_when_it_returns(
    tmp_path: Path,
) -> None:
    """Redis stopped: ``/readyz`` says degraded, the owner still serves its sessions and opens new ones;
    one line says Redis was lost. Redis started again (empty): ``/readyz`` is ok, one line says so, and
    the session opened meanwhile is reached through the other instance."""
    redis_port, one, two = free_port(), free_port(), free_port()
    config = config_of(tmp_path, p=PID_SERVER)
    log = tmp_path / "a.log"

    async def status_of(port: int) -> str:
        return (await get_json(port, "/readyz"))[1]["status"]

    with log.open("wb") as written:
        async with AsyncExitStack() as redis:
            await redis.enter_async_context(redis_server(redis_port))
            a = instance(config, tmp_path / "a", one, redis_port, stderr=written.fileno())
            async with a, instance(config, tmp_path / "b", two, redis_port):
                with anyio.fail_after(TIMEOUT * 2):
                    first = await open_session(one)
                    await redis.aclose()  # Redis stops

                    async def degraded() -> bool:
                        return await status_of(one) == "degraded"

                    await until(degraded, within=TIMEOUT, what="/readyz saying degraded")
                    _, own = await post(one, WHOAMI, first)
                    opened = await open_session(one)
                    _, meanwhile = await post(one, WHOAMI, opened)
                    unrouted, _ = await post(two, WHOAMI, opened)
                    lost_body = await get_json(one, "/readyz")
                    await redis.enter_async_context(redis_server(redis_port))  # Redis starts again, empty

                    async def routed() -> bool:
                        status, _ = await post(two, request(5, "ping"), opened)
                        return status == 200

                    await until(routed, within=TIMEOUT, what="the session opened meanwhile routed again")
                    _, through_two = await post(two, WHOAMI, opened)
                    back = await get_json(one, "/readyz")
    lines = log.read_text().splitlines()
    assert pid_of(own) and pid_of(meanwhile) == pid_of(through_two)
    assert unrouted == 404  # no Redis, no route: the other instance knows nothing of it
    assert lost_body == (
        200,
        {"status": "degraded", "reason": "redis unreachable: serving this instance's sessions only"},
    )
    assert back == (200, {"status": "ok"})
    assert len([line for line in lines if "Redis lost" in line]) == 1, lines
    assert len([line for line in lines if "Redis back" in line]) == 1, lines


# --- behind HAProxy ----------------------------------------------------------------------------------


@needs_redis
@needs_haproxy
@pytest.mark.anyio
async def test_three_instances_behind_haproxy_lose_nothing_when_one_is_killed(tmp_path: Path) -> None:
    """Nine sessions through HAProxy round-robin over three instances (so each session's requests land
    on every instance), calling all along; one instance gets ``kill -9`` while they call. Its sessions get
    404 and start again; every request of the others sent after the kill is answered by its own server
    process. (One in flight through the killed instance at that moment may be cut off with it: a
    forwarder that dies while writing an answer cannot be retried by the balancer.)"""
    redis_port, balancer = free_port(), free_port()
    ports = [free_port() for _ in range(3)]
    config = config_of(tmp_path, p=PID_SERVER)
    sessions, calls_after = 9, 3
    outcomes: dict[int, list[tuple[int, str, bool]]] = {number: [] for number in range(sessions)}
    restarted: set[int] = set()
    answered = anyio.Event()
    killed = False
    count = 0

    async def client(number: int) -> None:
        nonlocal count
        session = await open_session(balancer)
        call = 0
        while sum(after for *_, after in outcomes[number]) < calls_after:  # each calls on past the kill
            call += 1
            after = killed
            status, answer = await post(balancer, tool_call(call + 10, "p__whoami"), session)
            ok = status == 200 and answer is not None and "result" in answer
            outcomes[number].append((status, pid_of(answer) if ok else json.dumps(answer), after))
            if status == 404:
                restarted.add(number)
                session = await open_session(balancer)
            count += 1
            first_answers = [seen[0][1] for seen in outcomes.values() if seen]
            if count >= sessions * 3 and len(first_answers) == sessions and all(p.isdigit() for p in first_answers):
                answered.set()  # every session's owner known by its first answer

    async with redis_server(redis_port), AsyncExitStack() as stack:
        processes = [
            await stack.enter_async_context(instance(config, tmp_path / f"c{n}", port, redis_port))
            for n, port in enumerate(ports)
        ]
        await stack.enter_async_context(haproxy(tmp_path, balancer, ports))
        doomed = processes[2]
        with anyio.fail_after(TIMEOUT * 3):
            async with anyio.create_task_group() as group:
                for number in range(sessions):
                    group.start_soon(client, number)
                await answered.wait()  # every session has its server process, and its owner is known
                lost = {str(pid) for pid in children(doomed.pid)}
                doomed.kill()
                killed = True
    owned_by_doomed = {number for number, seen in outcomes.items() if seen[0][1] in lost}
    survivors = set(outcomes) - owned_by_doomed
    assert owned_by_doomed and survivors, outcomes
    for number in survivors:
        sent_after = [(status, pid) for status, pid, after in outcomes[number] if after]
        cut = [pid for _, pid, after in outcomes[number] if not after and not pid.isdigit()]
        pids = {pid for _, pid, _ in outcomes[number] if pid.isdigit()}
        assert sent_after and all(status == 200 for status, _ in sent_after), (number, outcomes[number])
        assert len(pids) == 1 and len(cut) <= 1, (number, outcomes[number])  # only the one in flight
    for number in owned_by_doomed:
        late = [status for status, _, after in outcomes[number] if after]
        assert late and set(late) <= {200, 404} and late[-1] == 200, outcomes[number]
    assert restarted == owned_by_doomed, (lost, {n: outcomes[n] for n in restarted ^ owned_by_doomed})


@needs_redis
@pytest.mark.anyio
async def test_a_list_change_seen_by_one_instance_reaches_every_instance_and_new_ones_start_warm(
    tmp_path: Path,
) -> None:
    """A server adds a tool in a session of one instance: the sessions of the other two list it and are
    told (``list_changed`` on their event stream), though their own server processes said nothing; an
    instance started afterwards, with an empty cache, lists it from the manifest in Redis."""
    redis_port = free_port()
    ports = [free_port() for _ in range(4)]
    config = config_of(tmp_path, c=[sys.executable, str(SERVERS / "changing_server.py")])

    async def names(port: int, session: dict[str, str]) -> list[str]:
        status, answer = await post(port, request(7, "tools/list"), session)
        assert status == 200 and answer is not None, answer
        return [tool["name"] for tool in answer["result"]["tools"]]

    async with redis_server(redis_port), AsyncExitStack() as stack:
        for number, port in enumerate(ports[:3]):
            await stack.enter_async_context(instance(config, tmp_path / f"c{number}", port, redis_port))
        with anyio.fail_after(TIMEOUT * 2):
            sessions = [await open_session(port) for port in ports[:3]]
            for port, session in zip(ports, sessions, strict=False):  # each server process has listed

                async def first(port: int = port, session: dict[str, str] = session) -> bool:
                    return "c__grow" in await names(port, session)

                await until(first, within=TIMEOUT, what=f"the first tool list on port {port}")
            before = [await names(port, session) for port, session in zip(ports, sessions, strict=False)]
            told: list[dict[str, Any]] = []
            async with httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT) as client:
                headers = {**sessions[1], "Accept": "text/event-stream"}
                url = f"http://127.0.0.1:{ports[1]}/mcp"
                async with client.stream("GET", url, headers=headers) as stream:
                    grown, _ = await post(ports[0], tool_call(8, "c__grow"), sessions[0])
                    async for row in stream.aiter_lines():
                        told.append(json.loads(row[5:]) if row.startswith("data:") else {})
                        if "c__extra_1" in await names(ports[1], sessions[1]):
                            break
            for port, session in zip(ports[1:3], sessions[1:], strict=True):

                async def listed(port: int = port, session: dict[str, str] = session) -> bool:
                    return "c__extra_1" in await names(port, session)

                await until(listed, within=TIMEOUT, what=f"the new tool listed by the instance on port {port}")
            late = await stack.enter_async_context(instance(config, tmp_path / "c3", ports[3], redis_port))
            assert late.returncode is None
            fresh = await names(ports[3], await open_session(ports[3]))
    assert all("c__extra_1" not in listed for listed in before)
    assert grown == 200
    assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in told
    assert "c__extra_1" in fresh


@needs_redis
@pytest.mark.anyio
async def test_a_resource_change_seen_by_one_instance_reaches_the_other_and_its_list_is_asked_again(
    tmp_path: Path,
) -> None:
    """A server's resources live in a file its processes share. One instance lists them (its manifest,
    shared, keeps the list); a session of the other answers from that list without starting the server,
    so it misses a change no process announced. Then a session of the first adds a resource (its process
    sends ``notifications/resources/list_changed``): the other's session, whose process never ran, is
    told on its event stream and asks its server again, which lists every resource."""
    redis_port = free_port()
    ports = [free_port() for _ in range(2)]
    store = tmp_path / "uris.json"
    store.write_text(json.dumps(["memo://one"]))
    config = config_of(tmp_path, s=[sys.executable, str(SERVERS / "lists_server.py"), str(store)])

    async def uris(port: int, session: dict[str, str]) -> list[str]:
        status, answer = await post(port, request(7, "resources/list"), session)
        assert status == 200 and answer is not None and "result" in answer, answer
        return [resource["uri"] for resource in answer["result"]["resources"]]

    async with redis_server(redis_port), AsyncExitStack() as stack:
        for number, port in enumerate(ports):
            await stack.enter_async_context(instance(config, tmp_path / f"c{number}", port, redis_port))
        with anyio.fail_after(TIMEOUT * 3):
            first = await open_session(ports[0])
            listed = await uris(ports[0], first)
            store.write_text(json.dumps(["memo://one", "memo://behind"]))  # no process says so

            def shared() -> bool:  # the first instance's manifest, with its list, has reached the other
                return any("resources/list" in path.read_text() for path in (tmp_path / "c1").rglob("*.json"))

            await until(shared, within=TIMEOUT, what="the list in the other instance's manifest")
            other = await open_session(ports[1])
            kept = await uris(ports[1], other)  # from the shared list: its server has not started
            told: list[dict[str, Any]] = []
            async with httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT) as client:
                headers = {**other, "Accept": "text/event-stream"}
                async with client.stream("GET", f"http://127.0.0.1:{ports[1]}/mcp", headers=headers) as stream:
                    added, _ = await post(ports[0], tool_call(8, "s__add", uri="memo://two"), first)
                    async for row in stream.aiter_lines():
                        if row.startswith("data:"):
                            told.append(json.loads(row[5:]))
                            break
            after = await uris(ports[1], other)
    assert listed == ["memo://one"] and kept == ["memo://one"] and added == 200
    assert told == [{"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}]
    assert after == ["memo://one", "memo://behind", "memo://two"]  # asked of the server again


@needs_redis
@pytest.mark.anyio
async def test_a_refresh_with_redis_gives_its_manifests_to_running_instances_and_starts_a_failing_server_once(
    tmp_path: Path,
) -> None:
    """``--refresh --redis``: the manifest it writes goes to Redis and reaches a running instance, whose
    cache takes it though it started no server; a failing server of the configuration is started once,
    and the refresh says so in its status, as without Redis."""
    from redis.asyncio import Redis

    redis_port, port = free_port(), free_port()
    starts = tmp_path / "starts"
    config = config_of(tmp_path, p=PID_SERVER, b=["sh", "-c", f"echo started >> {starts}; exit 1"])
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--refresh"]
    command += ["--redis", f"redis://127.0.0.1:{redis_port}/0"]
    running = tmp_path / "running"

    def taken() -> bool:
        return any("whoami" in path.read_text() for path in running.rglob("*.json"))

    async with redis_server(redis_port), instance(config, running, port, redis_port) as process:
        with anyio.fail_after(TIMEOUT * 2):
            done = await anyio.run_process(
                command, check=False, env={**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "refresh")}
            )
            await until(taken, within=TIMEOUT, what="the refreshed manifest in the running instance's cache")
            client = Redis(port=redis_port)
            try:
                shared = await client.keys("lazymcp:manifest:*")
            finally:
                await client.aclose()
        started_by_instance = children(process.pid)
    assert done.returncode == 1, done.stderr
    assert starts.read_text().splitlines() == ["started"]  # once, not again for the lists asked next
    assert len(shared) == 1 and not started_by_instance


# --- the command line --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--redis", "redis://127.0.0.1:9/0"], "--redis is only for --http (or --refresh)"),
        (["--http", "127.0.0.1:{port}", "--advertise", "http://127.0.0.1:1"], "--advertise is only for --redis"),
        (["--http", "127.0.0.1:{port}", "--redis", "http://127.0.0.1:9"], "expected a redis://"),
        (["--http", "0.0.0.0:{port}", "--token-file", "{token}", "--redis", "redis://127.0.0.1:9"], "--advertise URL"),
        (["--http", "127.0.0.1:{port}", "--redis", "redis://127.0.0.1:9", "--advertise", "ftp://x/"], "http://HOST"),
        (["--http", "127.0.0.1:{port}", "--redis", "redis://127.0.0.1:9", "--advertise", "http://x/mcp"], "no path"),
    ],
)
def test_cluster_flags_that_cannot_work_are_refused_in_one_line(
    flags: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lazymcp.cli import main

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    token = tmp_path / "token"
    token.write_text("t\n")
    token.chmod(0o600)
    filled = [flag.format(port=free_port(), token=token) for flag in flags]
    assert main(["gateway", "--config", str(config), *filled]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err


@needs_redis
@pytest.mark.anyio
async def test_a_request_waiting_on_an_owner_that_stops_answering_gets_404_not_a_hang(tmp_path: Path) -> None:
    """The owner is stopped (SIGSTOP: it still accepts connections, answers nothing, and writes no more
    heartbeats): a request forwarded to it gets 404 once its sessions leave Redis, long before the
    request's own timeout (300 s)."""
    redis_port, one, two = free_port(), free_port(), free_port()
    config = config_of(tmp_path, p=PID_SERVER)
    async with redis_server(redis_port), instance(config, tmp_path / "b", two, redis_port):
        async with instance(config, tmp_path / "a", one, redis_port) as owner:
            with anyio.fail_after(TIMEOUT):
                session = await open_session(one)
                _, before = await post(two, WHOAMI, session)
                os.kill(program_pid(owner.pid), signal.SIGSTOP)  # uncatchable: to the program itself
                try:
                    after, answer = await post(two, WHOAMI, session)
                finally:
                    os.kill(program_pid(owner.pid), signal.SIGCONT)
    assert pid_of(before)
    assert after == 404 and answer is not None and "initialize again" in answer["error"]["message"]


def test_a_principal_hash_is_what_its_equality_compares_and_the_same_in_every_process() -> None:
    """Two tokens of one principal (renewed: other claims; scopes listed in another order) hash alike, in
    this process and a fresh one (set order and ``repr`` vary between processes); another subject does not."""
    import subprocess

    from lazymcp.access.policy import Principal
    from lazymcp.run.cluster import principal_hash

    ada = Principal(client="c", issuer="i", subject="ada", scopes=frozenset({"read", "write", "x"}), claims={"exp": 1})
    renewed = Principal(client="c", issuer="i", subject="ada", scopes=frozenset({"x", "write", "read"}), claims={})
    bob = Principal(client="c", issuer="i", subject="bob", scopes=frozenset({"read", "write", "x"}))
    code = (
        "from lazymcp.access.policy import Principal; from lazymcp.run.cluster import principal_hash; "
        "print(principal_hash(Principal(client='c', issuer='i', subject='ada', "
        "scopes=frozenset({'read', 'write', 'x'}))))"
    )
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert principal_hash(ada) == principal_hash(renewed) == fresh.stdout.strip()
    assert principal_hash(ada) != principal_hash(bob)


class _Pipe:
    def __init__(self, sent: list[list[tuple[str, object]]]) -> None:
        self.sent, self.ops = sent, cast(list[tuple[str, object]], [])

    async def __aenter__(self) -> _Pipe:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    def set(self, key: str, blob: bytes, ex: int) -> None:
        self.ops.append(("set", blob))

    def publish(self, channel: str, note: bytes) -> None:
        self.ops.append(("publish", json.loads(note)))

    async def execute(self) -> None:
        self.sent.append(self.ops)


@pytest.mark.anyio
async def test_a_server_announcing_changes_in_a_loop_costs_one_message_per_interval_and_its_last_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lazymcp.core.entries import ServerEntry
    from lazymcp.run import cluster_lists
    from lazymcp.run.cluster_lists import SharedLists, entry_key

    entry = ServerEntry("s", command=("server",))
    key = entry_key(entry)
    prompts, resources = "notifications/prompts/list_changed", "notifications/resources/list_changed"

    def shared(sent: list[list[tuple[str, object]]]) -> SharedLists:
        class Redis:
            def pipeline(self, transaction: bool) -> _Pipe:
                return _Pipe(sent)

        lists = SharedLists("me", [entry])
        lists.redis = cast(Any, Redis())
        return lists

    def message(blob: bytes, changed: str) -> list[tuple[str, object]]:
        return [("set", blob), ("publish", {"instance": "me", "key": key, "changed": [changed]})]

    monkeypatch.setattr(cluster_lists, "CHANGE_EVERY", 3600.0)
    sent: list[list[tuple[str, object]]] = []
    lists = shared(sent)
    lists.saved(key, b"0", [prompts])
    for number in range(1, 50):
        lists.saved(key, b"%d" % number, [resources])
    await until(lambda: len(sent) == 1, within=10, what="the first change sent")
    for _ in range(5):
        await asyncio.sleep(0)
    assert sent == [message(b"0", prompts)]  # the first at once, the others held for the interval
    await asyncio.gather(*lists.sending())  # what is held is sent before a refresh ends
    assert sent == [message(b"0", prompts), message(b"49", resources)]  # the last manifest, every change

    monkeypatch.setattr(cluster_lists, "CHANGE_EVERY", 0.2)
    timed: list[list[tuple[str, object]]] = []
    lists = shared(timed)
    lists.saved(key, b"a", [prompts])
    lists.saved(key, b"b", [prompts])
    await until(lambda: len(timed) == 2, within=10, what="the held change sent once the interval passed")
    assert timed == [message(b"a", prompts), message(b"b", prompts)]
