"""The proxy: its routing rules without I/O, then real processes over real pipes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from lazymcp import EXT_ID, LazyClient
from lazymcp.core.actions import Fail, Ready, ToClient, ToServer
from lazymcp.core.proxy import Proxy

from ..conftest import ERAS, SERVERS, SMALL_TOOLS, free_port
from ..cores import UPSTREAM, proxy_core, wire
from ..raw import MODERN, PID_SERVER, line, listening, mcp_url, peer, proxy, request, tool_call

TIMEOUT = 20


def legacy_router(tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> tuple[Proxy, list[Any]]:
    """The proxy's core through the 2025 handshake, with the upstream's catalog fetched."""
    router = proxy_core(**kwargs)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    assert wire(router.from_client(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}), 0)) == [
        ("server", line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
    ]
    result = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "u", "version": "1"},
    }
    [answer] = router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": 1, "result": result}), 0)
    assert isinstance(answer, ToClient)
    fetch = router.from_client(line({"jsonrpc": "2.0", "method": "notifications/initialized"}), 0)
    own = json.loads(fetch[-1].data)  # type: ignore[union-attr]
    assert own["method"] == "tools/list" and own["params"] == {"lazy": False}
    sent = router.from_server(
        UPSTREAM, line({"jsonrpc": "2.0", "id": own["id"], "result": {"tools": tools or SMALL_TOOLS}}), 0
    )
    assert [type(action) for action in sent] == [Ready]  # the first catalog: the start-up line can be said
    return router, [answer]


def test_the_router_advertises_the_extension_in_the_initialize_result() -> None:
    _, [answer] = legacy_router()
    caps = json.loads(answer.data)["result"]["capabilities"]
    assert EXT_ID in caps["extensions"] and caps["tools"]["listChanged"] is True


@pytest.mark.requirement("LT-05")
def test_the_router_answers_listings_from_the_upstreams_own_tools() -> None:
    router, _ = legacy_router()
    [full] = router.from_client(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"lazy": False}}), 0)
    [stock] = router.from_client(line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}), 0)
    assert isinstance(full, ToClient) and json.loads(full.data)["result"]["tools"] == SMALL_TOOLS
    stock_names = [t["name"] for t in json.loads(stock.data)["result"]["tools"]]
    assert stock_names[:4] == ["describe_tools", "search_tools", "invoke_tool", "issues_create"]


def test_everything_else_passes_through_as_the_same_bytes() -> None:
    router, _ = legacy_router()
    for raw in (
        b'{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x://1"}}',
        b'{"jsonrpc": "2.0", "id": "s1", "method": "prompts/get", "params": {"name": "p"}}',
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}',
        b'{"jsonrpc":"2.0","id":9,"result":{"role":"assistant"}}',  # answer to a sampling request
    ):
        assert wire(router.from_client(raw, 0)) == [("server", raw)]
    back = b'{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}'
    assert wire(router.from_server(UPSTREAM, back, 0)) == [("client", back)]
    sampling = b'{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}'
    assert wire(router.from_server(UPSTREAM, sampling, 0)) == [("client", sampling)]


def test_a_late_answer_is_never_delivered_twice() -> None:
    router, _ = legacy_router()
    request = line({"jsonrpc": "2.0", "id": 5, "method": "ping"})
    router.from_client(request, 0)
    answer = line({"jsonrpc": "2.0", "id": 5, "result": {}})
    assert wire(router.from_server(UPSTREAM, answer, 0)) == [("client", answer)]
    assert router.from_server(UPSTREAM, answer, 0) == []


def test_a_failed_upstream_owes_every_request_an_error() -> None:
    router, _ = legacy_router()
    for request_id in (10, "eleven"):
        router.from_client(line({"jsonrpc": "2.0", "id": request_id, "method": "resources/list"}), 0)
    errors = router.interrupt("the upstream server exited with code 3", 0)
    assert sorted(str(json.loads(e.data)["id"]) for e in errors) == ["10", "eleven"]  # type: ignore[union-attr]
    assert {json.loads(e.data)["error"]["code"] for e in errors} == {-32000}  # type: ignore[union-attr]
    [later] = router.from_client(line({"jsonrpc": "2.0", "id": 12, "method": "ping"}), 0)
    assert isinstance(later, ToClient) and json.loads(later.data)["error"]["code"] == -32000


def test_garbage_from_the_upstream_fails_it_and_a_hang_times_out() -> None:
    router, _ = legacy_router(timeout=5)
    assert isinstance(router.from_server(UPSTREAM, b"hello world", 0)[0], Fail)
    call = {"name": "echo", "arguments": {"text": "x"}}
    assert router.from_client(line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}), 0)
    assert router.expire(4.9) == []
    [fail] = router.expire(5.1)
    assert isinstance(fail, Fail) and "within 5 s" in fail.reason


@pytest.mark.requirement("LT-16")
def test_list_changed_waits_for_the_new_catalog() -> None:
    router, _ = legacy_router()
    notice = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'
    [refetch] = router.from_client(line({"jsonrpc": "2.0", "id": 3, "method": "ping"}), 2) and router.from_server(
        UPSTREAM, notice, 2
    )
    own = json.loads(refetch.data)  # type: ignore[union-attr]
    assert own["method"] == "tools/list"
    grown = [*SMALL_TOOLS, {"name": "new_tool", "inputSchema": {"type": "object"}}]
    actions = router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": own["id"], "result": {"tools": grown}}), 2)
    assert wire(actions) == [("client", notice)]
    assert router.catalog is not None and router.catalog.get("new_tool") is not None


def test_a_server_that_keeps_changing_is_listed_once_a_second_and_its_changes_are_told_once() -> None:
    router, _ = legacy_router()  # its first list came at 0
    notice = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'
    assert router.from_server(UPSTREAM, notice, 0.2) == []  # within a second of the last list: put off
    assert router.from_server(UPSTREAM, notice, 0.5) == []
    assert router.expire(0.9) == []
    [refetch] = router.expire(1.0)
    own = json.loads(refetch.data)  # type: ignore[union-attr]
    assert own["method"] == "tools/list"
    assert router.from_server(UPSTREAM, notice, 1.1) == []  # under way: another follows it
    grown = [*SMALL_TOOLS, {"name": "new_tool", "inputSchema": {"type": "object"}}]
    answered = line({"jsonrpc": "2.0", "id": own["id"], "result": {"tools": grown}})
    assert wire(router.from_server(UPSTREAM, answered, 1.2)) == [("client", notice)] * 3  # each, once it is in
    assert router.expire(2.1) == []
    [again] = router.expire(2.2)
    assert json.loads(again.data)["method"] == "tools/list"  # type: ignore[union-attr]


def test_tool_requests_before_the_catalog_wait_for_it() -> None:
    router = proxy_core()
    init = {"protocolVersion": "2025-11-25", "capabilities": {"extensions": {EXT_ID: {}}}, "clientInfo": {}}
    router.from_client(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}), 0)
    router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {}}}), 0)
    [fetch] = router.from_client(line({"jsonrpc": "2.0", "method": "notifications/initialized"}), 0)[1:]
    assert router.from_client(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), 0) == []
    own = json.loads(fetch.data)  # type: ignore[union-attr]
    ready, answer = router.from_server(
        UPSTREAM, line({"jsonrpc": "2.0", "id": own["id"], "result": {"tools": SMALL_TOOLS}}), 0
    )
    assert isinstance(ready, Ready)
    stubs = json.loads(answer.data)["result"]["tools"]  # type: ignore[union-attr]
    assert stubs[0] == {"name": "issues_create", "description": "Create an issue in a project."}


# --- real processes ---------------------------------------------------------------------------


def proxy_params(*upstream: str, timeout: float = 30) -> StdioServerParameters:
    args = ["-m", "lazymcp", "proxy", "--timeout", str(timeout), "--", *upstream]
    return StdioServerParameters(command=sys.executable, args=args)


@pytest.mark.anyio
@pytest.mark.requirement("LT-16")
@pytest.mark.parametrize("mode", ERAS)
async def test_a_changing_upstream_reaches_the_client_as_list_changed(mode: str) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    params = proxy_params(sys.executable, str(SERVERS / "changing_server.py"))
    with anyio.fail_after(TIMEOUT):
        async with LazyClient(params, mode=mode, message_handler=on_message) as client:
            assert [stub["name"] for stub in await client.list_stubs()] == ["grow"]
            if mode == "legacy":
                await client.call_tool("grow", {})
                await changed.wait()
            else:
                async with client.client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("grow", {})
                    async for _event in subscription:
                        break
            stubs = await client.list_stubs()
            described = await client.describe("extra_1")
            called = await client.call_tool("extra_1", {"text": "hi"})
    assert [stub["name"] for stub in stubs] == ["grow", "extra_1"]
    assert described["description"] == "Extra tool number 1. Added at runtime."
    assert called.content[0].text == "extra_1: hi"  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_a_lazy_upstream_behind_the_proxy_still_hands_over_full_tools(mode: str, tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(SMALL_TOOLS))
    upstream = [sys.executable, "-m", "lazymcp", "serve", "--catalog", str(catalog)]
    with anyio.fail_after(TIMEOUT):
        async with LazyClient(proxy_params(*upstream), mode=mode) as client:
            full = await client.list_full()
            result = await client.call_tool("echo", {"text": "x"})
        async with Client(proxy_params(*upstream), mode=mode) as stock:
            listing = await stock.list_tools()
    assert json.dumps(full) == json.dumps(SMALL_TOOLS)
    assert result.content[0].text == '{"text":"x"}'  # type: ignore[union-attr]
    assert [tool.name for tool in listing.tools] == [
        "describe_tools",
        "search_tools",
        "invoke_tool",
        *(tool["name"] for tool in SMALL_TOOLS),
    ]


FAULTY = (sys.executable, str(SERVERS / "faulty_server.py"))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "upstream_timeout", "cause"),
    [
        ("die", 30, "exited with code 3"),
        ("hang", 2, "did not answer tools/call within 2 s"),
        ("garbage", 30, "not JSON-RPC"),
    ],
)
async def test_an_upstream_fault_answers_the_request_in_flight_and_exits_nonzero(
    tool: str, upstream_timeout: float, cause: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*FAULTY, timeout=upstream_timeout)) as client:
            await client.handshake()
            await client.send(tool_call(1, "ok", text="fine"))
            assert (await client.answer(1))["result"]
            await client.send(tool_call(2, tool))
            answer = await client.answer(2)
            code = await client.process.wait()
            stderr = await client.stderr()
    assert answer["error"]["code"] == -32000
    assert cause in answer["error"]["data"]["reason"]
    assert code == 1
    assert cause in stderr


@pytest.mark.anyio
@pytest.mark.parametrize("upstream", [("/nonexistent/mcp-server",), (*FAULTY, "--fail-at-start")])
async def test_an_upstream_that_cannot_start_is_reported_and_nothing_hangs(upstream: tuple[str, ...]) -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*upstream, timeout=30)) as client:
            try:
                await client.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
                reply = await client.out.receive_until(b"\n", 1 << 20)
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                reply = b""  # the proxy had already gone: the client sees its pipe close
            code = await client.process.wait()
            stderr = await client.stderr()
    assert code == 1
    assert reply == b"" or json.loads(reply)["error"]["code"] == -32000
    assert "cannot start" in stderr or "exited with code 7" in stderr


@pytest.mark.anyio
async def test_the_proxy_exits_cleanly_when_the_client_leaves() -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*FAULTY, timeout=30)) as client:
            await client.handshake()
            assert client.process.stdin is not None
            await client.process.stdin.aclose()
            assert await client.process.wait() == 0


def test_a_modern_client_before_a_legacy_upstream_is_bridged() -> None:
    router = proxy_core()
    request = {"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {"_meta": MODERN}}
    [probe] = router.from_client(line(request), 0)
    probe_message = json.loads(probe.data)  # type: ignore[union-attr]
    assert probe_message["method"] == "server/discover"
    not_found = {"jsonrpc": "2.0", "id": probe_message["id"], "error": {"code": -32601, "message": "Method not found"}}
    [init] = router.from_server(UPSTREAM, line(not_found), 0)
    init_message = json.loads(init.data)  # type: ignore[union-attr]
    assert init_message["method"] == "initialize" and init_message["params"]["capabilities"] == {}
    init_result = {"protocolVersion": "2025-11-25", "capabilities": {"prompts": {}}, "serverInfo": {"name": "old"}}
    actions = router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": init_message["id"], "result": init_result}), 0)
    sent = [json.loads(action.data) for action in actions]  # type: ignore[union-attr]
    assert [m.get("method") for m in sent] == ["notifications/initialized", "tools/list", "prompts/list"]
    assert sent[2] == {"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {}}  # no envelope upstream
    assert router.bridging
    [answer] = router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": 1, "result": {"prompts": []}}), 0)
    result = json.loads(answer.data)["result"]  # type: ignore[union-attr]
    assert result == {
        "cacheScope": "private",
        "prompts": [],
        "resultType": "complete",
        "ttlMs": 0,
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "old"}},
    }


def test_a_bridged_listen_stream_gets_the_upstreams_list_changed() -> None:
    router = proxy_core()
    router.session.record.era, router.upstream.era = "modern", "legacy"
    router.session.bridge.upstream_init = {"capabilities": {"tools": {}}}
    [fetch] = router.upstream.fetch(0)
    own = json.loads(fetch.data)  # type: ignore[union-attr]
    router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": own["id"], "result": {"tools": SMALL_TOOLS}}), 0)
    listen = {"notifications": {"toolsListChanged": True}, "_meta": MODERN}
    [ack] = router.from_client(line({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": listen}), 0)
    assert json.loads(ack.data)["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 9}  # type: ignore[union-attr]
    [refetch] = router.from_server(UPSTREAM, b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}', 2)
    own = json.loads(refetch.data)  # type: ignore[union-attr]
    [event] = router.from_server(
        UPSTREAM, line({"jsonrpc": "2.0", "id": own["id"], "result": {"tools": SMALL_TOOLS[:1]}}), 2
    )
    assert json.loads(event.data) == {  # type: ignore[union-attr]
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 9}},
    }
    sampling = b'{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}'
    [refusal] = router.from_server(UPSTREAM, sampling, 0)
    assert isinstance(refusal, ToServer) and json.loads(refusal.data)["error"]["code"] == -32601


def test_a_bridged_result_goes_through_the_2026_wire_model_of_the_proxys_router() -> None:
    from lazymcp.protocol.limits import Limits
    from lazymcp.run.proxy import proxy_core as run_proxy_core

    router = run_proxy_core(["server"], None, Limits())
    router.started(UPSTREAM, 0)
    router.session.record.era, router.upstream.era = "modern", "legacy"
    router.session.bridge.upstream_init = {"capabilities": {"resources": {}}}
    request = {"jsonrpc": "2.0", "id": 5, "method": "resources/list", "params": {"_meta": MODERN}}
    [up] = router.from_client(line(request), 0)
    assert isinstance(up, ToServer) and "_meta" not in json.loads(up.data)["params"]  # the envelope stays behind
    legacy = {"resources": [{"uri": "file:///a", "name": "a", "bogus": 1}], "nextCursor": None, "extra": 2}
    [down] = router.from_server(UPSTREAM, line({"jsonrpc": "2.0", "id": 5, "result": legacy}), 0)
    assert json.loads(down.data)["result"] == {  # type: ignore[union-attr]
        "resources": [{"uri": "file:///a", "name": "a"}],  # what 2026-07-28 does not define is dropped
        "ttlMs": 0,
        "cacheScope": "private",
        "resultType": "complete",
    }


@pytest.mark.anyio
async def test_a_pinned_2026_aware_client_finds_the_extension_through_the_bridge(everything_command: list[str]) -> None:
    """The bridge leaves server/discover to the 2025-only upstream (-32601, so that auto clients stay in
    2025-11-25); LazyClient then learns the extension from how tools/describe answers."""
    with anyio.fail_after(60):
        async with LazyClient(proxy_params(*everything_command), mode="2026-07-28") as lazy:
            supported = lazy.server_supports_lazy
            tool = await lazy.describe("echo")
            missing = await lazy.describe_batch(["echo", "nope"])
    assert supported and tool["name"] == "echo"
    assert [found["name"] for found in missing[0]] == ["echo"] and missing[1] == ["nope"]


@pytest.mark.anyio
async def test_a_2026_client_reaches_a_2025_only_node_server_through_the_bridge(everything_command: list[str]) -> None:
    params = proxy_params(*everything_command)
    with anyio.fail_after(60):
        async with Client(params, mode="2026-07-28") as client:
            version = client.protocol_version
            listing = await client.list_tools()
            echoed = await client.call_tool("echo", {"message": "across eras"})
            prompt = await client.get_prompt("args-prompt", {"city": "Lima"})
            resources = await client.list_resources()
            contents = await client.read_resource(resources.resources[0].uri)
        async with LazyClient(params, mode="2026-07-28") as lazy:
            stubs = await lazy.list_stubs()
            summed = await lazy.call_tool("get-sum", {"a": 2, "b": 3})
    assert version == "2026-07-28"
    assert [tool.name for tool in listing.tools[:3]] == ["describe_tools", "search_tools", "invoke_tool"]
    assert listing.tools[3].input_schema == {"type": "object", "properties": {}}
    assert echoed.content[0].text == "Echo: across eras"  # type: ignore[union-attr]
    assert "Lima" in prompt.messages[0].content.text  # type: ignore[union-attr]
    assert contents.contents[0].uri == resources.resources[0].uri
    assert "echo" in [stub["name"] for stub in stubs]
    assert summed.content[0].text == "The sum of 2 and 3 is 5."  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_the_proxy_passes_a_call_and_its_answer_through_byte_for_byte() -> None:
    call = b'{"id":5,  "jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"x":"\\u00e9"},"name":"raw"}}'
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*PID_SERVER)) as client:
            await client.handshake()
            await client.send(request(1, "tools/list"))
            await client.answer(1)
            assert client.process.stdin is not None
            await client.process.stdin.send(call + b"\n")
            relayed = await client.out.receive_until(b"\n", 1 << 20)
    expected = {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": call.decode()}]}}
    assert relayed == json.dumps(expected).encode()


# --- over HTTP ----------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_http_clients_reach_a_stdio_server_through_the_proxy(mode: str, everything_command: list[str]) -> None:
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "proxy", "--http", f"127.0.0.1:{port}", "--", *everything_command]
    url = mcp_url(port)
    async with listening(command, port, stderr=None):
        with anyio.fail_after(60):
            async with Client(url, mode=mode) as stock:
                listing = await stock.list_tools()
                echoed = await stock.call_tool("echo", {"message": "over http"})
            async with LazyClient(url, mode=mode) as lazy, LazyClient(url, mode=mode) as other:
                assert lazy.server_supports_lazy
                stubs = await lazy.list_stubs()
                # Two clients, the same request ids, at the same time: each gets its own answer.
                async with anyio.create_task_group() as group:
                    sums: dict[str, str] = {}

                    async def add(client: LazyClient, a: int, key: str) -> None:
                        result = await client.call_tool("get-sum", {"a": a, "b": 1})
                        sums[key] = result.content[0].text  # type: ignore[union-attr]

                    group.start_soon(add, lazy, 1, "first")
                    group.start_soon(add, other, 100, "second")
    assert listing.tools[0].name == "describe_tools"
    assert echoed.content[0].text == "Echo: over http"  # type: ignore[union-attr]
    assert all(set(stub) <= {"name", "description"} for stub in stubs)
    assert sums == {"first": "The sum of 1 and 1 is 2.", "second": "The sum of 100 and 1 is 101."}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_the_proxy_makes_an_http_server_lazy(mode: str, tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(SMALL_TOOLS))
    port = free_port()
    server = [sys.executable, "-m", "lazymcp", "serve", "--catalog", str(catalog), "--http", f"127.0.0.1:{port}"]
    url = mcp_url(port)
    async with listening(server, port, stderr=None):
        params = StdioServerParameters(command=sys.executable, args=["-m", "lazymcp", "proxy", "--url", url])
        with anyio.fail_after(TIMEOUT):
            async with LazyClient(params, mode=mode) as client:
                full = await client.list_full()
                result = await client.call_tool("echo", {"text": "via url"})
    assert json.dumps(full) == json.dumps(SMALL_TOOLS)
    assert result.content[0].text == '{"text":"via url"}'  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.requirement("LT-16")
async def test_a_listen_stream_over_http_gets_list_changed_from_the_upstream() -> None:
    port = free_port()
    upstream = [sys.executable, str(SERVERS / "changing_server.py")]
    command = [sys.executable, "-m", "lazymcp", "proxy", "--http", f"127.0.0.1:{port}", "--", *upstream]
    url = mcp_url(port)
    async with listening(command, port, stderr=None):
        with anyio.fail_after(TIMEOUT):
            async with LazyClient(url, mode="2026-07-28") as client:
                async with client.client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("grow", {})
                    async for _event in subscription:
                        break
                stubs = await client.list_stubs()
    assert [stub["name"] for stub in stubs] == ["grow", "extra_1"]


def test_time_the_upstream_waits_on_the_client_is_not_a_hang() -> None:
    router, _ = legacy_router(timeout=5)
    call = {"name": "echo", "arguments": {"text": "x"}, "_meta": {"progressToken": "t1"}}
    router.from_client(line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}), 0)
    asking = b'{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{}}'
    assert wire(router.from_server(UPSTREAM, asking, 1)) == [("client", asking)]
    assert router.expire(60) == []  # the user is still answering
    router.from_client(b'{"jsonrpc":"2.0","id":0,"result":{"action":"decline"}}', 61)
    assert router.expire(65) == []  # the clock restarted when the client answered
    progress = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t1","progress":1}}'
    router.from_server(UPSTREAM, progress, 65)
    assert router.expire(69) == []  # progress on the request restarted its clock again
    [fail] = router.expire(70.1)
    assert isinstance(fail, Fail)
