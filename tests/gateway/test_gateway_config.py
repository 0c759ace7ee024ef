"""The gateway's pure parts: reading client configuration files, naming tools, the manifest cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from lazymcp.cli import main
from lazymcp.core.actions import Start, Stop, ToClient, ToServer
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.config import parse_config
from lazymcp.gateway.front import Gateway
from lazymcp.gateway.namespace import Namespace, check_server_name
from lazymcp.protocol.errors import ConfigError
from lazymcp.protocol.jsonrpc import notification_line, parse, request_line, result_line
from lazymcp.run.manifests import ManifestStore
from lazymcp.surfaces.options import Options
from lazymcp.tools.manifest import Manifest
from lazymcp.tools.packed import Packed


def test_claude_desktop_and_vscode_files_read_to_the_same_servers() -> None:
    entry = {"command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "${TOKEN}"}, "cwd": "/srv"}
    remote = {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    environ = {"TOKEN": "t0k"}
    desktop = parse_config({"mcpServers": {"a": entry, "b": remote}}, environ=environ)
    vscode = parse_config({"servers": {"a": {**entry, "type": "stdio"}, "b": remote}}, environ=environ)
    assert desktop.servers == vscode.servers
    a, b = desktop.servers
    assert (a.command, dict(a.env), a.cwd) == (("npx", "-y", "server"), {"TOKEN": "t0k"}, "/srv")
    assert (b.url, dict(b.headers), b.remote) == ("https://example.test/mcp", {"Authorization": "Bearer t0k"}, True)


def test_sse_entries_are_read_by_their_type_or_by_a_url_ending_in_sse() -> None:
    servers = {
        "typed": {"type": "sse", "url": "https://example.test/events"},
        "guessed": {"url": "https://example.test/sse"},
        "streamable": {"url": "https://example.test/mcp"},
    }
    typed, guessed, streamable = parse_config({"mcpServers": servers}).servers
    assert (typed.transport, guessed.transport, streamable.transport) == ("sse", "sse", "http")
    assert typed.identity() != ServerEntry("typed", url="https://example.test/events").identity()


def test_a_disabled_entry_is_never_refused_for_its_transport() -> None:
    servers = {
        "off": {"type": "websocket", "url": "https://x/ws", "disabled": True},
        "also_off": {"type": "websocket", "url": "https://x/ws", "enabled": False},
        "settled_off": {"type": "sse", "command": "x", "lazymcp": {"enabled": False}},
        "on": {"command": "x"},
    }
    config = parse_config({"mcpServers": servers})
    assert [entry.name for entry in config.enabled] == ["on"]
    with pytest.raises(ConfigError) as refused:
        parse_config({"mcpServers": {"ws": {"type": "websocket", "url": "https://x/ws"}}})
    assert refused.value.message == (
        "config: server 'ws': field 'type' 'websocket' is not supported; the gateway reaches 'http' and 'sse' servers"
    )


def test_unknown_keys_are_ignored_with_a_warning() -> None:
    config = parse_config({"mcpServers": {"a": {"command": "x", "autoApprove": []}}, "globalShortcut": "x"})
    assert config.warnings == ("config: ignoring unknown server 'a', field 'autoApprove'",)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"mcpServers": {"a": {"args": []}}},
            "f.json: server 'a': missing field 'command' (or 'url' for a remote server)",
        ),
        (
            {"mcpServers": {"a": {"command": "x", "args": "y"}}},
            "f.json: server 'a': field 'args' must be a list of strings",
        ),
        (
            {"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}}},
            "f.json: server 'a', field 'env': environment variable 'NOPE' is not set; set it, or give a default as "
            "${NOPE:-default}",
        ),
        (
            {"mcpServers": {"a": {"command": "x", "args": ["${input:memfile}"]}}},
            "f.json: server 'a', field 'args': ${input:memfile} is asked of the user by VS Code; set the environment "
            "variable LAZYMCP_INPUT_MEMFILE to give it to the gateway",
        ),
        (
            {"mcpServers": {"a": {"command": "x", "args": ["${config:editor.tabSize}"]}}},
            "f.json: server 'a', field 'args': ${config:editor.tabSize} is not a variable lazymcp can expand; "
            "expected ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:ID}, ${userHome}, ${workspaceFolder}",
        ),
        (
            {"mcpServers": {"a": {"command": "x", "env": {"K": "${HOME"}}}},
            "f.json: server 'a', field 'env': '${HOME' opens a variable that does not close; "
            "expected ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:ID}, ${userHome}, ${workspaceFolder}",
        ),
        (
            {"mcpServers": {"a": {"url": "${BASE}/mcp"}}},
            "f.json: server 'a', field 'url': environment variable 'BASE' is not set; set it, or give a default as "
            "${BASE:-default}",
        ),
        (
            {"mcpServers": {"a": {"command": "npx", "agrs": ["-y", "server"]}}},
            "f.json: server 'a': unknown field 'agrs'; did you mean 'args'?",
        ),
        (
            {"mcpServers": {"a": {"url": "ftp://x"}}},
            "f.json: server 'a': field 'url' must be an http:// or https:// URL",
        ),
        (
            {"mcpServers": {"a": {"command": "x", "lazymcp": {"defer": "no"}}}},
            "f.json: server 'a': field 'lazymcp.defer' must be true or false",
        ),
        ({"tools": []}, "f.json: no 'mcpServers' (or VS Code's 'servers') object of servers"),
    ],
)
def test_an_invalid_file_is_one_line_naming_file_server_and_field(data: object, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data, source="f.json", environ={})
    assert raised.value.message == message


def test_per_server_settings_come_from_the_entry_and_the_top_level_block() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "gh": {"command": "x", "lazymcp": {"defer": False, "tools": {"create": {"summary": "Open one."}}}},
                "off": {"command": "y"},
            },
            "lazymcp": {"separator": "_-_", "servers": {"off": {"enabled": False, "description": "Old."}}},
        }
    )
    gh, off = config.servers
    assert (gh.defer, gh.tools.tools["create"].summary) == (False, "Open one.")
    assert (off.enabled, off.description) == (False, "Old.")
    assert [entry.name for entry in config.enabled] == ["gh"]
    assert config.separator == "_-_"


def test_a_missing_file_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gateway", "--config", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.json" in err and "Traceback" not in err


def test_server_names_must_fit_the_tool_name_rules() -> None:
    with pytest.raises(ConfigError) as raised:
        check_server_name("my server", "__", "f.json")
    assert raised.value.message.startswith("f.json: server 'my server': the name may hold only")


def test_two_tools_with_one_gateway_name_are_a_start_up_error() -> None:
    names = Namespace("_")
    names.add("a_b", ["c"])
    with pytest.raises(ConfigError) as raised:
        names.add("a", ["b_c"])
    assert raised.value.message == "server 'a': tool 'b_c' becomes 'a_b_c', the name of server 'a_b''s tool 'c'"


def test_a_manifest_round_trips_and_a_broken_one_counts_as_absent(tmp_path: Path) -> None:
    store = ManifestStore(tmp_path)
    identity = [["node", "server.js"], None, None]
    assert store.load(identity) is None
    saved = store.save(identity, [{"name": "t", "inputSchema": {"type": "object"}}], "1.2.3")
    assert store.load(identity) == saved
    assert store.load([["node", "other.js"], None, None]) is None
    next(tmp_path.glob("*.json")).write_text("{not json")
    assert store.load(identity) is None


def initialized(gateway: Gateway, capabilities: dict[str, Any] | None = None) -> list[Any]:
    """The client's handshake with ``gateway``; what it answers and starts."""
    hello = {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}, "clientInfo": {"name": "c"}}
    return gateway.from_client(request_line(0, "initialize", hello), 0.0)


