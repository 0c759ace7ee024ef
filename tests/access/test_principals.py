"""Principals that cannot be confused: an OAuth token names its principal by non-empty strings or is refused,
two principals whose parts would join into one text stay two (buckets, audit, sessions, processes), a
blank token variable or a null policy never opens the gateway, patterns match names that hold glob
characters, and one principal's new sessions end only its own. Real gateway processes over HTTP, a real
issuer, real server processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from lazymcp.access.claims import Nameless, read_introspection
from lazymcp.access.policy import Grant, Principal, check_policy, parse_policy
from lazymcp.cli import main
from lazymcp.gateway.config import parse_config
from lazymcp.protocol.errors import ConfigError

from ..conftest import free_port
from ..raw import INIT, PID_SERVER, TIMEOUT, http, listening, mcp_url, open_session, pid_of, post, request, tool_call
from ..servers.issuer import CLIENT_ID, CLIENT_SECRET, running_issuer

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}
RESOURCE = "http://127.0.0.1/mcp"
ANSWER = {"active": True, "aud": RESOURCE, "exp": 4102444800, "scope": "s"}


def config(tmp_path: Path, **top: Any) -> Path:
    path = tmp_path / "mcp.json"
    servers = {"p": {"command": PID_SERVER[0], "args": PID_SERVER[1:]}}
    path.write_text(json.dumps({"mcpServers": servers, "lazymcp": top}))
    return path


def gateway_command(path: Path, port: int, *flags: str) -> list[str]:
    return [sys.executable, "-m", "lazymcp", "gateway", "--config", str(path), "--http", f"127.0.0.1:{port}", *flags]


# --- the rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [{"sub": 7}, {"sub": ["ada"]}, {"sub": ""}, {"sub": True}, {"client_id": 5, "sub": "ada"}, {"client_id": ""}],
)
def test_a_sub_or_client_id_that_is_not_a_non_empty_string_refuses_the_token(change: dict[str, object]) -> None:
    answer = {**ANSWER, "client_id": "c", **change}
    with pytest.raises(Nameless) as raised:
        read_introspection(answer, "t", "http://127.0.0.1:9", RESOURCE, now=1_800_000_000)
    assert "is not a non-empty string" in raised.value.description


def test_a_null_sub_is_absent_and_the_client_names_the_principal() -> None:
    access = read_introspection({**ANSWER, "client_id": "c", "sub": None}, "t", "http://x", RESOURCE, now=0)
    assert access is not None and (access.client_id, access.subject) == ("c", None)


def test_principals_whose_parts_join_into_one_text_have_different_keys() -> None:
    one = Principal(client="a b", issuer="i", subject="c")
    other = Principal(client="a", issuer="i", subject="b c")
    assert one != other and one.key != other.key
    assert Principal(client="a", subject=None).key != Principal(client=None, subject="a").key
    assert Principal(name="alice").key == "token:alice"


@pytest.mark.parametrize("block", [None, [], "everyone", 1])
def test_an_access_block_that_is_not_an_object_is_one_line(block: object) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {"a": {"command": "x"}}, "lazymcp": {"access": block}}, source="mcp.json")
    message = raised.value.message
    assert "'lazymcp.access' must be an object" in message and "\n" not in message
    assert parse_config({"mcpServers": {"a": {"command": "x"}}}, source="mcp.json").access is None


def test_a_pattern_matches_the_name_it_spells_and_brackets_escape_glob_characters() -> None:
    exact = Grant(("a__get[1]", "a__all*"), deny=("a__get[2]",))
    assert exact("a__get[1]") and exact("a__get1")  # itself, and as a glob
    assert exact("a__all*") and exact("a__all_of_them")
    assert not Grant(("a__*",), deny=("a__get[2]",))("a__get[2]")  # a deny spelled as the name denies it
    escaped = Grant(("a__all[*]", "a__what[?]"))
    assert escaped("a__all*") and escaped("a__what?")
    assert not escaped("a__all_of_them") and not escaped("a__whatx")
    tools: dict[str, list[str] | None] = {"a": ["a__get[1]", "a__all*"]}
    check_policy(parse_policy({"k": {"allow": ["a__get[1]", "a__all[*]"]}}, "f"), tools, "__", "f")  # type: ignore[arg-type]


def test_a_blank_token_variable_is_refused_like_an_empty_token_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LAZYMCP_GATEWAY_TOKEN", "  \n")
    monkeypatch.setenv("LAZYMCP_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["gateway", "--config", str(config(tmp_path)), "--http", f"127.0.0.1:{free_port()}"]) == 2
    err = capsys.readouterr().err
    assert "LAZYMCP_GATEWAY_TOKEN is set but empty" in err and "Traceback" not in err


# --- over HTTP, real processes ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_oauth_principals_whose_parts_join_alike_share_nothing_and_odd_names_get_401(tmp_path: Path) -> None:
    """Client ``a b`` with subject ``c``, and client ``a`` with subject ``b c``: each has its own rate-limit
    bucket, server process, sessions and audit identity. A token whose ``sub`` is a number gets 401."""
    port = free_port()
    stderr = tmp_path / "stderr"
    with running_issuer(free_port(), mcp_url(port)) as issuer:
        good = {**issuer.tokens["good"], "scope": "mcp:tools"}
        issuer.tokens["joined-1"] = {**good, "client_id": "a b", "sub": "c"}
        issuer.tokens["joined-2"] = {**good, "client_id": "a", "sub": "b c"}
        issuer.tokens["numbered"] = {**good, "sub": 7}
        flags = ["--oauth-issuer", issuer.url, "--rate-limit", "1/min", "--log-level", "info"]
        env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), **SECRETS}
        with stderr.open("wb") as sink:
            async with listening(gateway_command(config(tmp_path), port, *flags), port, env=env, stderr=sink.fileno()):
                with anyio.fail_after(TIMEOUT * 2):
                    body = json.dumps(request(1, "initialize", INIT)).encode()
                    numbered = await http(port, "POST", body, {"Authorization": "Bearer numbered"})
                    one = await open_session(port, {"Authorization": "Bearer joined-1"})
                    other = await open_session(port, {"Authorization": "Bearer joined-2"})
                    first = await post(port, tool_call(2, "p__whoami"), one)
                    second = await post(port, tool_call(2, "p__whoami"), other)
                    borrowed, _ = await post(port, request(3, "ping"), {**one, "Authorization": "Bearer joined-2"})
                    listened, _, _ = await http(port, "GET", b"", {**one, "Authorization": "Bearer joined-2"})
                    ended, _, _ = await http(port, "DELETE", b"", {**one, "Authorization": "Bearer joined-2"})
    status, headers, _ = numbered
    assert status == 401 and "'sub' is not a non-empty string" in headers["www-authenticate"]
    assert first[0] == 200 and second[0] == 200, (first, second)  # one bucket each: neither is rate-limited
    assert pid_of(first[1]) != pid_of(second[1])  # a process each
    assert borrowed == listened == ended == 404  # a session each: another's is not found, whatever the method
    audited = [json.loads(line) for line in stderr.read_text().splitlines() if line.startswith('{"audit"')]
    assert len({line["principal"] for line in audited if line["tool"] == "whoami"}) == 2


@pytest.mark.anyio
async def test_one_principals_new_sessions_end_only_its_own_idle_sessions(tmp_path: Path) -> None:
    """``--max-sessions 3 --max-sessions-per-principal 2``: alice's third session ends her first, bob
    gets the last place, and carol, with none of her own to end, gets 503 rather than ending theirs."""
    port = free_port()
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-a\nbob: tok-b\ncarol: tok-c\n")
    tokens.chmod(0o600)
    flags = ["--token-file", str(tokens), "--max-sessions", "3", "--max-sessions-per-principal", "2"]
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}

    def bearer(name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer tok-{name[0]}"}

    async def alive(session: dict[str, str]) -> bool:
        status, _ = await post(port, request(9, "ping"), session)
        assert status in (200, 404), status
        return status == 200

    async with listening(gateway_command(config(tmp_path), port, *flags), port, env=env, stderr=None):
        with anyio.fail_after(TIMEOUT * 2):
            alice = [await open_session(port, bearer("alice")) for _ in range(3)]
            bob = await open_session(port, bearer("bob"))
            body = json.dumps(request(1, "initialize", INIT)).encode()
            carol = await http(port, "POST", body, bearer("carol"))
            still = [await alive(session) for session in [*alice, bob]]
            fourth = await open_session(port, bearer("alice"))
            after = [await alive(session) for session in [*alice, bob, fourth]]
    assert still == [False, True, True, True]
    assert carol[0] == 503 and b"--max-sessions" in carol[2]
    assert after == [False, False, True, True, True]


@pytest.mark.anyio
async def test_sessions_one_principal_opens_at_once_are_held_to_its_share(tmp_path: Path) -> None:
    """``--max-sessions-per-principal 1`` and four initializes of alice's at once: the sessions still opening
    (their servers starting) count against her share, so one session of hers is left, not four."""
    port = free_port()
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-a\n")
    tokens.chmod(0o600)
    flags = ["--token-file", str(tokens), "--max-sessions-per-principal", "1"]
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    alice = {"Authorization": "Bearer tok-a"}
    body = json.dumps(request(1, "initialize", INIT)).encode()
    opened: list[tuple[int, dict[str, str], bytes]] = []

    async def open_one() -> None:
        opened.append(await http(port, "POST", body, alice))

    async with listening(gateway_command(config(tmp_path), port, *flags), port, env=env, stderr=None):
        with anyio.fail_after(TIMEOUT * 2):
            async with anyio.create_task_group() as group:
                for _ in range(4):
                    group.start_soon(open_one)
            sessions = [
                {**alice, "Mcp-Session-Id": found["mcp-session-id"]} for status, found, _ in opened if status == 200
            ]
            alive = [(await post(port, request(9, "ping"), session))[0] for session in sessions]
    assert sorted(status for status, _, _ in opened if status != 200) == [503] * (4 - len(sessions)), opened
    assert alive.count(200) == 1 and set(alive) <= {200, 404}, alive


BRACKETED = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("bracketed", version="1.0", log_level="WARNING")
for name in ("get[1]", "get1", "get2"):
    server.tool(name=name)(lambda name=name: name)
server.run()
"""


