"""The table of hosts and the one rule that picks a session's mode (``lazymcp.surfaces.hosts``), and the
instructions written for hosts that search by server (``lazymcp.surfaces.instructions``)."""

from __future__ import annotations

import re
from typing import Any

from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.hosts import ALWAYS_LOAD, HOSTS, Session, choose, host_of, version_of
from lazymcp.surfaces.instructions import MAX_INSTRUCTIONS, Group, catalog_instructions, written
from lazymcp.surfaces.metatools import describe_tools_definition
from lazymcp.surfaces.methods import Caller, dispatch
from lazymcp.surfaces.options import Options
from lazymcp.surfaces.toolsearch import OWN_DEFERRED, SearchSetting, auto_search, setting, tool_search
from lazymcp.tools.sample import synthetic_tools

from ..conftest import tool

CLAUDE = {"name": "claude-code", "version": "2.1.197"}
GEMINI = {"name": "gemini-cli-mcp-client", "version": "0.61.0"}


def catalog(count: int = 5, **options: Any) -> Catalog:
    return Catalog.build(synthetic_tools(count), Options(**{"by_host": True, **options}))


def test_every_row_names_its_host_as_it_sends_itself_and_says_why() -> None:
    assert {host.name for host in HOSTS} >= {"claude-code", "codex-mcp-client", "gemini-cli-mcp-client"}
    assert all(host.why or host.mode is None for host in HOSTS)
    assert all(host.mode is None for host in HOSTS if not host.defers)  # the server's default, and its budget


def test_versions_choose_the_row_claude_code_before_its_tool_search_is_served_stubs() -> None:
    assert version_of("2.1.197") == (2, 1, 197) and version_of("0.61.0-nightly") == (0, 61, 0)
    assert version_of("") == ()
    old, new = host_of({"name": "claude-code", "version": "2.0.76"}), host_of(CLAUDE)
    assert old is not None and not old.defers and old.mode is None
    assert new is not None and new.defers and new.mode == "eager"
    assert host_of({"name": "claude-code"}) is new  # no version: its latest row
    assert host_of({"name": "someone-else"}) is None and host_of("claude-code") is None


def test_claude_codes_tool_search_is_read_from_its_environment_as_it_decides_it() -> None:
    no_tokens = lambda: 0  # noqa: E731
    assert tool_search({}, no_tokens) is None  # not Claude Code's environment
    assert tool_search({"CLAUDECODE": "1", "ENABLE_TOOL_SEARCH": "true"}, no_tokens) == (
        True,
        "ENABLE_TOOL_SEARCH=true",
    )
    assert tool_search({"CLAUDECODE": "1", "ENABLE_TOOL_SEARCH": "false"}, no_tokens) is not None
    assert tool_search({"CLAUDECODE": "1", "ENABLE_TOOL_SEARCH": "false"}, no_tokens)[0] is False  # type: ignore[index]
    assert tool_search({"CLAUDE_CODE_ENTRYPOINT": "cli", "ENABLE_TOOL_SEARCH": "auto"}, no_tokens) is not None
    assert tool_search({"CLAUDE_CODE_ENTRYPOINT": "cli"}, no_tokens) == (True, "ENABLE_TOOL_SEARCH unset")
    away = {"CLAUDECODE": "1", "ANTHROPIC_BASE_URL": "https://llm.example.com/anthropic"}
    assert tool_search(away, no_tokens) == (True, "ENABLE_TOOL_SEARCH unset")  # behind any base URL


def test_claude_codes_tool_search_is_off_without_its_experimental_betas_whatever_else_is_set() -> None:
    """``CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS`` set to a true word (as Claude Code's gateway provider sets
    it): Claude Code 2.1.332 defers nothing, unset, ``true`` or ``force`` (tests/hosts, ``claude-nobetas``);
    a false word is no setting."""
    no_tokens = lambda: 0  # noqa: E731
    for betas in ("1", " True ", "yes", "ON"):
        for search in ({}, {"ENABLE_TOOL_SEARCH": "true"}, {"ENABLE_TOOL_SEARCH": "force"}):
            found = tool_search(
                {"CLAUDECODE": "1", "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": betas, **search}, no_tokens
            )
            assert found is not None and found[0] is False and "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS" in found[1]
    for betas in ("0", "false", ""):
        assert tool_search({"CLAUDECODE": "1", "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": betas}, no_tokens) == (
            True,
            "ENABLE_TOOL_SEARCH unset",
        )


