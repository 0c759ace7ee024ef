"""The command line, run in-process the way a user runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lazymcp.cli import main

from ..conftest import CATALOGS, initialize_request, shared_catalog


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main([argv[0], "--json", *argv[1:]]) == 0
    return json.loads(capsys.readouterr().out)


def rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["mode"]: row for row in report["rows"]}


def test_stats_measures_the_built_in_sample_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "stats")
    modes = rows(report)
    assert report["native"] is True
    assert list(modes) == ["full", "stock", "stubs:name", "stubs:summary", "stubs:description"]
    assert modes["full"]["tools"] == 130
    assert modes["stock"]["tools"] == 133  # plus describe_tools, search_tools and invoke_tool
    assert modes["stubs:name"]["tokens"] < modes["stubs:summary"]["tokens"] < modes["full"]["tokens"]
    assert len(report["costliest"]) == 5


def test_stats_meets_the_token_targets_on_the_real_combined_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    shared_catalog("combined")  # skips where ../shared is absent
    modes = rows(run_json(capsys, "stats", "--catalog", str(CATALOGS / "combined.json")))
    assert modes["full"]["tokens"] == 410_638  # the figure the catalog's capture notes give (the wire)
    assert modes["full"]["visible_tokens"] == 367_281  # name, description and inputSchema of each tool
    # The targets are on what the model sees: a stock stub's title, annotations... stay out of the prompt.
    assert modes["stubs:summary"]["visible_tokens"] / modes["full"]["visible_tokens"] <= 0.065
    assert modes["stock"]["visible_tokens"] / modes["full"]["visible_tokens"] <= 0.10
    assert modes["stock"]["saving"] == round(1 - modes["stock"]["visible_tokens"] / 367_281, 4)


def test_stats_prints_a_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps([{"name": "a", "description": "Do a. More.", "inputSchema": {"type": "object"}}]))
    assert main(["stats", "--catalog", str(catalog)]) == 0
    out = capsys.readouterr().out
    assert "stubs:summary" in out and "costliest tools" in out


def test_stats_of_a_server_without_the_extension_computes_the_saving(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    script = Path(__file__).parents[1] / "servers" / "plain_server.py"
    report = run_json(capsys, "stats", "--", sys.executable, str(script))
    modes = rows(report)
    assert report["native"] is False
    assert modes["full"]["tools"] == 3
    assert modes["stubs:name"]["tokens"] < modes["full"]["tokens"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [(None, "cannot read"), ("{not json", "not JSON"), ('{"tools": 3}', "must be a JSON list"), ('[{"x": 1}]', "name")],
)
def test_a_bad_catalog_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, needle: str
) -> None:
    path = tmp_path / "catalog.json"
    if content is not None:
        path.write_text(content)
    assert main(["stats", "--catalog", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lazymcp: error:") and needle in err


def test_serve_rejects_a_bad_http_address(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--http", "nowhere"])
    assert exit_info.value.code == 2
    assert "HOST:PORT" in capsys.readouterr().err


def test_stats_refuses_two_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--url", "http://127.0.0.1:9/mcp", "--", "server"]) == 2
    assert "one of" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from lazymcp import __version__

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"lazymcp {__version__}"


@pytest.mark.parametrize("mode", ["describe", "dynamic", "proxy", "core", "eager"])
def test_stats_shows_the_stock_listing_of_every_mode(capsys: pytest.CaptureFixture[str], mode: str) -> None:
    extra = ["--core-tools", "issues_get"] if mode == "core" else []
    report = run_json(capsys, "stats", "--mode", mode, *extra)
    stock = rows(report)["stock"]
    assert report["stock_mode"] == mode
    expected = {"describe": 133, "dynamic": 2, "proxy": 4, "core": 5, "eager": 130}[mode]
    assert stock["tools"] == expected


def test_stats_reads_the_mode_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAZYMCP_MODE", "proxy")
    report = run_json(capsys, "stats")
    assert report["stock_mode"] == "proxy" and rows(report)["stock"]["tools"] == 4


def test_stats_takes_the_server_command_without_a_double_dash(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    script = Path(__file__).parents[1] / "servers" / "plain_server.py"
    report = run_json(capsys, "stats", sys.executable, str(script))
    assert rows(report)["full"]["tools"] == 3


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err  # never a traceback
    assert err.startswith("lazymcp: error: ")
    return err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["stats", "--url", "http://127.0.0.1:9/mcp"], "cannot reach http://127.0.0.1:9/mcp: connection refused"),
        (["stats", "--url", "http://lazymcp-test.invalid/mcp"], "'lazymcp-test.invalid' does not resolve"),
        (["stats", "--", "nonexistent-binary-of-lazymcp"], "cannot run nonexistent-binary-of-lazymcp"),
        (["stats", "--", "false"], "false exited with status 1"),
        (["stats", "sh", "-c", "exit 3"], "exited with status 3"),
    ],
)
def test_a_server_that_cannot_be_reached_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    assert main(argv) != 0
    assert needle in one_line_error(capsys)


def test_debug_shows_the_traceback_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--debug", "--url", "http://127.0.0.1:9/mcp"]) != 0
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("lazymcp: error: cannot reach")


def test_serve_refuses_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "npx", "server"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: npx server" in capsys.readouterr().err
    assert main(["serve", "--", "npx", "server"]) == 2
    assert "lazymcp proxy" in one_line_error(capsys)


def test_a_double_dash_after_the_command_is_the_command_s_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import lazymcp.run.proxy

    seen: list[object] = []
    monkeypatch.setattr(lazymcp.run.proxy, "run_proxy", lambda upstream, *_, **__: seen.append(upstream) or 0)
    assert main(["proxy", "--mode", "proxy", "npx", "-y", "pkg", "--", "--flag"]) == 0
    assert main(["proxy", "--", "npx", "-y", "pkg", "--", "--flag"]) == 0
    assert seen == [["npx", "-y", "pkg", "--", "--flag"]] * 2


def test_a_bad_log_level_is_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYMCP_LOG_LEVEL", "loud")
    assert main(["stats"]) == 2
    assert "LAZYMCP_LOG_LEVEL" in one_line_error(capsys)


def test_proxy_needs_exactly_one_upstream(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["proxy"]) == 2
    one_line_error(capsys)
    assert main(["proxy", "--url", "http://127.0.0.1:9/mcp", "server"]) == 2
    one_line_error(capsys)


def converse(command: list[str], *, timeout: float = 60) -> tuple[list[dict[str, Any]], str]:
    """Initialize and list the tools over stdio as a client would; the answers and the process's stderr."""
    import subprocess

    lines = [
        initialize_request(),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
            process.stdin.flush()
            answers = [json.loads(process.stdout.readline()) for _ in range(2)]  # bounded by the test timeout
            _, err = process.communicate(timeout=timeout)  # closes stdin: the client leaves
        finally:
            if process.poll() is None:
                process.kill()
    return answers, err


def test_proxy_takes_the_command_without_a_double_dash_and_says_one_start_up_line() -> None:
    import sys

    from lazymcp import __version__

    upstream = [sys.executable, "-m", "lazymcp", "serve", "--log-level", "warning"]
    answers, err = converse([sys.executable, "-m", "lazymcp", "proxy", "--mode", "proxy", *upstream])
    assert [tool["name"] for tool in answers[1]["result"]["tools"]] == [
        "list_tool_categories",
        "search_tools",
        "describe_tools",
        "invoke_tool",
    ]
    [line] = [line for line in err.splitlines() if line.startswith(f"lazymcp proxy {__version__}:")]
    assert line.startswith(f"lazymcp proxy {__version__}: mode proxy, upstream ")
    assert "130 tools" in line and "of the full one's tokens" in line


def test_the_proxy_says_it_is_waiting_for_a_slow_upstream() -> None:
    import sys

    slow = f"sleep 7; exec {sys.executable} -m lazymcp serve --log-level warning"
    answers, err = converse([sys.executable, "-m", "lazymcp", "proxy", "sh", "-c", slow])
    assert len(answers[1]["result"]["tools"]) == 133
    notices = err.splitlines()
    waiting = [n for n in notices if "still waiting for the upstream's tool list" in n]
    started = [n for n in notices if n.startswith("lazymcp proxy 0")]
    assert waiting and started and notices.index(waiting[0]) < notices.index(started[0])


def test_serve_says_one_start_up_line_and_log_level_warning_silences_it() -> None:
    import sys

    from lazymcp.search.index import describe_ranker

    _, err = converse([sys.executable, "-m", "lazymcp", "serve", "--mode", "eager"])
    assert err.splitlines() == [
        "lazymcp serve 0.1.0: mode eager, the built-in sample catalog, clients on stdio;"
        f" 130 tools, a stock client's listing is 100.0% of the full one's tokens; search: {describe_ranker()}"
    ]
    _, quiet = converse([sys.executable, "-m", "lazymcp", "serve", "--log-level", "warning"])
    assert quiet == ""


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_a_taken_http_address_is_one_line(capsys: pytest.CaptureFixture[str], command: str) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        upstream = ["--", "true"] if command == "proxy" else []
        assert main([command, "--http", f"127.0.0.1:{port}", *upstream]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in one_line_error(capsys)


def test_bare_lazymcp_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: lazymcp") and "gateway" in err and "required" not in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["gateway", "--config", "x.json", "--http", "localhost:99999"], "the port must be 0 to 65535"),
        (["serve", "--http", "127.0.0.1:70000"], "the port must be 0 to 65535"),
    ],
)
def test_a_port_out_of_range_is_an_argument_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2 and said in capsys.readouterr().err


