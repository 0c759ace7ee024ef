"""Each person signs in to each remote server, on a team's HTTP gateway (``--public-url``,
``--secrets-key-file``): two principals of a token file, over real HTTP, against a real gateway process and a
real upstream that is its own authorization server (the SDK's, ``tests/servers/people_upstream.py``) and
answers with the subject of the token it was called with.

Each principal's first call gets a link with a ticket of its own; the test is the browser (no bearer
token): it follows the link to the upstream's sign-in page, signs in as that person, and comes back to the
gateway's callback. Then each principal's calls reach the upstream as that person. A ticket used twice,
made too long ago or used for another server is refused; so is a callback with a state not under way, or
used already. The sign-ins are kept in one sealed file that holds no token in the clear and opens with the
key only. A principal who signs out (``DELETE /connect/SERVER``) is asked to sign in again, alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import anyio
import httpx2
import pytest
from anyio.abc import Process
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from lazymcp.access.sealed import Sealer, read_key, read_ticket, ticket

from ..conftest import SERVERS, free_port, until
from ..raw import listening, mcp_url
from ..services import instance, needs_redis, redis_server

BOUND = 240
TOKENS = {"alice": "tok-alice-0123456789", "bob": "tok-bob-0123456789"}
KEY = "k" * 8 + "an-ample-secret-of-the-gateway-0123456789"


@asynccontextmanager
async def upstream(expiry: int = 300, *, revokes: bool = True) -> AsyncIterator[str]:
    """The upstream as a process, its access tokens lasting ``expiry`` seconds (``revokes``: with a revocation
    endpoint); yields its base URL."""
    port = free_port()
    command = [sys.executable, str(SERVERS / "people_upstream.py"), str(port), str(expiry)]
    command += [] if revokes else ["no-revoke"]
    async with listening(command, port, stderr=None):
        yield f"http://127.0.0.1:{port}"


def kept_of(team: Team) -> dict[str, Any]:
    """Each principal's sign-in in the sealed file, by principal key."""
    kept = json.loads(Sealer(KEY.encode()).open(team.sealed.read_bytes()) or b"{}")
    return {json.loads(key)[0]: value for key, value in kept.items()}


def new_browser() -> httpx2.AsyncClient:
    """A browser of the test's: no proxy from the environment, a minute at most for each page."""
    return httpx2.AsyncClient(trust_env=False, timeout=60)


class Team:
    """The gateway's files: configuration, token file, key file; its port and public URL."""

    def __init__(self, tmp_path: Path, base: str) -> None:
        self.tmp_path = tmp_path
        self.port = free_port()
        self.public = f"http://127.0.0.1:{self.port}"
        self.config = tmp_path / "mcp.json"
        servers = {"people": {"url": f"{base}/mcp"}}
        self.config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"mode": "eager"}}))
        self.tokens = tmp_path / "tokens"
        self.tokens.write_text("".join(f"{name}: {token}\n" for name, token in TOKENS.items()))
        self.tokens.chmod(0o600)
        self.key = tmp_path / "key"
        self.key.write_text(KEY)
        self.key.chmod(0o600)
        self.sealed = tmp_path / "xdg" / "lazymcp" / "sign-ins.sealed"
        self.env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
        self.said: list[str] = []
        """Every answer and page the test was given, to look for secrets in."""

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(self.config)]
        command += ["--http", f"127.0.0.1:{self.port}", "--token-file", str(self.tokens)]
        return [*command, "--public-url", self.public, "--secrets-key-file", str(self.key)]

    def gateway(self, stderr: int | None = subprocess.PIPE) -> AbstractAsyncContextManager[Process]:
        """The team's gateway as a process, once it listens."""
        return listening(self.command(), self.port, stderr=stderr, env=self.env)

    async def call(self, name: str, port: int | None = None) -> str:
        """``people__whoami`` called as principal ``name`` (at ``port``: the gateway's by default): its text,
        or its error's."""
        headers = {"Authorization": f"Bearer {TOKENS[name]}"}
        http = httpx2.AsyncClient(headers=headers, timeout=60, trust_env=False)
        url = mcp_url(port or self.port)
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            try:
                result = await client.call_tool("people__whoami", {})
            except MCPError as exc:
                text = exc.error.message
            else:
                text = json.dumps(result.model_dump(mode="json"))
        self.said.append(text)
        return text

    async def link(self, name: str, port: int | None = None) -> str:
        """The sign-in link ``name``'s call is answered with."""
        said = await self.call(name, port)
        found = re.search(re.escape(self.public) + r'/connect/people\?ticket=[^\s"\\)]+', said)
        assert found is not None, said
        return found.group(0)

    async def reaches_upstream_as(self, name: str, port: int | None = None) -> None:
        """``name``'s calls reach the upstream as ``name`` (once the server's backoff after its 401 passed)."""
        answers: list[str] = []

        async def answered() -> bool:
            answers.append(await self.call(name, port))
            return f"you are {name}" in answers[-1]

        try:
            await until(answered, within=90, what=f"{name}'s call to reach the upstream as {name}")
        except pytest.fail.Exception:
            pytest.fail(f"{name}'s call never reached the upstream as {name}; its last answer: {answers[-1:]}")


