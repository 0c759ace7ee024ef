"""``tools/manifest`` and the draft's ``tools/describe {names}`` from every front end that serves the
extension (spec/lazy-tools.md §18): ``lazymcp serve`` to real SDK clients over stdio and HTTP in both eras,
``lazymcp proxy`` in front of a plain SDK server, and ``lazymcp gateway``, which answers from its manifests
without starting a server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp.shared.exceptions import MCPError

from lazymcp.client import LazyClient, raw_request
from lazymcp.tools.digests import Digest

from ..conftest import ERAS, SERVERS, SMALL_TOOLS, free_port
from ..raw import (
    INIT,
    INITIALIZED,
    TIMEOUT,
    children,
    config_of,
    gateway,
    http_gateway,
    http_proxy,
    mcp_url,
    peer,
    proxy,
    request,
)
from ..run.test_transports import TRANSPORTS, serving

NAMES = [tool["name"] for tool in SMALL_TOOLS]
PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(SMALL_TOOLS))
    return path


def digests_of(tools: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(tool["name"], (d := Digest.of(tool)).digest, d.size) for tool in tools]


def entries_of(result: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(entry["name"], entry["digest"], entry["size"]) for entry in result["entries"]]


async def refused(session: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The error data of a draft describe the server must refuse with -32602."""
    with pytest.raises(MCPError) as caught:
        await raw_request(session, "tools/describe", params)
    assert caught.value.error.code == -32602
    data = caught.value.error.data
    assert isinstance(data, dict)
    return data


# --- lazymcp serve, to a stock SDK client ------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.requirement("LT-34")
@pytest.mark.requirement("LT-35")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_stock_sdk_client_gets_the_manifest_and_describes_by_names(
    transport: str, mode: str, catalog_file: Path
) -> None:
    with anyio.fail_after(30):
        async with serving(transport, catalog_file) as target, mcp.Client(target, mode=mode) as client:
            manifest = await raw_request(client.session, "tools/manifest")
            described = await raw_request(client.session, "tools/describe", {"names": [NAMES[2], NAMES[0]]})
            unknown = await refused(client.session, {"names": [NAMES[0], "nope"]})
            empty = await refused(client.session, {"names": []})
            too_many = await refused(client.session, {"names": [NAMES[0]] * 101})
            listed = await raw_request(client.session, "tools/list", {"lazy": True})
            discovered = await raw_request(client.session, "server/discover") if mode != "legacy" else None
    assert entries_of(manifest) == digests_of(SMALL_TOOLS)
    assert [json.dumps(tool) for tool in described["tools"]] == [json.dumps(SMALL_TOOLS[i]) for i in (2, 0)]
    assert unknown["unknownNames"] == ["nope"]
    assert (empty["reason"], too_many["reason"], too_many["maxNames"]) == ("empty", "maxNames", 100)
    assert all("digest" not in stub for stub in listed["tools"])
    if discovered is not None:
        assert manifest["resultType"] == "complete" and "ttlMs" in manifest
        assert discovered["capabilities"]["tools"]["manifest"] == {"maxNames": 100}


@pytest.mark.anyio
@pytest.mark.requirement("LT-32")
async def test_serve_advertises_the_capability_in_its_initialize_result(catalog_file: Path) -> None:
    """What the SDK client's capability model drops on the way in, seen on the wire."""
    with anyio.fail_after(TIMEOUT):
        async with peer([sys.executable, "-m", "lazymcp", "serve", "--catalog", str(catalog_file)]) as client:
            await client.send(request(0, "initialize", INIT))
            init = await client.answer(0)
    assert init["result"]["capabilities"]["tools"] == {"listChanged": True, "manifest": {"maxNames": 100}}


