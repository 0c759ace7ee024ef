"""Configuration (spec §17.2): code, flags and environment spell the same settings; aliases map to modes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lazymcp.cli import main
from lazymcp.cli.commands import options_of
from lazymcp.cli.flags import parser
from lazymcp.protocol.errors import CatalogError
from lazymcp.surfaces.options import ALIASES, SETTINGS, Options

from ..conftest import ROOT, SMALL_TOOLS


def from_flags(*argv: str, env: dict[str, str] | None = None, monkeypatch: pytest.MonkeyPatch) -> Options:
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env or "", raising=False)
    for alias in ALIASES:
        monkeypatch.delenv(alias.env, raising=False)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    return options_of(parser().parse_args(["serve", *argv]))


@pytest.mark.requirement("LT-18")
def test_the_defaults_are_the_describe_mode_of_the_core_issue(monkeypatch: pytest.MonkeyPatch) -> None:
    options = from_flags(monkeypatch=monkeypatch)
    assert options == Options(by_host=True)  # no mode for every host: each known host gets its own
    assert (options.mode, options.max_enabled, options.search_top_k, options.core_tools) == ("describe", 50, 20, ())


@pytest.mark.requirement("LT-18")
def test_flags_win_over_lazymcp_variables_which_win_over_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"LAZYMCP_MODE": "proxy", "MCP_TOOLS_MODE": "core", "LAZYMCP_SEARCH_TOP_K": "7"}
    assert from_flags("--mode", "dynamic", env=env, monkeypatch=monkeypatch).mode == "dynamic"
    options = from_flags(env=env, monkeypatch=monkeypatch)
    assert (options.mode, options.search_top_k) == ("proxy", 7)
    assert from_flags(env={"MCP_TOOLS_MODE": "core"}, monkeypatch=monkeypatch).mode == "core"


@pytest.mark.requirement("LT-18")
@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LAZY_MODE": "true"}, {"mode": "dynamic"}),
        ({"LAZY_MODE": "1"}, {"mode": "dynamic"}),
        ({"LAZY_MODE": "false"}, {"mode": "eager"}),
        ({"MCP_TOOLS_MODE": "core"}, {"mode": "core"}),
        ({"MCP_TOOLS_MODE": "extended"}, {"mode": "eager"}),
        ({"ALWAYS_AVAILABLE_TOOLS": "a, b"}, {"core_tools": ("a", "b")}),
        ({"LAZY_MODE": "true", "ALWAYS_AVAILABLE_TOOLS": "echo"}, {"mode": "dynamic", "core_tools": ("echo",)}),
    ],
)
def test_the_environment_spellings_of_the_seed_patterns_map_to_the_nearest_mode(
    env: dict[str, str], expected: dict[str, Any]
) -> None:
    options = Options.from_env(env)
    assert {key: getattr(options, key) for key in expected} == expected


@pytest.mark.requirement("LT-18")
def test_every_setting_has_a_flag_and_a_variable_and_code_wins_over_the_environment() -> None:
    env = {
        "LAZYMCP_MODE": "dynamic",
        "LAZYMCP_CORE_TOOLS": "x,y",
        "LAZYMCP_MAX_ENABLED": "3",
        "LAZYMCP_SEARCH_TOP_K": "4",
        "LAZYMCP_PAGE_SIZE": "5",
        "LAZYMCP_SUMMARY_CHARS": "60",
    }
    options = Options.from_env(env)
    assert (options.mode, options.core_tools, options.max_enabled) == ("dynamic", ("x", "y"), 3)
    assert (options.search_top_k, options.page_size, options.summary_chars) == (4, 5, 60)
    assert Options.from_env(env, mode="proxy", max_enabled=9).mode == "proxy"
    assert {setting.field for setting in SETTINGS} <= set(Options.__dataclass_fields__)
    assert all(setting.flag.startswith("--") and (setting.env or "").startswith("LAZYMCP_") for setting in SETTINGS)


@pytest.mark.requirement("LT-18")
@pytest.mark.parametrize(
    "env",
    [
        {"LAZYMCP_MODE": "fast"},
        {"LAZY_MODE": "maybe"},
        {"MCP_TOOLS_MODE": "some"},
        {"LAZYMCP_MAX_ENABLED": "0"},
        {"LAZYMCP_SEARCH_TOP_K": "500"},
        {"LAZYMCP_META_TOOLS": "manage_tools"},
        {"LAZYMCP_MODE": "proxy", "LAZYMCP_META_TOOLS": "search_tools"},
        {"LAZYMCP_MODE": "proxy", "LAZYMCP_STOCK_DEFAULT": "eager"},
    ],
)
def test_a_setting_the_server_cannot_take_is_a_start_up_error(env: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        Options.from_env(env)


@pytest.mark.requirement("LT-18")
def test_a_bad_setting_stops_the_command_with_status_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAZYMCP_MODE", "fast")
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.startswith("lazymcp: error:")
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--mode", "fast"])
    assert exit_info.value.code == 2


@pytest.mark.requirement("LT-18")
@pytest.mark.requirement("LT-31")
def test_serve_refuses_a_core_tool_it_does_not_have(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAZYMCP_MODE", raising=False)
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(SMALL_TOOLS))
    assert main(["serve", "--catalog", str(catalog), "--mode", "core", "--core-tools", "issues_craete"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lazymcp: error:") and "issues_craete" in err and "issues_create" in err


@pytest.mark.requirement("LT-28")
def test_the_metadata_flag_loads_the_file_and_checks_its_summaries_against_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "meta.json"
    path.write_text(json.dumps({"tools": {"echo": {"summary": "A summary of forty characters, exactly.."}}}))
    options = from_flags("--metadata", str(path), monkeypatch=monkeypatch)
    assert options.metadata.tools["echo"].summary == "A summary of forty characters, exactly.."
    with pytest.raises(CatalogError):
        from_flags("--metadata", str(path), "--summary-chars", "39", monkeypatch=monkeypatch)


MODES_DOC = (ROOT / "docs" / "modes.md").read_text()


def test_the_modes_page_documents_every_setting_and_alias_together() -> None:
    section = MODES_DOC.split("# Modes", 1)[1].split("\n## ", 1)[0]
    for setting in SETTINGS:
        row = next((line for line in section.splitlines() if f"`{setting.env}`" in line), "")
        assert f"`{setting.flag}" in row and f"{setting.field}=" in row, setting.flag
    for alias in ALIASES:
        assert f"`{alias.env}" in section, alias.env
