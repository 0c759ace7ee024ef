"""Routes no server can take over: a resource URI two servers list is read from the first in the
configuration (and the clash named once on stderr); a prompt's gateway name reaches its one server, listed
or not; server names that would make one gateway name stand for two servers are refused when the
configuration is read. Real ``lazymcp gateway`` processes over stdio in front of
``servers/routes_server.py``, which answers in its own name, and the sans-IO ``Passthrough`` where one
listing's parts are clearer given by hand; every wait is bounded."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from lazymcp.access.policy import Grant
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.handshake import instructions
from lazymcp.gateway.namespace import Namespace
from lazymcp.gateway.passthrough import LISTS, Passthrough
from lazymcp.protocol.errors import ConfigError
from lazymcp.run.gateway import read_config

from ..conftest import SERVERS
from ..raw import TIMEOUT, Peer, config_of, gateway, request

NOTES = "file:///home/me/notes.md"
CLASH = "is listed by servers"
"""What the stderr line naming a URI two servers list says."""


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


# --- resources: one owner per URI -------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_uri_two_servers_list_is_listed_once_and_read_from_the_first_in_the_configuration(
    tmp_path: Path,
) -> None:
    """``mine`` comes first in the configuration, ``added`` after it and lists ``mine``'s notes too: it must
    not take over their reads. The listing shows the URI once (``mine``'s entry), its reads reach ``mine``,
    and stderr names the clash in one line, once however often the resources are listed."""
    config = config_of(
        tmp_path, mine=routes("mine", resources=[NOTES]), added=routes("added", resources=["memo://added", NOTES])
    )
    with anyio.fail_after(TIMEOUT):
        async with gateway(config, tmp_path / "cache") as peer:
            await peer.handshake()
            await peer.send(request(1, "resources/list"))
            first = await peer.answer(1)
            await peer.send(request(2, "resources/read", {"uri": NOTES}))
            read = await peer.answer(2)
            await peer.send(request(3, "resources/list"))
            again = await peer.answer(3)
            stderr = await leave(peer)
    listed = [(entry["uri"], entry["name"]) for entry in first["result"]["resources"]]
    assert listed == [(NOTES, "mine"), ("memo://added", "added")]
    assert again["result"] == first["result"]
    assert read["result"]["contents"][0]["text"] == f"mine:{NOTES}"
    assert [line for line in stderr.splitlines() if CLASH in line] == [
        f"lazymcp gateway: resource {NOTES!r} {CLASH} 'mine' and 'added': it is read from 'mine', "
        "the first in the configuration"
    ], stderr


def listing(passthrough: Passthrough, method: str, parts: dict[str, list[Any]]) -> tuple[list[Any], list[str]]:
    """One client listing, each server's part answered as given (the last server first): the entries the
    client gets, and what the operator is told."""
    answer = None
    for server, asked in reversed(passthrough.begin(1, method, {})):
        part = {"jsonrpc": "2.0", "id": asked["id"], "result": {LISTS[method]: parts.get(server, [])}}
        answer = passthrough.part(server, part) or answer
    assert answer is not None
    return answer["result"][LISTS[method]], passthrough.take_notes()


def test_a_uri_belongs_to_the_first_server_of_each_listing_and_its_clash_is_named_once() -> None:
    """Three servers list one URI, their parts arriving last first: the client gets the first server's
    entry, one note names all three, and reads go to the first. In a later listing the first no longer
    lists it: the next one in the configuration owns it now (not the last), and nothing is said again."""
    passthrough = Passthrough(["a", "b", "c"], Namespace())
    shared = {server: [{"uri": "x://shared", "name": server}] for server in ("a", "b", "c")}
    entries, notes = listing(passthrough, "resources/list", shared)
    owner = passthrough.route("resources/read", {"uri": "x://shared"})
    later, again = listing(passthrough, "resources/list", {**shared, "a": []})
    assert entries == [{"uri": "x://shared", "name": "a"}]
    assert notes == [
        f"resource 'x://shared' {CLASH} 'a', 'b' and 'c': it is read from 'a', the first in the configuration"
    ]
    assert owner == ("a", {"uri": "x://shared"})
    assert later == [{"uri": "x://shared", "name": "b"}] and again == []
    assert passthrough.route("resources/read", {"uri": "x://shared"}) == ("b", {"uri": "x://shared"})


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


# --- the access policy over prompts and resources ---------------------------------------------------


def test_prompts_and_resources_follow_the_grant_and_a_server_with_nothing_granted_is_not_asked() -> None:
    """``a__*`` grants a's tools, prompts and resources; ``*__get_*`` a prompt of b's by its gateway name but
    never b's resources (``b__resources``), nor c's, whose resource lists are not asked for, and whose reads,
    subscriptions and completions are unknown; with ``a__get_*`` only, b is asked for no list at all."""
    grant = Grant(("a__*", "*__get_*"))
    passthrough = Passthrough(["a", "b", "c"], Namespace(), grant=grant)
    prompts, _ = listing(passthrough, "prompts/list", {"a": [{"name": "x"}], "b": [{"name": "get_y"}, {"name": "z"}]})
    asked = [server for server, _ in passthrough.begin(2, "resources/list", {})]
    assert [entry["name"] for entry in prompts] == ["a__x", "b__get_y"]
    assert [server for server, _ in passthrough.begin(3, "prompts/list", {})] == ["a", "b", "c"]  # *__get_*
    assert asked == ["a"]
    assert passthrough.route("prompts/get", {"name": "b__z"}) == "Unknown prompt: 'b__z'"
    assert passthrough.route("prompts/get", {"name": "c__get_w"}) == ("c", {"name": "get_w"})  # granted by name
    passthrough.schemes.update({"b": "b", "a": "a"})
    assert passthrough.route("resources/read", {"uri": "a://1"}) == ("a", {"uri": "a://1"})
    assert passthrough.route("resources/subscribe", {"uri": "b://1"}).startswith("Unknown resource")
    complete = {"ref": {"type": "ref/resource", "uri": "b://1"}, "argument": {"name": "n", "value": ""}}
    assert passthrough.route("completion/complete", complete).startswith("Unknown resource")
    nothing = Passthrough(["a", "b"], Namespace(), grant=Grant(("a__get_*",)))
    assert [server for server, _ in nothing.begin(1, "prompts/list", {})] == ["a"]
    assert nothing.begin(2, "resources/list", {}) == []
    assert instructions([ServerEntry("a"), ServerEntry("b")], "__", {}, Grant(("a__*",))).count("b__") == 0