async def follow(browser: httpx2.AsyncClient, link: str, user: str) -> str:
    """Open ``link``, sign in at the upstream's page as ``user``; the gateway's callback URL it sends back to."""
    page = await browser.get(link, follow_redirects=True)
    assert page.status_code == 200 and 'name="pending"' in page.text, page.text
    pending = re.search(r'name="pending" value="([^"]+)"', page.text)
    assert pending is not None
    back = await browser.post(str(page.url), data={"pending": pending.group(1), "user": user})
    assert back.status_code == 302, back.text
    return back.headers["location"]


@pytest.mark.anyio
async def test_each_principal_signs_in_through_its_own_link_and_reaches_the_upstream_as_itself(
    tmp_path: Path,
) -> None:
    stderr_path = tmp_path / "stderr"
    with anyio.fail_after(BOUND):
        async with upstream() as base:
            team = Team(tmp_path, base)
            stderr = os.open(stderr_path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                async with (
                    team.gateway(stderr),
                    new_browser() as browser,
                ):
                    kept = await signing_in(team, browser)
            finally:
                os.close(stderr)
    logged = stderr_path.read_text()
    assert "Traceback" not in logged and "ticket=" not in logged, logged
    secrets = [sign_in["tokens"][name] for sign_in in kept.values() for name in ("access_token", "refresh_token")]
    assert len(set(secrets)) == 4, "expected alice's and bob's tokens"
    for secret in secrets:
        assert secret not in logged and secret not in "\n".join(team.said)


async def signing_in(team: Team, browser: httpx2.AsyncClient) -> dict[str, Any]:
    """The whole story; what the sealed file held once both were signed in."""
    alice_link, bob_link = await team.link("alice"), await team.link("bob")
    alice_later = await team.link("alice")  # a second link, opened once she is signed in
    sealer = read_key(str(team.key))
    for name, link in (("alice", alice_link), ("bob", bob_link)):  # each link carries its own principal's ticket
        given = parse_qs(urlsplit(link).query)["ticket"][0]
        assert (read_ticket(sealer, given, "people") or ("",))[0] == f"token:{name}"

    other = bob_link.replace("/connect/people?", "/connect/other?")  # bob's ticket for another server: refused
    assert (await browser.get(other)).status_code == 403
    expired = ticket(sealer, "token:alice", "people", at=time.time() - 601)
    assert (await browser.get(f"{team.public}/connect/people", params={"ticket": expired})).status_code == 403
    assert (await browser.get(f"{team.public}/connect/people", params={"ticket": "forged"})).status_code == 403

    callback = await follow(browser, alice_link, "alice")
    assert callback.startswith(f"{team.public}/oauth/callback?")
    done = await browser.get(callback)
    team.said.append(done.text)
    assert done.status_code == 200 and "Signed in to people" in done.text, done.text
    assert (await browser.get(callback)).status_code == 400  # the state is used
    assert (await browser.get(alice_link)).status_code == 403  # so is the ticket
    wrong = f"{team.public}/oauth/callback?code=x&state=not-under-way"
    assert (await browser.get(wrong)).status_code == 400

    await team.reaches_upstream_as("alice")
    # Signed in, with a token still good, her other link signs her in anew (another account, say)
    done = await browser.get(await follow(browser, alice_later, "alice"))
    assert done.status_code == 200 and "Signed in to people" in done.text, done.text
    await team.reaches_upstream_as("alice")
    assert "sign in at" in await team.call("bob")  # bob is not signed in by alice's sign-in

    done = await browser.get(await follow(browser, bob_link, "bob"))  # bob's ticket, refused elsewhere, works here
    assert done.status_code == 200, done.text
    await team.reaches_upstream_as("bob")
    await team.reaches_upstream_as("alice")

    raw = team.sealed.read_bytes()
    assert b"access_token" not in raw and b"token:alice" not in raw and b"refresh" not in raw
    assert Sealer(b"another-key-of-at-least-32-characters!").open(raw) is None
    kept: dict[str, Any] = json.loads(Sealer(KEY.encode()).open(raw) or b"{}")
    assert sorted(json.loads(key)[0] for key in kept) == ["token:alice", "token:bob"]
    for sign_in in kept.values():
        assert sign_in["tokens"]["access_token"].encode() not in raw

    signed_out = await browser.delete(
        f"{team.public}/connect/people", headers={"Authorization": f"Bearer {TOKENS['alice']}"}
    )
    assert signed_out.status_code == 200 and "signed out of people" in signed_out.text
    assert (await browser.delete(f"{team.public}/connect/people")).status_code == 401  # credentials needed
    alice = {"Authorization": f"Bearer {TOKENS['alice']}"}
    unknown = await browser.delete(f"{team.public}/connect/%3Cb%3Ex", headers=alice)  # named back as text only
    assert unknown.status_code == 404 and unknown.headers.get("content-type", "").startswith("text/plain")
    assert unknown.headers.get("cache-control") == "no-store", unknown.headers
    again = await team.call("alice")  # a new session: alice's sign-in is gone, bob's is not
    assert f"sign in at {team.public}/connect/people?ticket=" in again, again
    await team.reaches_upstream_as("bob")
    left = json.loads(Sealer(KEY.encode()).open(team.sealed.read_bytes()) or b"{}")
    assert [json.loads(key)[0] for key in left] == ["token:bob"]
    return kept


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--public-url", "http://127.0.0.1:1"], "give --secrets-key-file FILE"),
        (["--secrets-key-file", "KEY"], "--secrets-key-file is only for --public-url"),
        (["--public-url", "http://127.0.0.1:1", "--secrets-key-file", "FIFO"], "is not a file of at most"),
    ],
)
async def test_a_public_url_without_its_key_or_a_key_without_it_does_not_start(
    tmp_path: Path, flags: list[str], said: str
) -> None:
    team = Team(tmp_path, "http://127.0.0.1:1")
    os.mkfifo(tmp_path / "fifo", 0o600)  # a key file that is a FIFO no one writes to: read, it would block
    flags = [str(team.key) if flag == "KEY" else str(tmp_path / "fifo") if flag == "FIFO" else flag for flag in flags]
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(team.config), "--http"]
    command += [f"127.0.0.1:{team.port}", "--token-file", str(team.tokens), *flags]
    with anyio.fail_after(120):
        done = await anyio.run_process(command, env={**os.environ, **team.env}, check=False, stdin=subprocess.DEVNULL)
    text = done.stderr.decode()
    assert done.returncode != 0 and text.count("\n") == 1 and said in text, text