def test_access_flags_without_http_are_an_error_not_ignored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    token = tmp_path / "token"
    token.write_text("s3cret")
    assert main(["gateway", "--config", str(config), "--token-file", str(token)]) == 2
    assert (
        capsys.readouterr().err
        == "lazymcp: error: --token-file applies to --http only; on stdio the client that starts lazymcp is its user\n"
    )


def test_stats_usage_names_config(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["stats", "--help"])
    assert capsys.readouterr().out.startswith("usage: lazymcp stats [--catalog FILE | --url URL | --config FILE |")


def test_stats_of_a_config_with_a_failing_server_counts_it_nowhere_and_fails(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from ..conftest import SERVERS

    config = tmp_path / "mcp.json"
    plain = {"command": sys.executable, "args": [str(SERVERS / "plain_server.py")]}
    config.write_text(json.dumps({"mcpServers": {"plain": plain, "bad": {"command": "false", "agents": 1}}}))
    done = subprocess.run(
        [sys.executable, "-m", "lazymcp", "stats", "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")},
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    table = done.stdout.splitlines()
    assert [line.split()[0] for line in table[1:3]] == ["plain", "total,"]  # no row for the failed server
    assert table[-1] == "not listed, so in no figure: bad (why: above, on stderr)"
    err = done.stderr.splitlines()
    why = [line for line in err if line.startswith("lazymcp gateway: server 'bad': the upstream server")]
    assert why and len(set(why)) == len(why), err  # each reason said once, though a refresh asks it twice
    assert "lazymcp gateway: server 'bad': not listed (why: above)" in err
    assert f"lazymcp stats: {config}: ignoring unknown server 'bad', field 'agents'" in err


def test_stats_of_a_config_names_the_servers_it_still_waits_for_and_leaves_a_hung_one_out(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from ..conftest import SERVERS

    config = tmp_path / "mcp.json"
    plain = {"command": sys.executable, "args": [str(SERVERS / "plain_server.py")]}
    hung = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}  # never answers
    config.write_text(json.dumps({"mcpServers": {"plain": plain, "hung": hung}}))
    done = subprocess.run(
        [sys.executable, "-m", "lazymcp", "stats", "--config", str(config), "--timeout", "20"],
        capture_output=True,
        text=True,
        env={**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")},
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "lazymcp gateway: still waiting for: hung" in done.stderr.splitlines(), done.stderr
    assert done.stdout.splitlines()[-1] == "not listed, so in no figure: hung (why: above, on stderr)"
    assert [line.split()[0] for line in done.stdout.splitlines()[1:3]] == ["plain", "total,"]


def test_stats_says_which_mode_each_known_host_gets_and_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hosts = {name: (mode, why) for _, name, mode, why in run_json(capsys, "stats")["hosts"]}
    assert hosts["claude-code"][0] == "eager" and "2 turns" in hosts["claude-code"][1]
    assert hosts["gemini-cli-mcp-client"][0] == "describe"
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(600)]))
    hosts = {name: (mode, why) for _, name, mode, why in run_json(capsys, "stats", "--catalog", str(many))["hosts"]}
    assert hosts["gemini-cli-mcp-client"][0] == "proxy" and "cap of 512" in hosts["gemini-cli-mcp-client"][1]
    pinned = run_json(capsys, "stats", "--host-mode", "codex-mcp-client=core", "--mode", "proxy")["hosts"]
    assert {name: mode for _, name, mode, _ in pinned} == {
        **{name: "proxy" for _, name, _, _ in pinned},
        "codex-mcp-client": "core",
    }
