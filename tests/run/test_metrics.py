"""Each metric of ``/metrics`` (spec/gateway.md §12) moves by exactly what was done: one real gateway
process over HTTP for the module, raw JSON-RPC peers, the page read with prometheus_client's parser
before and after. Who may read the page, and no name a client makes up becoming a label."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from ..conftest import SERVERS, free_port, log_on_failure, until, until_listening
from ..raw import PID_SERVER, TIMEOUT, config_of, http, http_gateway, open_session, post, request, tool_call
from ..services import instance, needs_redis, redis_server
from .test_observe import samples

PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]  # add, echo, upper
FAULTY = [sys.executable, str(SERVERS / "faulty_server.py")]  # ok, die, hang, garbage
TOKENS = {"alice": "tok-alice-1", "bob": "tok-bob-1", "carol": "tok-carol-1", "dave": "tok-dave-1"}
ACCESS = {
    "alice": {"allow": ["math__*", "lim__*", "f__*"], "metrics": True},
    "bob": {"allow": ["math__echo"]},
    "carol": {"metrics": True},
    "dave": {"allow": ["math__*"]},
}
Page = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


@pytest.fixture(scope="module")
def port(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One gateway for the module: ``math`` and ``lim`` (a plain server, ``lim`` at one call a minute),
    ``f`` (a server a call can kill), four tokens, the policy above, at most 100 calls a minute each."""
    where = tmp_path_factory.mktemp("metrics")
    servers = {
        "math": {"command": PLAIN[0], "args": PLAIN[1:]},
        "lim": {"command": PLAIN[0], "args": PLAIN[1:], "rateLimit": "1/min"},
        "f": {"command": FAULTY[0], "args": FAULTY[1:]},
    }
    path = where / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": ACCESS}}))
    tokens = where / "tokens"
    tokens.write_text("".join(f"{name}: {token}\n" for name, token in TOKENS.items()))
    tokens.chmod(0o600)
    number = free_port()
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(path), "--http", f"127.0.0.1:{number}"]
    flags = ["--token-file", str(tokens), "--mode", "proxy", "--rate-limit", "100/min", "--log-level", "debug"]
    environ = {**os.environ, "LAZYMCP_CACHE_DIR": str(where / "cache")}
    log = where / "gateway.log"
    log_on_failure(request.node, log)
    with log.open("wb") as stderr:
        process = subprocess.Popen([*command, *flags], env=environ, stderr=stderr)
    try:
        anyio.run(lambda: until_listening(number, within=TIMEOUT))
        yield number
    finally:
        process.terminate()
        process.wait(timeout=10)


async def scrape(port: int, who: str = "alice") -> Page:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
        page = await client.get(f"http://127.0.0.1:{port}/metrics", headers=bearer(who))
    assert page.status_code == 200, page.text
    return samples(page.text)


