"""Which principal may use which tool: named tokens, the ``lazymcp.access`` policy and what it grants. The
rules in ``lazymcp.access.policy``, a gateway core built for one grant, and real gateway processes over HTTP
with the SDK client (two named tokens; OAuth principals told apart by scope at a real issuer)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lazymcp.access.policy import ANONYMOUS, NOTHING, Principal, check_policy, parse_policy, read_token_file
from lazymcp.access.ratelimit import Limiter, MemoryCounter, Rate, parse_rate
from lazymcp.cli import main
from lazymcp.core.actions import ToClient
from lazymcp.gateway.config import parse_config
from lazymcp.gateway.front import Gateway
from lazymcp.protocol.errors import ConfigError, ErrorCode
from lazymcp.protocol.jsonrpc import parse, request_line
from lazymcp.tools.manifest import Manifest

from ..conftest import SERVERS, free_port, until
from ..raw import TIMEOUT, gateway, http, http_gateway, mcp_url, open_session, post, request, tool_call
from ..servers.issuer import CLIENT_ID, CLIENT_SECRET, running_issuer

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]  # add, echo, upper
SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}
TEAM_POLICY = {
    "alice": {"allow": ["math__*"]},
    "bob": {"allow": ["*__echo", "*__upper"], "deny": ["text__upper"]},
}


# --- the rules --------------------------------------------------------------------------------------


def test_a_principal_gets_the_union_of_its_keys_allows_minus_their_denies() -> None:
    policy = parse_policy(
        {
            "alice": {"allow": ["github__*", "time__*"]},
            "scope:mcp.read": {"allow": ["*__get_*", "*__list_*"], "deny": ["github__delete_*"]},
            "claim:groups=ops": {"allow": ["github__delete_*"]},
            "*": {"allow": ["time__*"]},
        },
        "mcp.json",
    )
    assert policy is not None
    alice = policy.grant(Principal(name="alice"))
    reader = policy.grant(Principal(subject="carol", scopes=frozenset({"mcp.read"}), claims={"groups": ["ops"]}))
    nobody = policy.grant(ANONYMOUS)
    assert [alice(n) for n in ("github__delete_repo", "time__now", "slack__get_user")] == [True, True, False]
    assert [reader(n) for n in ("slack__get_user", "github__delete_repo", "github__create_issue")] == [
        True,
        False,  # a deny of any matched key wins over an allow of another
        False,
    ]
    assert [nobody(n) for n in ("time__now", "github__get_repo")] == [True, False]


def test_with_a_policy_a_principal_matching_no_key_gets_nothing() -> None:
    policy = parse_policy({"alice": {"allow": ["*"]}, "sub:ada": {"allow": ["*"]}}, "mcp.json")
    assert policy is not None
    assert policy.grant(Principal(name="bob")) == NOTHING
    assert not policy.grant(ANONYMOUS)("time__now")
    assert policy.grant(Principal(subject="ada"))("time__now")
    assert policy.grant(Principal(client="ada")) == NOTHING  # a client id is not a subject


def test_metrics_lets_the_principals_of_its_key_see_everyones_status_and_grants_no_tool() -> None:
    policy = parse_policy({"scope:ops": {"metrics": True}, "alice": {"allow": ["*"]}}, "mcp.json")
    assert policy is not None
    ops = Principal(subject="sam", scopes=frozenset({"ops"}))
    assert policy.sees_all(ops) and not policy.sees_all(Principal(name="alice")) and not policy.sees_all(ANONYMOUS)
    assert policy.grant(ops) == NOTHING


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ([], "must be an object"),
        ({"role:admin": {"allow": ["*"]}}, "key 'role:admin' is none of"),
        ({"claim:groups": {"allow": ["*"]}}, "key 'claim:groups' is none of"),
        ({"alice": ["*"]}, '"allow"'),
        ({"alice": {"allow": "*"}}, "field 'allow' must be a list"),
        ({"alice": {"allow": ["*"], "permit": ["*"]}}, "unknown field 'permit'"),
        ({"ops": {"metrics": "yes"}}, "field 'metrics' must be true or false"),
    ],
)
def test_a_malformed_policy_is_one_line_naming_the_key(block: object, words: str) -> None:
    config = {"mcpServers": {"a": {"command": "x"}}, "lazymcp": {"access": block}}
    with pytest.raises(ConfigError) as raised:
        parse_config(config, source="mcp.json")
    assert words in raised.value.message and raised.value.message.startswith("mcp.json: ")
    assert "\n" not in raised.value.message


def test_a_pattern_naming_an_unknown_server_or_no_tool_is_a_start_up_error() -> None:
    tools: dict[str, list[str] | None] = {"math": ["math__add", "math__echo"], "late": None}
    check_policy(parse_policy({"a": {"allow": ["math__*", "late__x", "*__add"]}}, "f"), tools, "__", "f")  # type: ignore[arg-type]
    for pattern, words in [("maths__*", "names the server 'maths'"), ("math__sub*", "matches no tool")]:
        policy = parse_policy({"a": {"allow": ["math__add"], "deny": [pattern]}}, "f")
        with pytest.raises(ConfigError) as raised:
            check_policy(policy, tools, "__", "f")  # type: ignore[arg-type]
        assert words in raised.value.message and repr(pattern) in raised.value.message


def test_a_token_file_names_its_principals_and_bare_tokens_are_default() -> None:
    text = "# the team\nalice: tok-a\n\nbob:tok-b\nbare-token\n"
    assert read_token_file(text, "tokens") == [("alice", "tok-a"), ("bob", "tok-b"), ("default", "bare-token")]
    for bad in ("alice: \n", "al ice: s3cr3t\n", "a: s3cr3t\nb: s3cr3t\n", "# only a comment\n", "a: s3 cr3t\n"):
        with pytest.raises(ConfigError) as raised:
            read_token_file(bad, "tokens")
        assert "s3" not in raised.value.message  # a token is never shown


# --- one door: a session's catalog holds only what its grant allows ---------------------------------


def answer(gateway: Gateway, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    [action] = gateway.from_client(request_line(request_id, method, params or {}), 0.0)
    assert isinstance(action, ToClient)
    return parse(action.data)


def test_every_tools_path_of_a_granted_session_sees_only_its_tools() -> None:
    config = parse_config({"mcpServers": {"math": {"command": "x"}, "text": {"command": "y"}}})
    tools = [{"name": n, "description": f"{n} a text.", "inputSchema": {"type": "object"}} for n in ("echo", "upper")]
    manifests = {name: Manifest(tuple(tools), 1.0, "1") for name in ("math", "text")}
    policy = parse_policy(TEAM_POLICY, "mcp.json")
    assert policy is not None
    full = Gateway(config.servers, manifests=manifests, mode="proxy")
    bob = Gateway(
        config.servers, manifests=manifests, mode="proxy", seed=full.seed, grant=policy.grant(Principal("bob"))
    )
    answer(bob, 0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}})
    listing = answer(bob, 1, "tools/list", {"lazy": False})
    search = answer(bob, 2, "tools/call", {"name": "search_tools", "arguments": {"query": "upper a text"}})
    categories = answer(bob, 3, "tools/call", {"name": "list_tool_categories", "arguments": {}})
    assert "text__upper" not in json.dumps([listing, search, categories])

    def asking(name: str) -> str:
        """What each path answers about ``name``, with the name itself blanked."""
        answers = [
            answer(bob, 4, "tools/describe", {"name": name}),
            answer(bob, 5, "tools/describe_batch", {"names": [name, "text__echo"]}),
            answer(bob, 6, "tools/call", {"name": "describe_tools", "arguments": {"names": [name]}}),
            answer(bob, 7, "tools/call", {"name": name, "arguments": {}}),
            answer(bob, 8, "tools/call", {"name": "invoke_tool", "arguments": {"name": name, "arguments": {}}}),
        ]
        return json.dumps(answers).replace(name, "NAME")

    assert asking("text__upper") == asking("text__uppr")  # denied reads as unknown, suggestions included
    assert "text__upper" not in asking("text__uppr")
    assert len(full.catalog) == 4 and len(bob.catalog) == 3


# --- over HTTP, real processes ----------------------------------------------------------------------


def team_config(tmp_path: Path, access: dict[str, Any]) -> Path:
    config = tmp_path / "mcp.json"
    servers = {name: {"command": PLAIN[0], "args": PLAIN[1:]} for name in ("math", "text")}
    config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": access}}))
    return config


async def what_one_sees(url: str, token: str) -> dict[str, Any]:
    """What the SDK client with ``token`` lists, finds, describes and calls."""
    seen: dict[str, Any] = {}
    http_client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http_client, Client(streamable_http_client(url, http_client=http_client), mode="legacy") as client:
        seen["listed"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        for meta, arguments in [
            ("list_tool_categories", {}),
            ("search_tools", {"query": "upper case text echo add"}),
            ("describe_tools", {"names": ["math__add", "text__upper", "math__echo"]}),
        ]:
            result = await client.call_tool(meta, arguments)
            seen[meta] = json.loads(result.content[0].text)  # type: ignore[union-attr]
        for name, arguments in [("math__add", {"a": 1, "b": 2}), ("text__upper", {"text": "x"})]:
            try:
                seen[name] = (await client.call_tool(name, arguments)).content[0].text  # type: ignore[union-attr]
            except Exception as exc:  # the SDK raises the JSON-RPC error of a refused call
                seen[name] = f"error: {exc}"
    return seen


def called_unknown(text: str, name: str, granted: set[str]) -> bool:
    """Is ``text`` the answer to a call of a tool no server has, suggesting only ``granted`` tools?"""
    answer = json.loads(text)
    return answer["error"] == "unknown_tool" and answer["name"] == name and set(answer["suggestions"]) <= granted


def names_in(value: object) -> set[str]:
    text = json.dumps(value)
    return {
        name
        for name in ("math__add", "math__echo", "math__upper", "text__add", "text__echo", "text__upper")
        if name in text
    }


@pytest.mark.anyio
async def test_two_named_tokens_see_and_call_only_what_the_policy_gives_each(tmp_path: Path) -> None:
    config = team_config(tmp_path, TEAM_POLICY)
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-alice-1\nbob: tok-bob-2\n")
    tokens.chmod(0o600)
    port = free_port()
    flags = ["--token-file", str(tokens), "--mode", "proxy"]
    async with http_gateway(config, tmp_path / "cache", port, flags):
        with anyio.fail_after(TIMEOUT * 3):
            alice = await what_one_sees(mcp_url(port), "tok-alice-1")
            bob = await what_one_sees(mcp_url(port), "tok-bob-2")
            session = await open_session(port, {"Authorization": "Bearer tok-bob-2"})
            _, denied = await post(port, request(2, "tools/describe", {"name": "text__upper"}), session)
            _, unknown = await post(port, request(3, "tools/describe", {"name": "text__uppr"}), session)
            borrowed, _ = await post(port, request(4, "tools/list"), {**session, "Authorization": "Bearer tok-alice-1"})
    assert borrowed == 404  # a session is its token's principal's: alice cannot use bob's
    assert [c["name"] for c in alice["list_tool_categories"]["categories"]] == ["math"]
    shown = [alice["listed"], alice["search_tools"], alice["describe_tools"]["tools"]]
    assert names_in(shown) == {"math__add", "math__echo", "math__upper"}
    assert names_in(list(alice["describe_tools"].get("suggestions", {}).values())) <= {
        "math__add",
        "math__echo",
        "math__upper",
    }
    assert alice["math__add"] == "3"
    assert called_unknown(alice["text__upper"], "text__upper", {"math__add", "math__echo", "math__upper"})
    assert bob["list_tool_categories"]["total"] == 3
    assert names_in(bob["search_tools"]) | names_in(bob["describe_tools"]["tools"]) <= {
        "math__echo",
        "math__upper",
        "text__echo",
    }
    assert bob["describe_tools"]["unknown"] == ["math__add", "text__upper"]
    assert names_in(list(bob["describe_tools"]["suggestions"].values())) <= {"math__echo", "math__upper", "text__echo"}
    assert called_unknown(bob["math__add"], "math__add", {"math__echo", "math__upper", "text__echo"})
    assert called_unknown(bob["text__upper"], "text__upper", {"math__echo", "math__upper", "text__echo"})
    assert denied is not None and unknown is not None
    assert json.dumps(denied).replace("text__upper", "N") == json.dumps(unknown).replace("text__uppr", "N").replace(
        '"id": 3', '"id": 2'
    )


@pytest.mark.anyio
async def test_oauth_principals_get_what_their_scopes_allow(tmp_path: Path) -> None:
    """The issuer's "good" token carries scope mcp:tools, its "no-scope" token only profile."""
    config = team_config(tmp_path, {"scope:mcp:tools": {"allow": ["*"]}, "scope:profile": {"allow": ["math__echo"]}})
    port = free_port()
    with running_issuer(free_port(), mcp_url(port)) as issuer:
        flags = ["--oauth-issuer", issuer.url, "--mode", "proxy"]
        async with http_gateway(config, tmp_path / "cache", port, flags, SECRETS):
            with anyio.fail_after(TIMEOUT * 3):
                full = await what_one_sees(mcp_url(port), "good")
                profile = await what_one_sees(mcp_url(port), "no-scope")
    assert full["list_tool_categories"]["total"] == 6 and full["text__upper"] == "X"
    assert names_in(profile["search_tools"]) <= {"math__echo"}
    assert profile["list_tool_categories"]["total"] == 1
    assert called_unknown(profile["math__add"], "math__add", {"math__echo"})


