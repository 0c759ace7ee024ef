"""A principal who signs out on one instance of a cluster (``--redis``) is signed out on every instance: a
session it holds on another, which reaches the upstream with the old access token, ends, and its next call
there asks it to sign in. The upstream has no revocation endpoint, so the old token stays good at the
upstream: only the instances can stop using it. Two real gateway processes, a real Redis, real HTTP.

A callback sent on to the instance its sign-in is under way on takes a bounded answer from it."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx2
import pytest

from ..conftest import free_port, until
from ..raw import open_session, post, tool_call
from ..services import instance, needs_redis, redis_server
from .test_signin_people import BOUND, TOKENS, Team, follow, new_browser, upstream


@asynccontextmanager
async def alice_on_two_instances(
    tmp_path: Path, base: str, redis_port: int, other: int
) -> AsyncIterator[tuple[Team, httpx2.AsyncClient]]:
    """The team's gateway as two instances sharing the Redis at ``redis_port`` (the second at ``other``),
    alice signed in to the upstream at ``base`` through the first; and the browser she signed in with."""
    team = Team(tmp_path, base)
    flags = team.command()[team.command().index("--token-file") :]
    first = instance(team.config, tmp_path / "a", team.port, redis_port, flags, team.env)
    second = instance(team.config, tmp_path / "b", other, redis_port, flags, team.env)
    async with first, second, new_browser() as browser:
        done = await browser.get(await follow(browser, await team.link("alice"), "alice"))
        assert done.status_code == 200, done.text
        yield team, browser


@needs_redis
@pytest.mark.anyio
async def test_a_sign_out_on_one_instance_ends_the_principal_s_sessions_of_the_server_on_the_others(
    tmp_path: Path,
) -> None:
    redis_port, other = free_port(), free_port()
    alice = {"Authorization": f"Bearer {TOKENS['alice']}"}
    with anyio.fail_after(BOUND):
        async with upstream(revokes=False) as base, redis_server(redis_port):
            async with alice_on_two_instances(tmp_path, base, redis_port, other) as (team, browser):
                await team.reaches_upstream_as("alice", other)
                session = await open_session(other, alice)
                answers: list[tuple[int, str]] = []

                async def answer() -> tuple[int, str]:
                    status, said = await post(other, tool_call(len(answers) + 2, "people__whoami"), session)
                    answers.append((status, json.dumps(said)))
                    return answers[-1]

                async def as_alice() -> bool:
                    return "you are alice" in (await answer())[1]

                await until(as_alice, within=60, what="alice's session on the second instance to reach the upstream")
                signed_out = await browser.delete(f"{team.public}/connect/people", headers=alice)
                assert signed_out.status_code == 200 and "signed out of people" in signed_out.text

                async def ended() -> bool:
                    return not await as_alice()

                try:
                    await until(ended, within=30, what="alice's session on the second instance to end")
                except pytest.fail.Exception:
                    pytest.fail(f"the second instance kept using alice's old token: {answers[-1:]}")
                assert answers[-1][0] == 404, answers[-1]  # the session ended: a client opens a new one
                again = await team.call("alice", other)
    assert f"sign in at {team.public}/connect/people?ticket=" in again, again


class Huge(BaseHTTPRequestHandler):
    """An instance gone wrong (or a stranger's server noted in Redis as one): a page of 4 MiB."""

    def do_GET(self) -> None:
        body = b"x" * (4 * 1024 * 1024)
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@needs_redis
@pytest.mark.anyio
async def test_a_callback_sent_on_to_another_instance_takes_a_bounded_answer_from_it(tmp_path: Path) -> None:
    """A callback whose sign-in Redis says is under way on another instance is sent on to it; an answer past
    the bound is refused with one line, not relayed."""
    from redis import Redis

    from lazymcp.run.people_redis import STATE

    redis_port, peer_port = free_port(), free_port()
    peer = ThreadingHTTPServer(("127.0.0.1", peer_port), Huge)
    threading.Thread(target=peer.serve_forever, daemon=True).start()
    try:
        with anyio.fail_after(BOUND):
            async with redis_server(redis_port):
                team = Team(tmp_path, "http://127.0.0.1:1")
                flags = team.command()[team.command().index("--token-file") :]
                Redis(port=redis_port).set(
                    STATE + hashlib.sha256(b"elsewhere").hexdigest(), f"http://127.0.0.1:{peer_port}"
                )
                async with (
                    instance(team.config, tmp_path / "a", team.port, redis_port, flags, team.env),
                    new_browser() as browser,
                ):
                    answer = await browser.get(
                        f"{team.public}/oauth/callback", params={"state": "elsewhere", "code": "c"}
                    )
    finally:
        peer.shutdown()
        peer.server_close()
    assert answer.status_code == 502 and len(answer.content) < 1024, (answer.status_code, len(answer.content))
    assert "answered over 64 KiB" in answer.text, answer.text


@needs_redis
@pytest.mark.anyio
async def test_a_refresh_spent_on_one_instance_leaves_the_principal_signed_in_on_the_others(tmp_path: Path) -> None:
    """The upstream spends a refresh token on its first use (rotation), and its access tokens last 8 s. Alice
    holds a session on each instance, each with her tokens in hand. Past their expiry, the first instance's
    call refreshes them; the second's refresh, with the token already spent, is refused: it goes on with
    the tokens the first kept in Redis, still as alice, rather than asking her to sign in again."""
    redis_port, other = free_port(), free_port()
    alice = {"Authorization": f"Bearer {TOKENS['alice']}"}
    with anyio.fail_after(BOUND):
        async with upstream(expiry=8) as base, redis_server(redis_port):
            async with alice_on_two_instances(tmp_path, base, redis_port, other) as (team, browser):
                signed_in = time.time()
                sessions = {port: await open_session(port, alice) for port in (team.port, other)}
                answers: list[str] = []

                async def whoami(port: int) -> str:
                    _, said = await post(port, tool_call(len(answers) + 2, "people__whoami"), sessions[port])
                    answers.append(json.dumps(said))
                    return answers[-1]

                for port in (team.port, other):  # each session's connection holds the first tokens

                    async def as_alice(port: int = port) -> bool:
                        return "you are alice" in await whoami(port)

                    await until(as_alice, within=60, what=f"alice's session on {port} to reach the upstream")
                await until(lambda: time.time() > signed_in + 9, within=30, what="alice's first token's expiry")
                refreshed = await whoami(team.port)
                after = await whoami(other)
    assert "you are alice" in refreshed, refreshed
    assert "you are alice" in after and "sign in" not in after, after