@pytest.mark.anyio
async def test_a_deny_of_a_tool_named_get_1_denies_it_over_http(tmp_path: Path) -> None:
    """A server with tools ``get[1]``, ``get1`` and ``get2``. Alice's deny ``s__get[1]`` denies the tool it
    spells, and, as a glob, ``get1`` too; Bob's ``s__get[[]1]`` (the bracket meant literally) denies
    ``get[1]`` only; Carol, denied nothing, calls all three. A denied tool is refused when called directly
    and through ``invoke_tool``."""
    server = tmp_path / "bracketed.py"
    server.write_text(BRACKETED)
    path = tmp_path / "mcp.json"
    access = {
        "alice": {"allow": ["s__*"], "deny": ["s__get[1]"]},
        "bob": {"allow": ["s__*"], "deny": ["s__get[[]1]"]},
        "carol": {"allow": ["s__*"]},
    }
    servers = {"s": {"command": sys.executable, "args": [str(server)]}}
    path.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": access}}))
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-a\nbob: tok-b\ncarol: tok-c\n")
    tokens.chmod(0o600)
    port = free_port()
    flags = ["--token-file", str(tokens), "--mode", "proxy"]
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}

    async def seen(token: str) -> tuple[list[bool], list[bool]]:
        session = await open_session(port, {"Authorization": f"Bearer {token}"})
        direct: list[bool] = []
        invoked: list[bool] = []
        for number, tool in enumerate(["s__get[1]", "s__get1", "s__get2"]):
            _, answer = await post(port, tool_call(10 + number, tool), session)
            direct.append(answer is not None and "result" in answer and not answer["result"].get("isError"))
            call = {"name": "invoke_tool", "arguments": {"name": tool, "arguments": {}}}
            _, answer = await post(port, request(20 + number, "tools/call", call), session)
            invoked.append(answer is not None and "result" in answer and not answer["result"].get("isError"))
        return direct, invoked

    async with listening(gateway_command(path, port, *flags), port, env=env):
        with anyio.fail_after(TIMEOUT * 2):
            alice, bob, carol = await seen("tok-a"), await seen("tok-b"), await seen("tok-c")
    assert carol == ([True, True, True], [True, True, True])  # each tool is there to be denied
    assert alice == ([False, False, True], [False, False, True])
    assert bob == ([False, True, True], [False, True, True])


@pytest.mark.anyio
async def test_a_person_with_tokens_of_other_scopes_is_still_one_principal(tmp_path: Path) -> None:
    """ada's two tokens differ only in their scopes (a client may ask its issuer for fewer): at
    ``--max-sessions-per-principal 1`` her session of one token ends her session of the other, and each
    token may use the session the other opened."""
    port = free_port()
    with running_issuer(free_port(), mcp_url(port)) as issuer:
        issuer.tokens["good-more"] = {**issuer.tokens["good"], "scope": "mcp:tools profile email"}
        flags = ["--oauth-issuer", issuer.url, "--max-sessions-per-principal", "1"]
        env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), **SECRETS}
        async with listening(gateway_command(config(tmp_path), port, *flags), port, env=env, stderr=None):
            with anyio.fail_after(TIMEOUT * 2):
                first = await open_session(port, {"Authorization": "Bearer good"})
                second = await open_session(port, {"Authorization": "Bearer good-more"})
                ended, _ = await post(port, request(3, "ping"), first)
                crossed, _ = await post(port, request(3, "ping"), {**second, "Authorization": "Bearer good"})
    assert ended == 404 and crossed == 200