@needs_redis
@pytest.mark.anyio
async def test_instances_sharing_a_redis_share_each_principal_s_sign_in_tickets_and_callbacks(tmp_path: Path) -> None:
    """Two instances of one Redis, one public URL (the first's): a ticket used on one is refused on the other;
    a callback that comes to the other instance is answered by the one its sign-in is under way on; a
    principal signed in through one reaches the upstream as itself through the other; Redis holds no token
    in the clear."""
    from redis import Redis

    redis_port, other = free_port(), free_port()
    with anyio.fail_after(BOUND):
        async with upstream() as base, redis_server(redis_port):
            team = Team(tmp_path, base)
            flags = team.command()[team.command().index("--token-file") :]
            first = instance(team.config, tmp_path / "a", team.port, redis_port, flags, team.env)
            second = instance(team.config, tmp_path / "b", other, redis_port, flags, team.env)
            async with first, second, new_browser() as browser:
                link = await team.link("alice", other)  # asked on the second: its link names the public URL
                assert link.startswith(f"{team.public}/connect/people?ticket=")
                callback = await follow(browser, link, "alice")  # the sign-in is under way on the first
                on_second = callback.replace(team.public, f"http://127.0.0.1:{other}")
                done = await browser.get(on_second)
                assert done.status_code == 200 and "Signed in to people" in done.text, done.text
                assert (await browser.get(callback)).status_code == 400  # its state is used, on every instance
                assert (await browser.get(link.replace(team.public, f"http://127.0.0.1:{other}"))).status_code == 403
                await team.reaches_upstream_as("alice", other)
                await team.reaches_upstream_as("alice")
                assert "sign in at" in await team.call("bob", other)
                kept = Redis(port=redis_port).hgetall("lazymcp:sign-ins")
    assert len(kept) == 1
    (sealed,) = kept.values()
    assert b"access_token" not in sealed and b"token:alice" not in sealed
    opened = json.loads(Sealer(KEY.encode()).open(sealed) or b"{}")
    assert opened["tokens"]["access_token"].encode() not in sealed