def test_enable_tool_search_is_read_as_claude_code_reads_it_word_for_word() -> None:
    assert setting("") == SearchSetting(True)  # unset
    assert setting("auto") == SearchSetting(None, 10) and setting("auto:2") == SearchSetting(None, 2)
    # auto:N takes N as parseInt does: the leading digits, or a whole number in exponent or grouped form
    assert setting("auto:2.5") == SearchSetting(None, 2) and setting("auto: 5% ") == SearchSetting(None, 5)
    assert setting("auto:1e1") == SearchSetting(None, 10) and setting("auto:1.5e1") == SearchSetting(None, 15)
    assert setting("auto:1.55e1") == SearchSetting(None, 10)  # an exponent form that is not whole: not a number
    assert setting("auto:x") == SearchSetting(None, 10) and setting("auto:") == SearchSetting(None, 10)  # its 10%
    # held to 0..100, and the ends are not auto: 0 (0.5, -3, 0x10 too) always on, 100 (1,000 too) always off
    assert setting("auto:0") == setting("auto:0.5") == setting("auto:-3") == setting("auto:0x10") == SearchSetting(True)
    assert setting("auto:100") == setting("auto:1,000") == setting("auto:250") == SearchSetting(False)
    assert setting("true") == setting(" YES ") == setting("1") == SearchSetting(True)
    assert setting("false") == setting("Off") == setting("0 ") == SearchSetting(False)
    # anything else is on: only "auto" as written is auto
    assert setting("force") == setting("AUTO") == setting(" auto") == setting("maybe") == SearchSetting(True)


def test_claude_codes_tool_search_follows_what_enable_tool_search_says() -> None:
    def on(value: str) -> bool | None:
        found = tool_search({"CLAUDECODE": "1", "ENABLE_TOOL_SEARCH": value, **away}, lambda: 25_753)
        return None if found is None else found[0]

    away = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}
    assert on("") is True and on("force") is True and on("AUTO") is True and on("false") is False
    assert on("auto") is False and on("auto:2") is True and on("auto:3") is True and on("auto:4") is False
    assert tool_search({"CLAUDECODE": "1", "ENABLE_TOOL_SEARCH": "auto:2.9"}, lambda: 0)[1] == (  # type: ignore[index]
        "ENABLE_TOOL_SEARCH=auto:2.9: about 7,000 tokens of deferrable definitions against 2% of 1,000,000"
    )


def test_auto_counts_the_deferrable_definitions_against_a_share_of_the_window_claude_code_assumes() -> None:
    def on(share: int, tokens: int, **environ: str) -> bool:
        return auto_search(environ, share, lambda: tokens - OWN_DEFERRED)[0]

    # its default models' window is 1M: 10% of it is 100,000 tokens (the sample catalog's 25,753 stays under)
    assert not on(10, 99_999) and on(10, 100_000)
    assert on(10, 20_000, CLAUDE_CODE_DISABLE_1M_CONTEXT="1") and not on(10, 19_999, CLAUDE_CODE_DISABLE_1M_CONTEXT="1")
    assert on(10, 5_000, DISABLE_COMPACT="1", CLAUDE_CODE_MAX_CONTEXT_TOKENS="50000")
    assert not on(10, 5_000, CLAUDE_CODE_MAX_CONTEXT_TOKENS="50000")  # read only with DISABLE_COMPACT
    assert on(5, 50_000) and not on(5, 49_999)
    said = auto_search({}, 10, lambda: 21_000)[1]
    assert said == "ENABLE_TOOL_SEARCH=auto: about 28,000 tokens of deferrable definitions against 10% of 1,000,000"