def test_a_policy_naming_an_unknown_server_stops_the_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = team_config(tmp_path, {"*": {"allow": ["maths__*"]}})
    assert main(["gateway", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "'maths__*' names the server 'maths'" in err and "Traceback" not in err


# --- rate limits --------------------------------------------------------------------------------------


def test_a_bucket_lets_a_burst_through_then_one_call_per_period_over_n() -> None:
    rate, counter = parse_rate("3/min", "flag"), MemoryCounter()
    assert [counter.take("a", rate, 0.0) for _ in range(4)] == [0.0, 0.0, 0.0, 20.0]
    assert counter.take("b", rate, 0.0) == 0.0  # each key its own bucket
    assert counter.take("a", rate, 10.0) == pytest.approx(10.0)  # half a call back: still refused
    assert counter.take("a", rate, 20.0) == 0.0  # one whole call back
    assert counter.take("a", rate, 1000.0) == 0.0 and counter.take("a", rate, 1000.0) == 0.0  # full again


def test_a_counter_keeps_at_most_its_number_of_buckets() -> None:
    counter = MemoryCounter(max_keys=2)
    rate = parse_rate("1/s", "flag")
    for key in ("a", "b", "c"):
        counter.take(key, rate, 0.0)
    assert counter.take("a", rate, 0.0) == 0.0  # "a" went first: a new, full bucket
    assert counter.take("c", rate, 0.0) > 0


@pytest.mark.parametrize("text", ["10", "0/s", "10/h", "-1/min", "ten/s", "10 per s", 10])
def test_a_rate_is_n_per_second_or_minute(text: object) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_rate(text, "--rate-limit")
    assert raised.value.message.startswith("--rate-limit: expected a rate")
    assert parse_rate(" 5 /min", "x") == Rate(5, 60.0) and str(parse_rate("7/s", "x")) == "7/s"


def test_calls_past_a_rate_get_an_error_saying_when_to_retry_per_principal_and_per_server() -> None:
    config = parse_config(
        {"mcpServers": {"math": {"command": "x", "rateLimit": "1/min"}, "text": {"command": "y"}}}, source="f"
    )
    tools = [{"name": n, "description": f"{n} a text.", "inputSchema": {"type": "object"}} for n in ("echo", "upper")]
    manifests = {name: Manifest(tuple(tools), 1.0, "1") for name in ("math", "text")}
    limiter = Limiter(MemoryCounter(), parse_rate("3/s", "flag"), (("math", Rate(1, 60.0)),))

    def session(principal: Principal) -> Gateway:
        core = Gateway(config.servers, manifests=manifests, mode="proxy", principal=principal, limiter=limiter)
        answer(core, 0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}})
        return core

    def call(core: Gateway, name: str, now: float) -> int | None:
        """The error code of a call, None when it went on to its server."""
        actions = core.from_client(request_line(1, "tools/call", {"name": name, "arguments": {}}), now)
        answered = [parse(a.data) for a in actions if isinstance(a, ToClient)]
        return answered[0]["error"]["code"] if answered else None

    alice, bob = session(Principal(name="alice")), session(Principal(name="bob"))
    limited = int(ErrorCode.RATE_LIMITED)
    assert [call(alice, "math__echo", 0.0), call(alice, "math__upper", 0.0)] == [None, limited]  # math: 1/min
    assert call(alice, "text__echo", 0.0) is None
    assert call(alice, "search_tools", 0.0) == limited  # the fourth call within a second: 3/s, meta-tools too
    assert call(bob, "math__echo", 0.0) is None  # bob's buckets are his own
    assert call(alice, "text__echo", 1.0) is None  # a second later: 3 more calls overall
    assert call(alice, "math__echo", 30.0) == limited and call(alice, "math__echo", 61.0) is None
    actions = alice.from_client(request_line(9, "tools/call", {"name": "math__echo", "arguments": {}}), 62.0)
    [error] = [parse(a.data)["error"] for a in actions if isinstance(a, ToClient)]
    assert error["data"] == {"retryAfter": 59} and "retry in 59 s" in error["message"]