@pytest.mark.anyio
async def test_each_principal_s_token_is_refreshed_and_a_refused_refresh_asks_that_principal_alone_again(
    tmp_path: Path,
) -> None:
    """Access tokens of 8 seconds: past its expiry each principal's call is made with a refreshed token; once
    the upstream revoked alice's tokens (her refresh is refused), her calls say to sign in again, with a link
    of her own, and bob's still reach the upstream as bob."""
    with anyio.fail_after(BOUND):
        async with upstream(expiry=8) as base:
            team = Team(tmp_path, base)
            async with (
                team.gateway(),
                new_browser() as browser,
            ):
                for name in ("alice", "bob"):
                    done = await browser.get(await follow(browser, await team.link(name), name))
                    assert done.status_code == 200, done.text
                    await team.reaches_upstream_as(name)
                first = kept_of(team)["token:alice"]
                await until(lambda: time.time() > first["expires_at"] + 0.5, within=60, what="alice's token's expiry")
                await team.reaches_upstream_as("alice")  # refreshed
                refreshed = kept_of(team)["token:alice"]
                assert refreshed["tokens"]["access_token"] != first["tokens"]["access_token"]
                assert (await browser.post(f"{base}/revoke-subject", params={"subject": "alice"})).status_code == 200
                await until(
                    lambda: time.time() > refreshed["expires_at"] + 0.5, within=60, what="alice's token's expiry"
                )
                refused = await team.call("alice")
                await team.reaches_upstream_as("bob")
    assert f"sign in again at {team.public}/connect/people?ticket=" in refused, refused
    given = parse_qs(urlsplit(refused.split("sign in again at ")[1].split()[0]).query)["ticket"][0]
    assert (read_ticket(read_key(str(team.key)), given.rstrip('\\"'), "people") or ("",))[0] == "token:alice"


@pytest.mark.anyio
async def test_a_sign_in_is_finished_only_by_the_browser_that_opened_its_link(tmp_path: Path) -> None:
    """Alice opens her own link but hands the authorization server's URL to bob, who signs in there: the
    callback that bob's browser brings (without the cookie of alice's) is refused, and bob's account is not
    kept as alice's sign-in."""
    with anyio.fail_after(BOUND):
        async with upstream() as base:
            team = Team(tmp_path, base)
            async with (
                team.gateway(),
                new_browser() as alice,
                new_browser() as bob,
            ):
                started = await alice.get(await team.link("alice"))
                assert started.status_code == 303, started.text
                refused = await bob.get(await follow(bob, started.headers["location"], "bob"))
                assert refused.status_code == 403 and "another browser" in refused.text, refused.text
                cookie = started.headers["set-cookie"].lower()
                assert "httponly" in cookie and "samesite=lax" in cookie and "path=/oauth/callback" in cookie
                assert "sign in at" in await team.call("alice")
    assert "tokens" not in kept_of(team).get("token:alice", {})  # its client's registration alone


