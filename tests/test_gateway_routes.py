"""Routes no server can take over: a prompt's gateway name reaches its one server, listed or not; server
names that would make one gateway name stand for two servers are refused when the configuration is read.
Real ``lazymcp gateway`` processes over stdio in front of ``servers/routes_server.py``, which answers in
its own name; every wait is bounded."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from lazymcp.errors import ConfigError
from lazymcp.run.gateway import read_config

from .conftest import SERVERS
from .raw import TIMEOUT, Peer, config_of, gateway, request


def routes(name: str, *, resources: Sequence[str] = (), prompts: Sequence[str] = ()) -> list[str]:
    """``servers/routes_server.py`` as ``name``, listing ``resources`` and ``prompts`` as given."""
    lists = json.dumps({"resources": list(resources), "prompts": list(prompts)})
    return [sys.executable, str(SERVERS / "routes_server.py"), name, lists]


async def leave(peer: Peer) -> str:
    """End the client's input; once the gateway has exited (with status 0), its stderr."""
    assert peer.process.stdin is not None
    await peer.process.stdin.aclose()
    assert await peer.process.wait() == 0
    return await peer.stderr()


def prompt_text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    return answer["result"]["messages"][0]["content"]["text"]


# --- prompts: one server per gateway name -----------------------------------------------------------


@pytest.mark.anyio
async def test_a_prompt_reaches_the_server_its_name_begins_with_before_any_listing(tmp_path: Path) -> None:
    """``x_`` under the separator ``__`` names its prompt ``p`` ``x___p``, whose first ``__`` is not
    where the server's name ends: the prefix ``x___`` names the server, so ``prompts/get`` and prompt
    completions reach it without a listing first, and a name no server's prefix begins is unknown."""
    config = config_of(tmp_path, x_=routes("x_", prompts=["p"]), y=routes("y", prompts=["p"]))
    complete = {"ref": {"type": "ref/prompt", "name": "x___p"}, "argument": {"name": "topic", "value": ""}}
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache") as peer:
            await peer.handshake()
            await peer.send(request(1, "prompts/get", {"name": "x___p"}))
            got = await peer.answer(1)
            await peer.send(request(2, "completion/complete", complete))
            completed = await peer.answer(2)
            await peer.send(request(3, "prompts/get", {"name": "y__p"}))
            other = await peer.answer(3)
            await peer.send(request(4, "prompts/get", {"name": "x__p"}))
            unknown = await peer.answer(4)
            await leave(peer)
    assert prompt_text(got) == "x_:p"
    assert completed["result"]["completion"]["values"] == ["x_:p"], completed
    assert prompt_text(other) == "y:p"
    assert unknown["error"]["code"] == -32602 and unknown["error"]["message"] == "Unknown prompt: 'x__p'"


@pytest.mark.anyio
async def test_a_prompt_a_server_lists_twice_is_listed_once(tmp_path: Path) -> None:
    config = config_of(tmp_path, s=routes("s", prompts=["p", "q", "p"]))
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache") as peer:
            await peer.handshake()
            await peer.send(request(1, "prompts/list"))
            listed = await peer.answer(1)
            await peer.send(request(2, "prompts/get", {"name": "s__p"}))
            got = await peer.answer(2)
            await leave(peer)
    assert [prompt["name"] for prompt in listed["result"]["prompts"]] == ["s__p", "s__q"]
    assert prompt_text(got) == "s:p"


# --- server names that would make one name stand for two servers ------------------------------------


@pytest.mark.anyio
async def test_servers_whose_names_make_gateway_names_ambiguous_stop_the_gateway_in_one_line(tmp_path: Path) -> None:
    """``a`` and ``a_`` under ``__``: ``a___p`` would be ``a``'s ``_p`` and ``a_``'s ``p``, the listing
    would show it twice, and a ``prompts/get`` before any listing would go to ``a``. Refused at load, both
    named, with the status of every configuration error."""
    config = config_of(tmp_path, a=routes("a", prompts=["_p"]), a_=routes("a_", prompts=["p"]))
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    with anyio.fail_after(TIMEOUT):
        done = await anyio.run_process(command, input=b"", env=env, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines() == [
        f"lazymcp: error: {config}: servers 'a' and 'a_' make names ambiguous under the separator '__': "
        "'a___x' would name both '_x' of server 'a' and 'x' of server 'a_'; rename one"
    ]


@pytest.mark.parametrize(
    ("servers", "separator", "pair"),
    [
        (["a_", "b", "a"], "__", ("a", "a_")),
        (["db", "db-"], "--", ("db", "db-")),
        (["x", "x_."], "_._", ("x", "x_.")),
    ],
)
def test_server_names_whose_prefixes_begin_one_another_are_refused_when_the_configuration_is_read(
    tmp_path: Path, servers: list[str], separator: str, pair: tuple[str, str]
) -> None:
    """Whatever their order in the file, the two are named shorter first; a disabled server gets no
    names, so it makes none ambiguous."""
    path = tmp_path / "mcp.json"
    entries: dict[str, Any] = {name: {"command": "true"} for name in servers}
    path.write_text(json.dumps({"mcpServers": entries, "lazymcp": {"separator": separator}}))
    with pytest.raises(ConfigError) as refused:
        read_config(str(path))
    entries[pair[1]]["lazymcp"] = {"enabled": False}
    path.write_text(json.dumps({"mcpServers": entries, "lazymcp": {"separator": separator}}))
    assert [entry.name for entry in read_config(str(path)).enabled] == [n for n in servers if n != pair[1]]
    first, second = pair
    assert refused.value.message.startswith(f"{path}: servers {first!r} and {second!r} make names ambiguous")