def test_the_order_of_choice_the_session_then_the_host_setting_then_the_mode_for_all_then_the_table() -> None:
    served = catalog(hosts=(("claude-code", "core"),))
    assert choose(served, Session(CLAUDE, asked="proxy")).mode == "proxy"
    assert choose(served, Session(CLAUDE)).mode == "core"
    assert choose(catalog(mode="dynamic", by_host=False), Session(CLAUDE)).mode == "dynamic"
    assert choose(catalog(), Session(CLAUDE)).mode == "eager"
    assert choose(catalog(), Session({"name": "unknown"})).mode == "describe"
    off = Session(CLAUDE, environ={"CLAUDECODE": "1", "ENABLE_TOOL_SEARCH": "false"})
    chosen = choose(catalog(), off)
    assert chosen.mode == "describe" and "off" in chosen.why and chosen.hint == ALWAYS_LOAD


def test_past_a_hosts_cap_the_listing_is_the_proxy_surface_whatever_was_chosen() -> None:
    assert choose(catalog(509), Session(GEMINI)).mode == "describe"  # 509 stubs and 3 meta-tools: 512
    past = choose(catalog(510), Session(GEMINI))
    assert past.mode == "proxy" and "512" in past.why
    assert choose(catalog(600), Session(GEMINI, asked="eager")).mode == "proxy"


def test_a_hosts_choice_shapes_the_listing_through_the_one_door() -> None:
    served = catalog(3, meta_tools=("search_tools",))
    for_claude = choose(served, Session(CLAUDE))
    listed = dispatch("tools/list", served, {}, Caller(choice=for_claude)).result["tools"]  # type: ignore[union-attr]
    assert [entry["name"] for entry in listed][0] == "search_tools"
    assert listed[0]["_meta"][ALWAYS_LOAD] is True and "properties" in listed[1]["inputSchema"]
    plain = dispatch("tools/list", served, {}, Caller()).result["tools"]  # type: ignore[union-attr]
    assert plain[0]["name"] == "describe_tools" and ALWAYS_LOAD not in (plain[0].get("_meta") or {})
    assert served.serving("eager", ALWAYS_LOAD) is served.serving("eager", ALWAYS_LOAD)  # made once


def test_instructions_describe_each_group_within_four_kibibytes() -> None:
    groups = [Group(f"server{i}", "What it does. " * 30, [f"server{i}__tool{j}" for j in range(9)]) for i in range(80)]
    text = written("Servers:", groups)
    assert len(text.encode()) <= MAX_INSTRUCTIONS
    assert text.startswith("Servers:\n- server0: What it does.")
    assert "9 tools (server0__tool0, server0__tool3, server0__tool6, ...)." in text
    assert "more: " in text.splitlines()[-1]
    own = catalog_instructions(catalog(2), "demo", own="Use me for demos.")
    assert own == "Use me for demos."
    derived = catalog_instructions(Catalog.build([tool("a_one"), tool("a_two"), tool("b_one")]), "demo")
    assert derived.startswith("demo: 3 tools") and "(a_one, a_two)" in derived


def test_describe_tools_is_found_by_the_words_of_its_name_where_a_search_reads_underscores_as_letters() -> None:
    # Codex's tool_search (BM25 over Unicode words) reads describe_tools as one word and adds the server's
    # instructions to every tool's text: the words "describe tools" find describe_tools only if its own
    # text says "describe", and no text every tool shares says it.
    def words(text: str) -> set[str]:
        return set(re.findall(r"\w+", text.lower()))  # \w joins across "_", as Unicode word breaks do

    for unlisted in (False, True):
        description = describe_tools_definition("describe_tools", 100, unlisted=unlisted)["description"]
        assert {"describe", "tools"} <= words(description or "")
    served = catalog(130)
    assert "describe" not in words(catalog_instructions(served, "demo"))
    stubs = dispatch("tools/list", served, {}, Caller()).result["tools"]  # type: ignore[union-attr]
    assert [stub["name"] for stub in stubs if "describe" in words(stub.get("description") or "")] == ["describe_tools"]
