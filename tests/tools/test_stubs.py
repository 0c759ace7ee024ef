"""Summaries and stubs, from spec/lazy-tools.md §4.4-§4.6 (LT-06, LT-07, LT-08).

Expected values are derived from the spec's rules by hand, never from the code.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from lazymcp.tools.stubs import make_stub, summarize
from tests.conftest import EXT_ID, SPEC

ELLIPSIS = "\u2026"

LISTING_SCHEMA: dict[str, Any] = json.loads((SPEC / "schema" / "tools-list-result-lazy.json").read_text())


def _def_validator(name: str) -> Draft202012Validator:
    """A validator for one ``$defs`` entry of the lazy listing schema."""
    return Draft202012Validator({"$defs": LISTING_SCHEMA["$defs"], "$ref": f"#/$defs/{name}"})


BARE_STUB = _def_validator("bareStub")
STOCK_STUB = _def_validator("stockStub")


def _summary_of(description: object, limit: int = 80) -> str:
    return summarize({"name": "t", "description": description}, limit)


SEARCH_ISSUES = (
    "Search the issue tracker for issues matching a query, with optional filters for state, labels, "
    "assignee and date ranges. Results are paginated."
)


# (source text, limit, summary) per spec §4.6; the first five rows are the spec's own table.
SUMMARY_CASES: list[Any] = [
    pytest.param("Add two integers and return the sum.", 80, "Add two integers and return the sum.", id="spec-one"),
    pytest.param("Fetch  the\n current weather.  More text", 80, "Fetch the current weather.", id="spec-collapse"),
    pytest.param("Version 2.0 of the thing! ok", 80, "Version 2.0 of the thing!", id="spec-version-dot"),
    pytest.param(
        SEARCH_ISSUES,
        80,
        "Search the issue tracker for issues matching a query, with optional filters for\u2026",
        id="spec-search-issues",
    ),
    pytest.param("x" * 100, 80, "x" * 79 + ELLIPSIS, id="spec-100-x"),
    # Sentence ends (a): . ! ? followed by whitespace, punctuation kept.
    pytest.param("Only one sentence.", 80, "Only one sentence.", id="single-sentence"),
    pytest.param("no punctuation at all", 80, "no punctuation at all", id="no-end"),
    pytest.param("Is it up? Check it.", 80, "Is it up?", id="question-mark"),
    pytest.param("Done! Next step.", 80, "Done!", id="exclamation"),
    pytest.param("Done.\tNext step.", 80, "Done.", id="tab-after-dot"),
    pytest.param("Done.\u00a0Next step.", 80, "Done.", id="nbsp-after-dot"),
    pytest.param("Done.\u2028Next step.", 80, "Done.", id="line-separator-after-dot"),
    pytest.param("Hello.World. Next", 80, "Hello.World.", id="dot-inside-word"),
    pytest.param("Fetch https://example.com/a.b now. Then", 80, "Fetch https://example.com/a.b now.", id="url"),
    pytest.param("Run step 2. Then stop.", 80, "Run step 2.", id="digit-is-no-initial"),
    # Abbreviations (case-insensitive) and initials end no sentence.
    pytest.param(
        "Search issues, e.g. 'state:open label:bug'. Returns at most 50 issues.",
        80,
        "Search issues, e.g. 'state:open label:bug'.",
        id="abbrev-eg",
    ),
    pytest.param(
        "Use the default, i.e. the first one. More.", 80, "Use the default, i.e. the first one.", id="abbrev-ie"
    ),
    pytest.param("Logs, metrics, etc. are kept. Next.", 80, "Logs, metrics, etc. are kept.", id="abbrev-etc"),
    pytest.param("Compare A vs. B quickly. More.", 80, "Compare A vs. B quickly.", id="abbrev-vs"),
    pytest.param("Costs approx. five credits. More.", 80, "Costs approx. five credits.", id="abbrev-approx"),
    pytest.param("Lists items incl. archived ones. More.", 80, "Lists items incl. archived ones.", id="abbrev-incl"),
    pytest.param("See issue no. 5 for details. More.", 80, "See issue no. 5 for details.", id="abbrev-no"),
    pytest.param("Works like grep, cf. ripgrep docs. More.", 80, "Works like grep, cf. ripgrep docs.", id="abbrev-cf"),
    pytest.param("Upper case E.G. works too. More.", 80, "Upper case E.G. works too.", id="abbrev-upper-case"),
    pytest.param("Prices in the U.S. market. Next one.", 80, "Prices in the U.S. market.", id="initials-us"),
    # A lone single-letter "initial" is more often a variable ("field X.") than a name: it ends a sentence.
    pytest.param("Ask J. Smith for access. Then wait.", 80, "Ask J.", id="single-letter-ends-a-sentence"),
    pytest.param("Runs at 9 a.m. daily. Then stops.", 80, "Runs at 9 a.m. daily.", id="initials-am"),
    # Full-width ends (b): right after 。！？, kept.
    pytest.param("天气预报。明天会下雨。", 80, "天气预报。", id="cjk-full-stop"),
    pytest.param("你好！世界", 80, "你好！", id="cjk-exclamation"),
    pytest.param("什么？好的", 80, "什么？", id="cjk-question"),
    pytest.param("获取天气。Returns JSON.", 80, "获取天气。", id="cjk-then-latin"),
    pytest.param("天气。 明天", 80, "天气。", id="cjk-then-space"),
    # Blank lines (c): a line break, optional whitespace, a line break; not kept.
    pytest.param("Create an issue\n\nNeeds write access.", 80, "Create an issue", id="blank-line"),
    pytest.param("Line one\n \t \nLine two", 80, "Line one", id="blank-line-with-spaces"),
    pytest.param("First para\r\n\r\nSecond para", 80, "First para", id="blank-line-crlf"),
    pytest.param(
        "Heading line\nstill the same sentence\n\nBody.",
        80,
        "Heading line still the same sentence",
        id="single-newline-no-end",
    ),
    pytest.param("\n\n\nFirst part. Second.", 80, "First part.", id="leading-blank-lines"),
    pytest.param("  \n  \n  Title line\n\nBody.", 80, "Title line", id="leading-blank-lines-with-spaces"),
    pytest.param("See e.g.\n\nNext part.", 80, "See e.g.", id="blank-line-after-abbreviation"),
    pytest.param("See e.g. \n\nNext part.", 80, "See e.g.", id="blank-line-after-abbreviation-and-space"),
    pytest.param(
        "Made in the U.S.\n\nShips worldwide.",
        80,
        "Made in the U.S.",
        id="blank-line-after-initials",
    ),
    # Collapse (3): Unicode whitespace runs become one space, ends trimmed; empty means no summary.
    pytest.param("  Fetch\u00a0\u00a0the\u3000weather.  More", 80, "Fetch the weather.", id="unicode-whitespace"),
    pytest.param("a" + " " * 100 + "b.", 80, "a b.", id="collapse-before-cut"),
    pytest.param("", 80, "", id="empty"),
    pytest.param("  \n\t \n ", 80, "", id="whitespace-only"),
    # Cut (4): largest space at 1..N-1, trailing punctuation stripped, ellipsis counted.
    pytest.param("x" * 80, 80, "x" * 80, id="exactly-the-limit"),
    pytest.param("x" * 81, 80, "x" * 79 + ELLIPSIS, id="one-over-the-limit"),
    pytest.param("one two three four five six", 12, "one two" + ELLIPSIS, id="word-boundary"),
    pytest.param("abcdefg hij", 8, "abcdefg" + ELLIPSIS, id="space-at-n-minus-1"),
    pytest.param("abcdefgh ij", 8, "abcdefg" + ELLIPSIS, id="space-at-n-is-too-late"),
    pytest.param("Supercalifragilistic word", 8, "Superca" + ELLIPSIS, id="long-first-word"),
    pytest.param("alpha beta, gamma delta", 13, "alpha beta" + ELLIPSIS, id="strip-comma"),
    pytest.param("a; b; c; d; e; f; g; h", 8, "a; b" + ELLIPSIS, id="strip-semicolon"),
    pytest.param("Set value ( optional ) here", 14, "Set value" + ELLIPSIS, id="strip-parenthesis"),
    pytest.param("Fetch data \u2014 then parse it", 14, "Fetch data" + ELLIPSIS, id="strip-em-dash"),
    pytest.param("word \u2013 next thing here", 8, "word" + ELLIPSIS, id="strip-en-dash"),
    pytest.param("ab-----cdefghijk", 8, "ab" + ELLIPSIS, id="strip-hyphens-of-cut-word"),
    pytest.param("key: value and more words here", 10, "key" + ELLIPSIS, id="strip-colon"),
    pytest.param("\U0001f600" * 10, 8, "\U0001f600" * 7 + ELLIPSIS, id="astral-code-points"),
    pytest.param("漢" * 100, 80, "漢" * 79 + ELLIPSIS, id="cjk-without-spaces"),
]


@pytest.mark.requirement("LT-08")
@pytest.mark.parametrize(("text", "limit", "expected"), SUMMARY_CASES)
def test_summary_of_a_description_follows_the_spec_rules(text: str, limit: int, expected: str) -> None:
    assert _summary_of(text, limit) == expected


# (tool members besides "name", summary at N = 80) for the metadata source of §4.6 step 1.
META_CASES: list[Any] = [
    pytest.param(
        {"description": "Echo the text back.", "_meta": {EXT_ID: {"summary": "Say it again."}}},
        "Say it again.",
        id="metadata-wins",
    ),
    pytest.param({"_meta": {EXT_ID: {"summary": "Say it again."}}}, "Say it again.", id="metadata-without-description"),
    pytest.param(
        {"description": "Echo.", "_meta": {EXT_ID: {"summary": "  Say \n\n it\t again.  "}}},
        "Say it again.",
        id="metadata-collapsed-and-no-sentence-split",
    ),
    pytest.param(
        {"description": "Echo.", "_meta": {EXT_ID: {"summary": "First. Second."}}},
        "First. Second.",
        id="metadata-keeps-every-sentence",
    ),
    pytest.param(
        {"description": "Echo.", "_meta": {EXT_ID: {"summary": "word " * 40}}},
        " ".join(["word"] * 16) + ELLIPSIS,
        id="metadata-cut-to-the-limit",
    ),
    pytest.param(
        {"description": "Echo the text. More.", "_meta": {EXT_ID: {"summary": " \n\t "}}},
        "Echo the text.",
        id="blank-metadata-falls-back",
    ),
    pytest.param(
        {"description": "Echo the text. More.", "_meta": {EXT_ID: {"summary": ""}}},
        "Echo the text.",
        id="empty-metadata",
    ),
    pytest.param(
        {"description": "Echo the text. More.", "_meta": {EXT_ID: {"summary": 5}}},
        "Echo the text.",
        id="non-string-summary",
    ),
    pytest.param(
        {"description": "Echo the text. More.", "_meta": {EXT_ID: "Say it."}}, "Echo the text.", id="ours-not-object"
    ),
    pytest.param({"description": "Echo the text. More.", "_meta": "Say it."}, "Echo the text.", id="meta-not-object"),
    pytest.param(
        {"description": "Echo the text. More.", "_meta": {"other.vendor/ext": {"summary": "Say it."}}},
        "Echo the text.",
        id="other-extension-ignored",
    ),
    pytest.param(
        {"description": "Echo the text. More.", "_meta": {"io.lazymcp/Lazy-Tools": {"summary": "Say it."}}},
        "Echo the text.",
        id="identifier-is-case-sensitive",
    ),
    pytest.param({}, "", id="no-description"),
    pytest.param({"description": None}, "", id="null-description"),
    pytest.param({"description": 5}, "", id="number-description"),
    pytest.param({"description": ["Echo."]}, "", id="array-description"),
]


@pytest.mark.requirement("LT-08")
@pytest.mark.parametrize(("members", "expected"), META_CASES)
def test_summary_source_is_the_metadata_summary_else_the_description(members: dict[str, Any], expected: str) -> None:
    assert summarize({"name": "t", **members}, 80) == expected


LIMIT_TEXTS = [
    "x" * 300,
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore " * 3,
    "a, b; c: d - e \u2013 f \u2014 g ( h " * 20,
    "漢字" * 150,
    "\U0001f600 " * 150,
    "tiny",
]


@pytest.mark.requirement("LT-08")
def test_summary_never_exceeds_the_limit_for_any_limit_from_8_to_200() -> None:
    for limit in range(8, 201):
        for text in LIMIT_TEXTS:
            for tool in ({"name": "t", "description": text}, {"name": "t", "_meta": {EXT_ID: {"summary": text}}}):
                summary = summarize(tool, limit)
                assert 0 < len(summary) <= limit, (limit, text[:20])
                collapsed = " ".join(text.split())
                if len(collapsed) > limit:
                    assert summary.endswith(ELLIPSIS), (limit, text[:20])
                    assert collapsed.startswith(summary[:-1]), (limit, text[:20])
                else:
                    assert summary == collapsed


FULL_TOOL: dict[str, Any] = {
    "name": "issues_create",
    "title": "Create issue",
    "description": "Create an issue in a project. The issue starts in the default state.\n\nNeeds write access.",
    "inputSchema": {"type": "object", "properties": {"project": {"type": "string"}}, "required": ["project"]},
    "outputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
    "annotations": {"destructiveHint": False},
    "icons": [{"src": "https://example.com/icon.png"}],
    "_meta": {"other.vendor/ext": {"x": 1}},
}
SUMMARY = "Create an issue in a project."


@pytest.mark.requirement("LT-06")
@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        ("name", {"name": "issues_create"}),
        ("summary", {"name": "issues_create", "description": SUMMARY}),
        ("description", {"name": "issues_create", "description": FULL_TOOL["description"]}),
    ],
)
def test_bare_stub_holds_only_name_and_the_detail_description(detail: str, expected: dict[str, Any]) -> None:
    stub = make_stub(copy.deepcopy(FULL_TOOL), "bare", detail)  # type: ignore[arg-type]
    assert stub == expected
    BARE_STUB.validate(stub)


@pytest.mark.requirement("LT-07")
@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        ("name", {"name": "issues_create"}),
        ("summary", {"name": "issues_create", "description": SUMMARY}),
        ("description", {"name": "issues_create", "description": FULL_TOOL["description"]}),
    ],
)
def test_stock_stub_is_the_bare_stub_plus_an_empty_object_schema_and_what_clients_use_outside_the_prompt(
    detail: str, expected: dict[str, Any]
) -> None:
    stub = make_stub(copy.deepcopy(FULL_TOOL), "stock", detail)  # type: ignore[arg-type]
    assert stub == {
        **expected,
        "inputSchema": {"type": "object", "properties": {}},  # LangChain reads properties unguarded
        "title": FULL_TOOL["title"],
        "outputSchema": FULL_TOOL["outputSchema"],
        "annotations": FULL_TOOL["annotations"],
    }  # never icons or foreign _meta
    STOCK_STUB.validate(stub)


@pytest.mark.requirement("LT-06")
@pytest.mark.requirement("LT-07")
@pytest.mark.parametrize("shape", ["bare", "stock"])
@pytest.mark.parametrize(
    ("members", "detail", "description"),
    [
        ({}, "summary", None),
        ({}, "description", None),
        ({"description": ""}, "summary", None),
        ({"description": ""}, "description", None),
        ({"description": "  \n "}, "summary", None),
        ({"description": "  \n "}, "description", "  \n "),
        ({"description": 5}, "summary", None),
        ({"description": 5}, "description", None),
        ({"description": "Tool.", "_meta": {EXT_ID: {"summary": "Meta."}}}, "description", "Tool."),
        ({"description": "Tool.", "_meta": {EXT_ID: {"summary": "Meta."}}}, "summary", "Meta."),
    ],
)
def test_stub_description_is_omitted_when_there_is_nothing_to_show(
    shape: str, members: dict[str, Any], detail: str, description: str | None
) -> None:
    stub = make_stub({"name": "t", "inputSchema": {"type": "object", "properties": {}}, **members}, shape, detail)  # type: ignore[arg-type]
    expected: dict[str, Any] = {"name": "t"}
    if description is not None:
        expected["description"] = description
    if shape == "stock":
        expected["inputSchema"] = {"type": "object", "properties": {}}
    assert stub == expected


@pytest.mark.requirement("LT-07")
def test_stock_stub_input_schema_is_the_plain_object_schema_even_for_off_spec_tools() -> None:
    tool = {"name": "odd", "inputSchema": {"properties": {"q": {"type": "string"}}}}
    stub = make_stub(tool, "stock", "summary")
    assert stub == {"name": "odd", "inputSchema": {"type": "object", "properties": {}}}
    assert tool["inputSchema"] == {"properties": {"q": {"type": "string"}}}


@pytest.mark.requirement("LT-08")
@pytest.mark.parametrize("shape", ["bare", "stock"])
def test_stub_summary_honours_the_configured_limit(shape: str) -> None:
    tool = {"name": "t", "description": "word " * 50}
    stub = make_stub(tool, shape, "summary", 20)  # type: ignore[arg-type]
    assert stub["description"] == "word word word word" + ELLIPSIS


@pytest.mark.requirement("LT-06")
@pytest.mark.parametrize("shape", ["bare", "stock"])
@pytest.mark.parametrize("detail", ["name", "summary", "description"])
def test_making_a_stub_leaves_the_tool_untouched(shape: str, detail: str) -> None:
    tool = copy.deepcopy(FULL_TOOL)
    make_stub(tool, shape, detail)  # type: ignore[arg-type]
    assert tool == FULL_TOOL
    assert list(tool) == list(FULL_TOOL)