def test_the_gateway_lists_from_manifests_without_starting_any_server() -> None:
    config = parse_config({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}})
    tool = {"name": "echo", "description": "Echo it.", "inputSchema": {"type": "object"}}
    manifests = {name: Manifest((tool,), 0.0) for name in ("a", "b")}
    gateway = Gateway(config.servers, manifests=manifests, mode="describe")
    assert gateway.launch() == []
    early = gateway.from_client(request_line(1, "tools/list"), 0.0)  # before initialize: refused at once
    assert [parse(action.data)["error"]["code"] for action in early if isinstance(action, ToClient)] == [-32600]
    [answer] = initialized(gateway, {"sampling": {}})
    assert isinstance(answer, ToClient)
    listing = gateway.from_client(request_line(1, "tools/list", {"lazy": False}), 0.0)
    assert len(listing) == 1 and isinstance(listing[0], ToClient)
    assert [t["name"] for t in parse(listing[0].data)["result"]["tools"]] == ["a__echo", "b__echo"]
    call = gateway.from_client(request_line(2, "tools/call", {"name": "b__echo", "arguments": {}}), 0.0)
    assert call == [Start("b")]
    [handshake] = gateway.started("b", 0.0)  # its handshake passes on the client's capabilities
    assert isinstance(handshake, ToServer) and handshake.server == "b"
    assert parse(handshake.data)["params"]["capabilities"] == {"sampling": {}}


