"""The lists a gateway's manifests keep (prompts, resources, templates): a list answered from a manifest
must not be one the gateway already knew to be stale, and a fresh one spares starting its server. Real
``lazymcp gateway`` processes over stdio, one after another on one cache, in front of
``servers/lists_server.py``, whose resources live in a file and so outlive its process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ..conftest import SERVERS, until
from ..raw import INIT, INITIALIZED, TIMEOUT, Peer, config_of, gateway, request, tool_call


def one_resource(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A gateway of one ``lists_server.py`` (as ``s``) whose file holds ``memo://one``: that file, the
    gateway's cache, and its configuration."""
    store, cache = tmp_path / "resources.json", tmp_path / "cache"
    store.write_text(json.dumps(["memo://one"]))
    return store, cache, config_of(tmp_path, s=[sys.executable, str(SERVERS / "lists_server.py"), str(store)])


def uris(answer: dict[str, Any]) -> list[str]:
    return [entry["uri"] for entry in answer["result"]["resources"]]


def manifests(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.json"))


async def leave(peer: Peer) -> int:
    """End the client's input; the gateway's exit status."""
    assert peer.process.stdin is not None
    await peer.process.stdin.aclose()
    return await peer.process.wait()


async def start(peer: Peer) -> None:
    await peer.send(request(0, "initialize", INIT), INITIALIZED)
    await peer.answer(0)


async def resources_listed(config: Path, cache: Path) -> list[str]:
    """A gateway session that lists the resources, then leaves (with status 0): the URIs listed."""
    async with gateway(config, cache) as peer:
        await start(peer)
        await peer.send(request(1, "resources/list"))
        listed = uris(await peer.answer(1))
        assert await leave(peer) == 0
    return listed


# --- a stale list is not served ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_resource_list_the_server_said_changed_is_not_served_from_the_manifest(tmp_path: Path) -> None:
    """The server's ``notifications/resources/list_changed`` drops the list from the manifest on disk too,
    not from memory only: kept there, the next gateway would answer ``resources/list`` from it without
    starting the server, and miss the resource added in the last session."""
    _, cache, config = one_resource(tmp_path)
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, cache) as peer:
            await start(peer)
            await peer.send(request(1, "resources/list"))
            assert uris(await peer.answer(1)) == ["memo://one"]
            await peer.send(tool_call(2, "s__add", uri="memo://two"))
            await peer.answer(2)
            assert await leave(peer) == 0
        listed = await resources_listed(config, cache)
    assert listed == ["memo://one", "memo://two"]


@pytest.mark.anyio
async def test_a_manifest_refreshed_past_its_ttl_does_not_restamp_old_lists_as_fresh(tmp_path: Path) -> None:
    """A manifest past its TTL starts its server at launch, and the new tool list is saved; lists past
    the TTL must not be saved with it as if fetched again (each list keeps its own fetch time), so the
    next gateway asks the server for them."""
    store, cache, config = one_resource(tmp_path)
    with anyio.fail_after(TIMEOUT):
        await resources_listed(config, cache)  # no manifest yet: the lists are kept
        store.write_text(json.dumps(["memo://one", "memo://two"]))  # changed while no gateway ran
        (path,) = manifests(cache)
        old = json.loads(path.read_text())
        aged = {method: {**listed, "fetched": 0.0} for method, listed in old["lists"].items()}
        path.write_text(json.dumps({**old, "fetched": 0.0, "lists": aged}))  # tools and lists past any TTL
        async with gateway(config, cache) as peer:  # the stale manifest's server starts; only tools are used
            await start(peer)
            await until(lambda: json.loads(path.read_text())["fetched"] != 0.0, what="the new tool list saved")
            await leave(peer)
        listed = await resources_listed(config, cache)
    assert listed == ["memo://one", "memo://two"]


# --- a fresh list spares the server ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_lists_in_a_manifest_are_answered_without_starting_the_server(tmp_path: Path) -> None:
    """After one session has listed resources, the next one's start-up listing starts nothing: the
    server's process never runs (its resources file is made unreadable to prove it)."""
    store, cache, config = one_resource(tmp_path)
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, cache) as peer:
            await start(peer)
            for number, method in enumerate(("resources/list", "prompts/list", "resources/templates/list"), 1):
                await peer.send(request(number, method))
                await peer.answer(number)
            assert await leave(peer) == 0
        store.unlink()  # a server started now would fail its listing
        async with gateway(config, cache) as peer:
            await start(peer)
            answers: list[dict[str, Any]] = []
            for number, method in enumerate(("resources/list", "prompts/list", "resources/templates/list"), 1):
                await peer.send(request(number, method))
                answers.append(await peer.answer(number))
            status = await leave(peer)
    assert status == 0
    assert uris(answers[0]) == ["memo://one"]
    assert answers[1]["result"] == {"prompts": []} and answers[2]["result"] == {"resourceTemplates": []}
