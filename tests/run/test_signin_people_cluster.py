"""A principal who signs out on one instance of a cluster (``--redis``) is signed out on every instance: a
session it holds on another, which reaches the upstream with the old access token, ends, and its next call
there asks it to sign in. The upstream has no revocation endpoint, so the old token stays good at the
upstream: only the instances can stop using it. Two real gateway processes, a real Redis, real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx2
import pytest

from ..conftest import free_port, until
from ..raw import open_session, post, tool_call
from ..services import instance, needs_redis, redis_server
from .test_signin_people import BOUND, TOKENS, Team, follow, upstream


@needs_redis
@pytest.mark.anyio
async def test_a_sign_out_on_one_instance_ends_the_principal_s_sessions_of_the_server_on_the_others(
    tmp_path: Path,
) -> None:
    redis_port, other = free_port(), free_port()
    alice = {"Authorization": f"Bearer {TOKENS['alice']}"}
    with anyio.fail_after(BOUND):
        async with upstream(revokes=False) as base, redis_server(redis_port):
            team = Team(tmp_path, base)
            flags = team.command()[team.command().index("--token-file") :]
            first = instance(team.config, tmp_path / "a", team.port, redis_port, flags, team.env)
            second = instance(team.config, tmp_path / "b", other, redis_port, flags, team.env)
            async with first, second, httpx2.AsyncClient(trust_env=False, timeout=60) as browser:
                done = await browser.get(await follow(browser, await team.link("alice"), "alice"))
                assert done.status_code == 200, done.text
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