def test_a_malformed_rate_limit_is_one_line_naming_the_server() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {"math": {"command": "x", "rateLimit": "lots"}}}, source="mcp.json")
    assert raised.value.message.startswith("mcp.json: server 'math', field 'rateLimit': expected a rate")


@pytest.mark.anyio
async def test_over_stdio_a_call_past_the_rate_limit_is_an_error_saying_when_to_retry(tmp_path: Path) -> None:
    config = team_config(tmp_path, {"*": {"allow": ["math__*"]}})
    async with gateway(config, tmp_path / "cache", "--rate-limit", "2/min", "--mode", "proxy") as peer:
        with anyio.fail_after(TIMEOUT * 2):
            await peer.handshake()
            answers = []
            for number, name in enumerate(["math__echo", "text__echo", "math__echo"], 10):
                await peer.send(tool_call(number, name, text="hi"))
                answers.append(await peer.answer(number))
    assert "result" in answers[0]
    assert called_unknown(answers[1]["result"]["content"][0]["text"], "text__echo", {"math__echo"})  # only '*''s
    assert answers[2]["error"]["code"] == ErrorCode.RATE_LIMITED
    assert answers[2]["error"]["data"]["retryAfter"] == 30


@pytest.mark.anyio
async def test_over_http_a_call_past_the_rate_limit_gets_429_and_later_goes_through(tmp_path: Path) -> None:
    config = team_config(tmp_path, {"*": {"allow": ["*"]}})
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-alice-1\nbob: tok-bob-2\n")
    tokens.chmod(0o600)
    port = free_port()
    flags = ["--token-file", str(tokens), "--rate-limit", "1/s", "--mode", "proxy"]
    echo = tool_call(2, "math__echo", text="hi")
    async with http_gateway(config, tmp_path / "cache", port, flags):
        with anyio.fail_after(TIMEOUT * 2):
            alice = await open_session(port, {"Authorization": "Bearer tok-alice-1"})
            bob = await open_session(port, {"Authorization": "Bearer tok-bob-2"})
            first = await post(port, echo, alice)
            status, headers, body = await http(port, "POST", json.dumps(echo).encode(), alice)
            for_bob = await post(port, echo, bob)
            later: list[int] = []

            async def through() -> bool:
                later.append((await post(port, echo, alice))[0])
                return later[-1] == 200

            await until(through, within=TIMEOUT, what="a call once the bucket refills")
    assert first[0] == 200 and first[1] is not None and "result" in first[1]
    assert status == 429 and headers["retry-after"] == "1"
    assert json.loads(body)["error"]["code"] == ErrorCode.RATE_LIMITED
    assert for_bob[0] == 200
    assert later[-1] == 200


@pytest.mark.anyio
async def test_a_policy_naming_a_token_the_file_does_not_have_is_warned_about(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-alice-1\n")
    tokens.chmod(0o600)
    port = free_port()
    said = b""
    async with http_gateway(
        team_config(tmp_path, TEAM_POLICY), tmp_path / "cache", port, ["--token-file", str(tokens)]
    ) as process:
        assert process.stderr is not None
        with anyio.fail_after(TIMEOUT):
            while b"no token of the token file" not in said:
                said += await process.stderr.receive()
    line = next(row for row in said.decode().splitlines() if "no token of the token file" in row)
    assert "'bob'" in line and "'alice'" not in line