def test_gateways_over_the_same_manifests_share_one_catalog_and_no_other() -> None:
    """Each HTTP session has its own gateway; over unchanged manifests they share the merged catalog."""
    config = parse_config({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}})
    tool = {"name": "echo", "description": "Echo it.", "inputSchema": {"type": "object"}}
    manifests = {name: Manifest((tool,), 1.0, "1") for name in ("a", "b")}
    first = Gateway(config.servers, manifests=manifests, mode="describe")
    second = Gateway(config.servers, manifests=dict(manifests), mode="describe", seed=first.seed)
    newer = {**manifests, "b": Manifest((tool, {**tool, "name": "echo2"}), 2.0, "1")}
    third = Gateway(config.servers, manifests=newer, mode="describe", seed=second.seed)
    assert second.catalog is first.catalog and second.names is first.names
    assert third.catalog is not first.catalog and len(third.catalog.tools) == 3


def test_a_failed_server_is_refused_during_its_backoff_and_started_again_after() -> None:
    config = parse_config({"mcpServers": {"a": {"command": "x"}}})
    tool = {"name": "echo", "inputSchema": {"type": "object"}}
    gateway = Gateway(config.servers, manifests={"a": Manifest((tool,), 0.0)}, mode="describe")
    initialized(gateway)
    call = request_line(1, "tools/call", {"name": "a__echo", "arguments": {}})
    assert gateway.from_client(call, 0.0) == [Start("a")]
    failed = gateway.start_failed("a", "cannot start it", 0.0)
    refused = [parse(action.data) for action in failed if isinstance(action, ToClient)]
    assert [(m["id"], m["error"]["data"]) for m in refused] == [(1, {"server": "a"})]
    again = gateway.from_client(request_line(2, "tools/call", {"name": "a__echo", "arguments": {}}), 0.5)
    assert len(again) == 1 and isinstance(again[0], ToClient) and "cannot start it" in str(parse(again[0].data))
    assert gateway.from_client(request_line(3, "tools/call", {"name": "a__echo", "arguments": {}}), 5.0) == [Start("a")]
    listing = gateway.from_client(request_line(4, "tools/list", {"lazy": False}), 5.0)
    assert isinstance(listing[0], ToClient) and "a__echo" in str(parse(listing[0].data))


def test_auto_mode_lists_stubs_within_the_budget_and_the_proxy_surface_beyond() -> None:
    config = parse_config({"mcpServers": {"a": {"command": "x"}}})
    tools = tuple(
        {"name": f"tool_{n}", "description": f"Tool {n}.", "inputSchema": {"type": "object"}} for n in range(40)
    )
    manifests = {"a": Manifest(tools, 0.0)}

    def listed(budget: int) -> list[str]:
        gateway = Gateway(config.servers, manifests=manifests, mode="auto", budget=budget)
        initialized(gateway)
        answer = gateway.from_client(request_line(1, "tools/list"), 0.0)[0]
        assert isinstance(answer, ToClient)
        return [tool["name"] for tool in parse(answer.data)["result"]["tools"]]

    assert len(listed(100_000)) == 3 + 40
    assert listed(100) == ["list_tool_categories", "search_tools", "describe_tools", "invoke_tool"]