# --- lazymcp proxy -----------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.requirement("LT-32")
@pytest.mark.requirement("LT-36")
async def test_the_proxy_advertises_the_capability_and_digests_its_server_s_tools() -> None:
    with anyio.fail_after(TIMEOUT):
        async with peer(proxy(*PLAIN)) as client:
            await client.send(request(0, "initialize", INIT))
            init = await client.answer(0)
            await client.send(INITIALIZED, request(1, "tools/list", {"lazy": False}), request(2, "tools/manifest"))
            full = (await client.answer(1))["result"]["tools"]
            manifest = (await client.answer(2))["result"]
            await client.send(request(3, "tools/describe", {"names": ["echo", "missing", "gone"]}))
            error = (await client.answer(3))["error"]
    assert init["result"]["capabilities"]["tools"]["manifest"] == {"maxNames": 100}
    assert [tool["name"] for tool in full] == ["add", "echo", "upper"]
    assert entries_of(manifest) == digests_of(full)
    assert error["code"] == -32602 and error["data"]["unknownNames"] == ["missing", "gone"]


# --- lazymcp gateway ---------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.requirement("LT-36")
async def test_the_gateway_answers_the_manifest_from_its_manifests_without_starting_a_server(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    config = config_of(tmp_path, a=PLAIN, b=PLAIN)
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, cache) as first:
            await first.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/list"))
            await first.answer(1)
            await first.send(
                request(2, "tools/manifest"), request(3, "tools/describe", {"names": ["b__add", "a__echo"]})
            )
            before = (await first.answer(2))["result"]
            described = (await first.answer(3))["result"]["tools"]
            assert first.process.stdin is not None
            await first.process.stdin.aclose()  # the client leaves: the gateway ends, its manifests written
            assert await first.process.wait() == 0
        async with gateway(config, cache) as second:
            await second.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/manifest"))
            init = await second.answer(0)
            after = (await second.answer(1))["result"]
            started = children(second.process.pid)
    assert init["result"]["capabilities"]["tools"]["manifest"] == {"maxNames": 100}
    assert [entry["name"] for entry in after["entries"]] == [
        f"{s}__{t}" for s in "ab" for t in ("add", "echo", "upper")
    ]
    assert after == before
    assert started == []
    by_name = {entry["name"]: entry["digest"] for entry in after["entries"]}
    assert [by_name[tool["name"]] for tool in described] == [Digest.of(tool).digest for tool in described]
    assert by_name["a__add"] != by_name["b__add"]  # the renamed tool is digested, not the server's


# --- over HTTP: the proxy and the gateway, to LazyClient in both eras --------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("front", ["proxy", "gateway"])
async def test_over_http_a_second_lazy_client_session_describes_from_its_cache(
    tmp_path: Path, front: str, mode: str
) -> None:
    """The proxy's and the gateway's manifests over streamable HTTP: a ``LazyClient``'s second session
    describes without a request what its first one described, and gets the same tools."""
    cache = tmp_path / "tools"
    port = free_port()
    if front == "proxy":
        server = http_proxy(*PLAIN)
        names = ["echo", "add"]
    else:
        server = http_gateway(config_of(tmp_path, a=PLAIN), tmp_path / "manifests", port)
        names = ["a__echo", "a__add"]
    with anyio.fail_after(TIMEOUT * 2):
        async with server as started:
            url = mcp_url(started[0] if isinstance(started, tuple) else port)
            sessions: list[tuple[list[Any], int, dict[str, Any]]] = []
            for _ in range(2):
                async with LazyClient(url, mode=mode, cache=cache) as client:
                    described = [await client.describe(name) for name in names]
                    manifest = await client.request("tools/manifest")
                    sessions.append((described, client.described_from_cache, manifest))
                    if mode != "legacy":
                        discovered = await client.request("server/discover")
                        assert discovered["capabilities"]["tools"]["manifest"] == {"maxNames": 100}
    (first, first_cached, manifest), (second, second_cached, _) = sessions
    assert (first_cached, second_cached) == (0, len(names))
    assert second == first
    digests = {entry["name"]: entry["digest"] for entry in manifest["entries"]}
    assert [digests[tool["name"]] for tool in first] == [Digest.of(tool).digest for tool in first]