def moved(before: Page, after: Page, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def invoke(number: int, name: str, **arguments: Any) -> dict[str, Any]:
    return request(number, "tools/call", {"name": "invoke_tool", "arguments": {"name": name, "arguments": arguments}})


@pytest.mark.anyio
async def test_requests_total_counts_each_answered_request_by_method_and_an_unknown_method_as_other(
    port: int,
) -> None:
    session = await open_session(port, bearer("alice"))
    before = await scrape(port)
    with anyio.fail_after(TIMEOUT):
        for number in range(10, 13):
            await post(port, request(number, "ping"), session)
        await post(port, request(13, "made/up/method"), session)
    after = await scrape(port)
    assert moved(before, after, "lazymcp_requests_total", method="ping", outcome="ok") == 3
    assert moved(before, after, "lazymcp_requests_total", method="other", outcome="error") == 1
    assert not any("made/up" in str(labels) for _, labels in after)


@pytest.mark.anyio
async def test_tool_calls_total_and_seconds_count_the_calls_a_server_answered(port: int) -> None:
    session = await open_session(port, bearer("alice"))
    await post(port, tool_call(9, "math__echo", text="warm"), session)  # the server started
    before = await scrape(port)
    with anyio.fail_after(TIMEOUT):
        for number in range(10, 13):
            await post(port, tool_call(number, "math__echo", text="hi"), session)
        await post(port, invoke(13, "math__add", a=1, b=2), session)
        await post(port, tool_call(14, "search_tools", query="echo"), session)
    after = await scrape(port)
    calls = "lazymcp_tool_calls_total"
    assert moved(before, after, calls, server="math", tool="echo", outcome="ok") == 3
    assert moved(before, after, calls, server="math", tool="add", outcome="ok") == 1  # as the tool it named
    assert moved(before, after, calls, server="", tool="search_tools", outcome="ok") == 1
    assert moved(before, after, "lazymcp_tool_call_seconds_count", server="math") == 4
    assert moved(before, after, "lazymcp_tool_call_seconds_bucket", server="math", le="+Inf") == 4
    assert moved(before, after, "lazymcp_tool_call_seconds_sum", server="math") > 0
    assert ("lazymcp_tool_call_seconds_count", (("server", ""),)) not in after  # the gateway's own: no time


@pytest.mark.anyio
async def test_server_starts_count_a_principals_shared_process_once_and_failures_each_death(port: int) -> None:
    first = await scrape(port)
    with anyio.fail_after(TIMEOUT * 2):
        for _ in range(2):  # two sessions of one principal share its process
            session = await open_session(port, bearer("dave"))
            _, answer = await post(port, tool_call(10, "math__echo", text="hi"), session)
            assert answer is not None and "result" in answer
        session = await open_session(port, bearer("alice"))
        await post(port, tool_call(11, "f__ok"), session)  # alice's f runs
        before = await scrape(port)
        await post(port, tool_call(12, "f__die"), session)
    after = await scrape(port)
    assert moved(first, after, "lazymcp_server_starts_total", server="math") == 1
    assert moved(before, after, "lazymcp_server_starts_total", server="f") == 0
    assert moved(before, after, "lazymcp_server_failures_total", server="f") == 1
    assert moved(before, after, "lazymcp_server_failures_total", server="math") == 0


@pytest.mark.anyio
async def test_sessions_is_the_http_sessions_open_now(port: int) -> None:
    before = await scrape(port)
    one = await open_session(port, bearer("bob"))
    await open_session(port, bearer("bob"))
    opened = await scrape(port)
    status, _, _ = await http(port, "DELETE", b"", one)
    after = await scrape(port)
    assert status == 200
    assert moved(before, opened, "lazymcp_sessions") == 2
    assert moved(before, after, "lazymcp_sessions") == 1


@pytest.mark.anyio
async def test_rate_limited_total_counts_calls_past_a_servers_limit_however_named(port: int) -> None:
    session = await open_session(port, bearer("alice"))
    before = await scrape(port)
    with anyio.fail_after(TIMEOUT):
        _, first = await post(port, tool_call(10, "lim__echo", text="hi"), session)  # the one call a minute
        await post(port, tool_call(11, "lim__echo", text="hi"), session)
        await post(port, invoke(12, "lim__echo", text="hi"), session)
    after = await scrape(port)
    assert first is not None and "result" in first
    assert moved(before, after, "lazymcp_rate_limited_total") == 2
    limited = moved(before, after, "lazymcp_tool_calls_total", server="lim", tool="echo", outcome="rate_limited")
    assert limited == 2
    assert moved(before, after, "lazymcp_tool_call_seconds_count", server="lim") == 1


@pytest.mark.anyio
async def test_denied_total_counts_calls_the_policy_refuses_direct_or_through_invoke_tool(port: int) -> None:
    session = await open_session(port, bearer("bob"))
    before = await scrape(port)
    with anyio.fail_after(TIMEOUT):
        refused = [
            await post(port, tool_call(10, "math__add", a=1, b=2), session),
            await post(port, invoke(11, "math__upper", text="x"), session),
        ]
        for status, answer in refused:  # answered as tools it does not know, by the policy
            assert status == 200 and answer is not None and "unknown_tool" in json.dumps(answer), (status, answer)
        _, granted = await post(port, tool_call(12, "math__echo", text="x"), session)
    after = await scrape(port)
    assert granted is not None and "result" in granted, granted
    assert moved(before, after, "lazymcp_denied_total") == 2
    assert moved(before, after, "lazymcp_tool_calls_total", server="", tool="", outcome="denied") == 2
    assert moved(before, after, "lazymcp_rate_limited_total") == 0


@pytest.mark.anyio
async def test_three_hundred_made_up_names_add_no_series(port: int) -> None:
    """Unknown names under a granted server, names of no server, a real tool not granted, direct and through
    ``invoke_tool``; past dave's 100 calls a minute they are rate-limited too."""
    session = await open_session(port, bearer("dave"))
    before = await scrape(port)
    with anyio.fail_after(TIMEOUT * 4):
        for number in range(100):
            await post(port, tool_call(1000 + number, f"math__nope_{number}"), session)
            await post(port, tool_call(2000 + number, f"zz{number}__nope"), session)
            await post(port, invoke(3000 + number, f"yy{number}__nope" if number % 2 else "f__ok"), session)
    after = await scrape(port)
    assert not any("nope" in str(labels) or ("tool", "f__ok") in labels for _, labels in after)
    new = {key for key in after if key not in before}
    # whatever ran before on this gateway, the calls may add these series and no other: one per outcome
    requests = {("lazymcp_requests_total", (("method", "tools/call"), ("outcome", o))) for o in ("ok", "error")}
    unnamed = (("server", ""), ("tool", ""))
    calls = {
        ("lazymcp_tool_calls_total", (("outcome", o), *unnamed)) for o in ("unknown_tool", "denied", "rate_limited")
    }
    assert new <= requests | calls, new - requests - calls
    refused = moved(before, after, "lazymcp_denied_total") + moved(before, after, "lazymcp_rate_limited_total")
    unknown = moved(before, after, "lazymcp_tool_calls_total", server="", tool="", outcome="unknown_tool")
    assert refused + unknown == 300
    assert moved(before, after, "lazymcp_rate_limited_total") > 0  # under it, 300 calls would take 2 minutes


@pytest.mark.anyio
async def test_metrics_are_served_to_principals_granted_metrics_only(port: int) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
        url = f"http://127.0.0.1:{port}/metrics"
        answers = {who: await client.get(url, headers=bearer(who)) for who in TOKENS}
        nobody = await client.get(url)
        wrong = await client.get(url, headers={"Authorization": "Bearer not-a-token"})
    assert answers["alice"].status_code == 200 and answers["carol"].status_code == 200  # carol: metrics alone
    assert "lazymcp_sessions" in answers["carol"].text
    for who in ("bob", "dave"):
        assert answers[who].status_code == 403
        assert answers[who].text.count("\n") == 1 and "metrics" in answers[who].text
        assert "lazymcp_" not in answers[who].text
    assert nobody.status_code == 401 and wrong.status_code == 401


@needs_redis
@pytest.mark.anyio
async def test_forwarded_total_counts_requests_handed_to_their_sessions_owner(tmp_path: Path) -> None:
    redis_port, one, two = free_port(), free_port(), free_port()
    config = config_of(tmp_path, p=PID_SERVER)
    async with redis_server(redis_port), instance(config, tmp_path / "a", one, redis_port):
        async with instance(config, tmp_path / "b", two, redis_port):
            with anyio.fail_after(TIMEOUT):
                session = await open_session(one)
                before = {port: await scrape_open(port) for port in (one, two)}
                await post(one, tool_call(2, "p__whoami"), session)
                for number in range(3, 6):
                    status, _ = await post(two, tool_call(number, "p__whoami"), session)
                    assert status == 200
                after = {port: await scrape_open(port) for port in (one, two)}
    assert moved(before[two], after[two], "lazymcp_forwarded_total") == 3
    assert moved(before[one], after[one], "lazymcp_forwarded_total") == 0
    assert moved(before[one], after[one], "lazymcp_tool_calls_total", server="p", tool="whoami", outcome="ok") == 4


async def scrape_open(port: int) -> Page:
    """The page of a gateway without tokens or policy (a loopback front open to all)."""
    async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
        page = await client.get(f"http://127.0.0.1:{port}/metrics")
    assert page.status_code == 200, page.text
    return samples(page.text)


@pytest.mark.anyio
async def test_a_policy_edit_granting_metrics_applies_without_a_restart(tmp_path: Path) -> None:
    from .test_reload import pid_entry, write_config, write_tokens

    config, tokens = tmp_path / "mcp.json", tmp_path / "tokens"
    write_config(config, {"p": pid_entry()}, {"alice": {"allow": ["p__*"]}})
    write_tokens(tokens, "alice: tok-alice-1\n")
    port = free_port()
    flags = ["--token-file", str(tokens)]
    url = f"http://127.0.0.1:{port}/metrics"
    async with http_gateway(config, tmp_path / "cache", port, flags):
        async with httpx2.AsyncClient(timeout=TIMEOUT, headers=bearer("alice")) as client:
            refused = await client.get(url)
            write_config(config, {"p": pid_entry()}, {"alice": {"allow": ["p__*"], "metrics": True}})

            async def granted() -> bool:
                return (await client.get(url)).status_code == 200

            await until(granted, within=TIMEOUT, what="the new policy's metrics grant")
    assert refused.status_code == 403