def test_a_cancellation_reaches_the_server_running_the_call() -> None:
    config = parse_config({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}})
    tool = {"name": "slow", "inputSchema": {"type": "object"}}
    gateway = Gateway(config.servers, manifests={n: Manifest((tool,), 0.0) for n in ("a", "b")}, mode="describe")
    hello: dict[str, Any] = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}
    gateway.from_client(request_line(0, "initialize", hello), 0.0)
    assert gateway.from_client(request_line(7, "tools/call", {"name": "b__slow", "arguments": {}}), 0.0) == [Start("b")]
    [init] = gateway.started("b", 0.0)
    assert isinstance(init, ToServer)
    answer: dict[str, Any] = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "b", "version": "1"},
    }
    sent = gateway.from_server("b", result_line(parse(init.data)["id"], answer), 0.0)
    up = [parse(a.data) for a in sent if isinstance(a, ToServer)]  # the queued call goes once the handshake is done
    assert [m["method"] for m in up] == ["notifications/initialized", "tools/list", "tools/call"]
    assert up[2]["id"] == 7 and up[2]["params"]["name"] == "slow"
    gateway.from_server("b", result_line(up[1]["id"], {"tools": [dict(tool)]}), 0.0)
    cancel = notification_line("notifications/cancelled", {"requestId": 7})
    assert [(a.server, a.data) for a in gateway.from_client(cancel, 0.0) if isinstance(a, ToServer)] == [("b", cancel)]
    assert gateway.from_client(notification_line("notifications/cancelled", {"requestId": 8}), 0.0) == []


def test_a_server_whose_new_list_takes_another_servers_name_fails_alone() -> None:
    config = parse_config(
        {"mcpServers": {"a_b": {"command": "x"}, "a": {"command": "y"}}, "lazymcp": {"separator": "_"}}
    )
    tool = {"name": "c", "inputSchema": {"type": "object"}}
    gateway = Gateway(config.servers, manifests={"a_b": Manifest((tool,), 0.0)}, separator="_", mode="describe")
    hello: dict[str, Any] = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}
    gateway.from_client(request_line(0, "initialize", hello), 0.0)
    assert gateway.launch() == [Start("a")]  # no manifest: its list is needed
    [init] = gateway.started("a", 0.0)
    assert isinstance(init, ToServer)
    answer: dict[str, Any] = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "a"}}
    sent = gateway.from_server("a", result_line(parse(init.data)["id"], answer), 0.0)
    [fetch] = [parse(a.data) for a in sent if isinstance(a, ToServer) and b"tools/list" in a.data]
    clash = {"name": "b_c", "inputSchema": {"type": "object"}}
    failed = gateway.from_server("a", result_line(fetch["id"], {"tools": [clash]}), 0.0)
    [stop] = [action for action in failed if isinstance(action, Stop)]
    assert stop.reason == "server 'a': tool 'b_c' becomes 'a_b_c', the name of server 'a_b''s tool 'c'"
    assert gateway.catalog.names == ["a_b_c"]


def test_a_manifests_tools_read_the_same_once_the_gateway_shares_their_json(tmp_path: Path) -> None:
    config = parse_config({"mcpServers": {"a": {"command": "x"}}})
    store = ManifestStore(tmp_path)
    tools = [
        {"description": "Echo it.", "name": "echo", "inputSchema": {"type": "object"}},
        {"name": "add", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}},
    ]
    store.save(config.servers[0].identity(), tools)
    manifest = store.load(config.servers[0].identity())
    assert manifest is not None and isinstance(manifest.tools, Packed) and manifest.tools == tools
    gateway = Gateway(config.servers, manifests={"a": manifest}, mode="describe")
    assert manifest.tools.blobs == cast(Packed, gateway.catalog.held).blobs  # one copy, the gateway's names
    assert list(manifest.tools) == tools and gateway.catalog.get("a__add") == {**tools[1], "name": "a__add"}


