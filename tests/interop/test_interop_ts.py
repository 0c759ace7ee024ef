"""The official TypeScript SDK client against lazymcp: another ecosystem's client, nobody's here.

``tests/interop/ts_client.mjs`` drives ``Client`` from ``@modelcontextprotocol/sdk`` (installed from
the npm registry into ``npm-interop-ts`` of the install cache) against ``lazymcp serve`` (the built-in sample
catalog, default options) and against ``lazymcp proxy`` wrapping the reference server
``@modelcontextprotocol/server-everything``, each over stdio (the client spawns lazymcp) and over
streamable HTTP (``--http``, a process started here). Each configuration runs the script twice:

- as a stock client (capabilities ``{}``): the SDK's own validated ``listTools()`` takes the stock
  stubs and the ``describe_tools``, ``search_tools`` and ``invoke_tool`` meta-tools, ``callTool`` calls tools it knows
  only from a stub;
- as a declaring client (``capabilities.extensions["io.lazymcp/lazy-tools"] = {}``, a member the
  TS SDK's schema has): its default listing is bare stubs, which only a raw request can take.

Both also send raw requests: ``tools/list`` with ``lazy: false`` (checked against what the server
itself defines, byte for byte) and ``lazy: true``, ``tools/describe`` and ``tools/describe_batch``;
and call a tool with arguments its schema refuses (LT-14). Through the proxy they read resources, a
resource template and prompts, complete a prompt argument, ping, and call a tool whose structured
output the SDK checks against the output schema it got from ``listTools({lazy: false})``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from lazymcp.client import raw_request
from lazymcp.tools.sample import sample_tools

from ..conftest import DEFAULT_SETTINGS, META_TOOL, SEARCH_TOOL, STOCK_STUB_KEYS, free_port
from ..interop.support import HOST, INTEROP, lazymcp, node, serving, ts_sdk_package

SCRIPT_TIMEOUT = 60.0
"""Bound on one run of the script (it bounds itself at 40 s, and each request at 15 s)."""

SERVE = {"kind": "serve", "tool": "issues_get", "good": {"issue_id": "ISS-42"}, "bad": {"issue_id": 42}}
EVERYTHING = {"kind": "everything", "tool": "get-sum", "good": {"a": 2, "b": 3}, "bad": {"a": "two"}}
TRANSPORTS = ("stdio", "http")


@pytest.fixture(scope="module")
def ts_sdk() -> Path:
    return ts_sdk_package()


def run_ts(sdk: Path, target: dict[str, Any], case: dict[str, Any], *, declare: bool) -> dict[str, Any]:
    """One run of ts_client.mjs; its steps by name."""
    config = {"sdk": str(sdk), **target, **case, "declare": declare, "timeoutMs": 40000}
    try:
        done = subprocess.run(
            [node(), str(INTEROP / "ts_client.mjs"), json.dumps(config)],
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"ts_client.mjs did not finish within {SCRIPT_TIMEOUT:.0f} s; stderr:\n{exc.stderr!r}")
    assert done.returncode == 0, f"ts_client.mjs exited with {done.returncode}:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])["steps"]


def value(steps: dict[str, Any], name: str) -> Any:
    step = steps[name]
    assert step["ok"], f"{name} failed in the TS client: {step['error']}"
    return step["value"]


def text_of(result: dict[str, Any]) -> str:
    [block] = [block for block in result["content"] if block["type"] == "text"]
    return block["text"]


def check_lazy_side(steps: dict[str, Any], full: list[dict[str, Any]], case: dict[str, Any], *, declare: bool) -> None:
    """What the extension promises, seen from the TS client; ``full`` is the server's own listing."""
    names = [tool["name"] for tool in full]
    by_name = {tool["name"]: tool for tool in full}
    tool = case["tool"]

    connected = value(steps, "connect")
    assert connected["advertised"] == DEFAULT_SETTINGS  # LT-02, read by the TS SDK
    assert connected["toolsListChanged"] is True

    # LT-05: lazy: false is the server's listing exactly, as raw JSON and through the SDK's own
    # validated listTools (whose zod parsing keeps every member, though not their order).
    assert json.dumps(value(steps, "rawLazyFalse")) == json.dumps(full)
    assert value(steps, "listToolsLazyFalse") == full

    if declare:  # LT-06: bare stubs, no meta-tool, for a declaring client by default and with lazy: true
        stubs = value(steps, "listDefaultRaw")
        assert [stub["name"] for stub in stubs] == names
        assert all(set(stub) <= {"name", "description"} for stub in stubs)
        assert value(steps, "rawLazyTrue") == stubs
    else:  # LT-07: valid MCP stubs after the meta-tools, accepted by the SDK's schema validation
        listed = value(steps, "listTools")
        assert listed["nextCursor"] is None
        describe_meta, search_meta, invoke_meta, *stubs = listed["tools"]  # the default describe mode's three
        assert describe_meta["name"] == META_TOOL and describe_meta["inputSchema"]["required"] == ["names"]
        assert search_meta["name"] == SEARCH_TOOL and search_meta["inputSchema"]["required"] == ["query"]
        assert invoke_meta["name"] == "invoke_tool" and invoke_meta["inputSchema"]["required"] == ["name"]
        assert [stub["name"] for stub in stubs] == names
        for stub in stubs:
            assert stub["inputSchema"] == {"type": "object", "properties": {}}
            assert set(stub) <= STOCK_STUB_KEYS
        assert value(steps, "rawLazyTrue") == listed["tools"]

    # LT-10, LT-11, LT-12: describes equal the full entries.
    assert json.dumps(value(steps, "describe")) == json.dumps(by_name[tool])
    batch = value(steps, "describeBatch")
    assert json.dumps(batch["tools"]) == json.dumps([by_name[tool]])
    assert batch["unknown"] == ["no-such-tool"]
    unknown = steps["describeUnknown"]
    assert not unknown["ok"], unknown
    assert unknown["error"]["code"] == -32602
    assert unknown["error"]["data"]["reason"] == "unknown_tool"
    assert tool in unknown["error"]["data"]["suggestions"]

    # The meta-tool, called as any tool through the SDK's callTool.
    described = value(steps, "metaTool")
    assert described["isError"] is False
    assert json.dumps(described["payload"]["tools"]) == json.dumps([by_name[tool]])
    assert described["payload"]["unknown"] == []

    # A tool the client may know only from its stub runs; arguments its real schema refuses do not
    # reach it, and the answer carries the schema (LT-14).
    assert value(steps, "callGood").get("isError") is not True
    refused = value(steps, "callBad")
    assert refused["isError"] is True
    refusal = text_of(refused)
    assert "not called" in refusal
    assert json.dumps(by_name[tool]["inputSchema"], separators=(",", ":"), ensure_ascii=False) in refusal

    assert value(steps, "close") is True