@pytest.mark.anyio
async def test_a_sealed_file_of_another_key_stops_the_start_in_one_line(tmp_path: Path) -> None:
    team = Team(tmp_path, "http://127.0.0.1:1")
    team.sealed.parent.mkdir(parents=True)
    team.sealed.write_bytes(Sealer(b"another-key-of-at-least-32-characters!").seal(b"{}"))
    with anyio.fail_after(120):
        done = await anyio.run_process(
            team.command(), env={**os.environ, **team.env}, check=False, stdin=subprocess.DEVNULL
        )
    text = done.stderr.decode()
    assert done.returncode != 0 and text.count("\n") == 1 and "sealed with another key" in text, text


@pytest.mark.anyio
async def test_a_principal_has_a_few_sign_ins_under_way_at_most_and_others_are_not_held_up(tmp_path: Path) -> None:
    """Each link alice opens (without finishing it) holds a sign-in under way: past ``FLOWS_EACH`` of them her
    next link is answered 503, and bob's still starts his."""
    from lazymcp.run.people import FLOWS_EACH

    with anyio.fail_after(BOUND):
        async with upstream() as base:
            team = Team(tmp_path, base)
            async with (
                team.gateway(),
                new_browser() as browser,
            ):
                for _ in range(FLOWS_EACH):
                    assert (await browser.get(await team.link("alice"))).status_code == 303
                refused = await browser.get(await team.link("alice"))
                assert refused.status_code == 503 and "yours" in refused.text, refused.text
                assert (await browser.get(await team.link("bob"))).status_code == 303


def test_a_ticket_is_given_only_to_the_gateway_s_sign_in_line_of_a_server_that_signs_in(tmp_path: Path) -> None:
    """An answer that holds the gateway's URL otherwise (a page a tool fetched, a server's own text) gets no
    ticket; a sign-in line of no such server neither; one server's line said a thousand times gets one."""
    from lazymcp.access.policy import Principal
    from lazymcp.access.sealed import SealedFile
    from lazymcp.core.entries import ServerEntry
    from lazymcp.protocol.jsonrpc import Frame
    from lazymcp.run.people import People

    sealer = Sealer(KEY.encode())
    entries = [ServerEntry(name="people", url="https://people.example/mcp")]
    people = People("https://gw.example", sealer, SealedFile(sealer, tmp_path / "sealed"), lambda: entries)
    text = "see https://gw.example/connect/people; sign in at https://gw.example/connect/nosuch; "
    text += "sign-in needed: sign in at https://gw.example/connect/people; " * 1000
    sent: list[Frame] = []
    people.outgoing(Principal(name="alice"), sent.append)(Frame.read(json.dumps({"text": text}).encode()))
    said: str = json.loads(sent[0].line)["text"]
    assert "see https://gw.example/connect/people;" in said and "/connect/nosuch;" in said
    given = set(re.findall(r"sign in at https://gw\.example/connect/people\?ticket=([^;]+);", said))
    assert len(given) == 1 and read_ticket(sealer, unquote(given.pop()), "people") is not None


@pytest.mark.anyio
async def test_a_callback_with_neither_code_nor_error_leaves_the_sign_in_under_way(tmp_path: Path) -> None:
    """A callback of the sign-in's state that brings neither a code nor an error is answered 400 and the
    sign-in stays under way (it is neither lost to its callback nor left running uncounted): the callback
    with the code then finishes it."""
    with anyio.fail_after(BOUND):
        async with upstream() as base:
            team = Team(tmp_path, base)
            async with (
                team.gateway(),
                new_browser() as browser,
            ):
                callback = await follow(browser, await team.link("alice"), "alice")
                state = parse_qs(urlsplit(callback).query)["state"][0]
                bare = await browser.get(f"{team.public}/oauth/callback", params={"state": state})
                assert bare.status_code == 400 and "neither a code nor an error" in bare.text, bare.text
                done = await browser.get(callback)
                assert done.status_code == 200 and "Signed in to people" in done.text, done.text


@pytest.mark.anyio
async def test_the_tickets_noted_as_used_on_one_instance_are_bounded() -> None:
    from lazymcp.run import people

    used = people.UsedHere()
    for number in range(people.USED_MAX):
        assert await used.first(f"nonce-{number}")
    assert not await used.first("one-more") and not await used.first("nonce-0")
    assert len(used._until) == people.USED_MAX  # pyright: ignore[reportPrivateUsage]