def test_a_manifest_orjson_cannot_write_counts_as_absent(tmp_path: Path) -> None:
    store = ManifestStore(tmp_path)
    identity = [["node", "server.js"], None, None]
    store.save(identity, [{"name": "t"}])
    path = next(tmp_path.glob("*.json"))
    path.write_text(path.read_text().replace('"name":"t"', '"name":"t","title":"\\ud800"'))
    assert store.load(identity) is None


def test_a_dynamic_gateway_answers_a_list_changing_call_after_the_clients_re_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lazymcp.core.relist import RELIST_WAIT

    # The hold is what is tested, not the ranking: the stdlib ranker finds the three alike tools whatever
    # embedding models are installed (their min-max scores would drop one of three near-identical tools).
    monkeypatch.setenv("LAZYMCP_RANKER", "bm25")

    config = parse_config({"mcpServers": {"a": {"command": "x"}}})
    tools = tuple(
        {"name": f"weather_{n}", "description": "Weather.", "inputSchema": {"type": "object"}} for n in range(3)
    )
    gateway = Gateway(config.servers, Options(mode="dynamic"), {"a": Manifest(tools, 0.0)}, mode="dynamic")
    initialized(gateway)
    search = request_line(2, "tools/call", {"name": "search_tools", "arguments": {"query": "weather"}})
    [notice] = gateway.from_client(search, 0.0)
    assert isinstance(notice, ToClient) and parse(notice.data)["method"] == "notifications/tools/list_changed"
    relist, answer = gateway.from_client(request_line(3, "tools/list"), 0.2)
    assert isinstance(relist, ToClient) and isinstance(answer, ToClient)
    assert "a__weather_0" in [tool["name"] for tool in parse(relist.data)["result"]["tools"]]
    assert parse(answer.data)["id"] == 2
    [_] = gateway.from_client(search, 1.0)  # nothing new: answered at once
    disable = {"name": "manage_tools", "arguments": {"action": "disable", "names": ["a__weather_0"]}}
    [notice] = gateway.from_client(request_line(5, "tools/call", disable), 1.0)
    assert gateway.owed == 1 and gateway.expire(1.0 + RELIST_WAIT / 2) == []
    [late] = gateway.expire(1.0 + RELIST_WAIT)  # no re-list came: it goes within the bound
    assert isinstance(late, ToClient) and parse(late.data)["id"] == 5 and gateway.owed == 0


def test_the_first_problem_is_raised_saying_how_many_more_there_are_and_a_list_gets_them_all() -> None:
    data = {
        "mcpServers": {
            "a": {"command": "x", "args": "y"},
            "b": {"url": "ftp://x", "headers": {"K": "${input:key}"}},
            "c": {"command": "x", "env": {"K": "${input:key}", "L": "${input:other}"}},
        }
    }
    with pytest.raises(ConfigError) as raised:
        parse_config(data, source="f.json", environ={})
    assert raised.value.message == (
        "f.json: server 'a': field 'args' must be a list of strings (and 2 more: lazymcp check --config names them all)"
    )
    problems: list[str] = []
    config = parse_config(data, source="f.json", environ={}, problems=problems)
    assert problems == [
        "f.json: server 'a': field 'args' must be a list of strings",
        "f.json: server 'b': field 'url' must be an http:// or https:// URL",
        "f.json: ${input:key} (server 'b', field 'headers'), ${input:other} (server 'c', field 'env') are asked of "
        "the user by VS Code; set the environment variables LAZYMCP_INPUT_KEY, LAZYMCP_INPUT_OTHER to give them "
        "to the gateway",
    ]
    assert [entry.name for entry in config.servers] == ["a", "c"]  # what could be read