def check_everything_passthrough(steps: dict[str, Any]) -> None:
    """Resources, prompts, completion and ping reach server-everything through the proxy."""
    assert text_of(value(steps, "callGood")) == "The sum of 2 and 3 is 5."
    structured = value(steps, "structured")
    assert set(structured["structuredContent"]) == {"temperature", "conditions", "humidity"}
    assert value(steps, "ping") == {}
    resources = value(steps, "resources")
    assert resources["count"] >= 1
    assert resources["read"]["contents"][0]["uri"] == resources["read"]["uri"]
    assert "demo://resource/dynamic/text/{resourceId}" in resources["templates"]
    [content] = value(steps, "templateRead")["contents"]
    assert content["uri"] == "demo://resource/dynamic/text/1" and content["text"].startswith("Resource 1:")
    prompts = value(steps, "prompts")
    assert {"simple-prompt", "args-prompt"} <= set(prompts["names"])
    assert prompts["simple"][0]["content"]["type"] == "text"
    assert "Paris, TX" in prompts["args"][0]["content"]["text"]
    assert value(steps, "complete")["completion"]["values"] == ["Engineering"]


def everything_listing(command: list[str]) -> list[dict[str, Any]]:
    """server-everything's own ``tools/list``, asked directly by the Python SDK (no capabilities)."""

    async def listing() -> list[dict[str, Any]]:
        with anyio.fail_after(30):
            async with Client(StdioServerParameters(command=command[0], args=command[1:]), mode="legacy") as client:
                return (await raw_request(client.session, "tools/list"))["tools"]

    return anyio.run(listing)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_sdk_client_against_lazymcp_serve(ts_sdk: Path, tmp_path: Path, transport: str) -> None:
    full = sample_tools()
    if transport == "stdio":
        target = {"stdio": {"command": sys.executable, "args": ["-m", "lazymcp", "serve"]}}
        runs = {declare: run_ts(ts_sdk, target, SERVE, declare=declare) for declare in (False, True)}
    else:
        port = free_port()
        with serving(lazymcp("serve", "--http", f"{HOST}:{port}"), port, tmp_path / "serve.log") as served:
            runs = {declare: run_ts(ts_sdk, {"url": served.url}, SERVE, declare=declare) for declare in (False, True)}
    for declare, steps in runs.items():
        assert value(steps, "connect")["server"]["name"] == "lazymcp-serve"
        assert (value(steps, "connect")["sessionId"] is not None) == (transport == "http")
        check_lazy_side(steps, full, SERVE, declare=declare)
        assert json.loads(text_of(value(steps, "callGood"))) == SERVE["good"]  # serve echoes the arguments


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_sdk_client_through_the_proxy_to_server_everything(
    ts_sdk: Path, everything_command: list[str], tmp_path: Path, transport: str
) -> None:
    full = everything_listing(everything_command)
    if transport == "stdio":
        target = {"stdio": {"command": sys.executable, "args": ["-m", "lazymcp", "proxy", "--", *everything_command]}}
        runs = {declare: run_ts(ts_sdk, target, EVERYTHING, declare=declare) for declare in (False, True)}
    else:
        port = free_port()
        command = lazymcp("proxy", "--http", f"{HOST}:{port}", "--", *everything_command)
        with serving(command, port, tmp_path / "proxy.log") as served:
            runs = {
                declare: run_ts(ts_sdk, {"url": served.url}, EVERYTHING, declare=declare) for declare in (False, True)
            }
    for declare, steps in runs.items():
        assert value(steps, "connect")["server"]["name"] == "mcp-servers/everything"
        check_lazy_side(steps, full, EVERYTHING, declare=declare)
        check_everything_passthrough(steps)
