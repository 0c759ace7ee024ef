"""Property tests of the pure core (spec/lazy-tools.md §4.6, §4.7, §7, §12; LT-08, LT-09, LT-12, LT-13)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazymcp.protocol.errors import ErrorCode, InvalidParams
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import parse_list_params
from lazymcp.surfaces.options import Options
from lazymcp.tools.stubs import make_stub, summarize
from lazymcp.tools.tokens import Size
from tests.conftest import EXT_ID, SMALL_TOOLS, shared_catalog

from ..handlers import describe, describe_batch
from ..handlers import page as list_tools

ELLIPSIS = "\u2026"
FIELDS = {"params", "lazy", "detail", "cursor", "name", "names"}
REASONS = {"type", "empty", "too_many", "unknown_value", "malformed", "stale", "unknown_tool"}
BOUNDED = settings(max_examples=200, deadline=None, database=None)

CATALOG = Catalog.build(copy.deepcopy(SMALL_TOOLS), Options(describe_batch_max=5, page_size=2))
NAMES = list(CATALOG.names)

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
names = st.sampled_from(NAMES) | st.text(max_size=20)
interesting = (
    json_values
    | names
    | st.lists(names | json_scalars, max_size=8)
    | st.lists(names, max_size=8)
    | st.sampled_from(["name", "summary", "description", True, False, None, ""])
)
keys = st.sampled_from(["lazy", "detail", "cursor", "name", "names", "_meta"]) | st.text(max_size=6)
param_objects = st.dictionaries(keys, interesting, max_size=5)
non_objects = json_values.filter(lambda value: value is not None and not isinstance(value, dict))


def _returns_or_invalid_params(call: Any) -> None:
    """``call()`` returns, or raises the spec's -32602 naming one of the spec's fields."""
    try:
        call()
    except InvalidParams as error:
        assert error.code == ErrorCode.INVALID_PARAMS
        assert error.data is not None
        assert error.data["field"] in FIELDS
        assert error.data["reason"] in REASONS


@pytest.mark.requirement("LT-13")
@BOUNDED
@given(params=st.none() | param_objects)
def test_any_json_object_params_give_a_result_or_invalid_params(params: dict[str, Any] | None) -> None:
    _returns_or_invalid_params(lambda: parse_list_params(params))
    _returns_or_invalid_params(lambda: describe(CATALOG, params))
    _returns_or_invalid_params(lambda: describe_batch(CATALOG, params))


@pytest.mark.requirement("LT-13")
@BOUNDED
@given(params=non_objects)
def test_any_non_object_params_give_invalid_params(params: Any) -> None:
    _returns_or_invalid_params(lambda: parse_list_params(params))
    _returns_or_invalid_params(lambda: describe(CATALOG, params))
    _returns_or_invalid_params(lambda: describe_batch(CATALOG, params))


# Non-decimal digits such as "²" are covered in test_catalog.py.
cursor_text = st.text().filter(lambda text: not any(c.isdigit() and not c.isdecimal() for c in text))


@pytest.mark.requirement("LT-09")
@pytest.mark.requirement("LT-13")
@BOUNDED
@given(
    cursor=cursor_text | st.builds(lambda sep, tail: CATALOG.version + sep + tail, st.sampled_from(".:"), cursor_text),
    shape=st.sampled_from(["full", "bare", "stock"]),
)
def test_any_string_cursor_gives_a_page_or_invalid_params_on_cursor(cursor: str, shape: str) -> None:
    try:
        page = list_tools(CATALOG, parse_list_params({"cursor": cursor}), shape)  # type: ignore[arg-type]
    except InvalidParams as error:
        assert error.code == ErrorCode.INVALID_PARAMS
        assert error.data is not None
        assert error.data["field"] == "cursor"
        assert error.data["reason"] in {"malformed", "stale"}
    else:
        assert isinstance(page["tools"], list)


def _known(name: str) -> bool:
    try:
        describe(CATALOG, {"name": name})
    except InvalidParams:
        return False
    return True


@pytest.mark.requirement("LT-11")
@pytest.mark.requirement("LT-12")
@BOUNDED
@given(ns=st.lists(names, min_size=1, max_size=5))
def test_a_batch_equals_the_single_describes_of_its_deduplicated_names(ns: list[str]) -> None:
    result = describe_batch(CATALOG, {"names": ns})
    deduped = list(dict.fromkeys(ns))
    assert result["tools"] == [describe(CATALOG, {"name": n})["tool"] for n in deduped if _known(n)]
    assert result["unknown"] == [n for n in deduped if not _known(n)]


@pytest.fixture(scope="module")
def combined() -> Catalog:
    return Catalog.build(shared_catalog("combined"), Options(describe_batch_max=100))


@pytest.mark.requirement("LT-12")
@BOUNDED
@given(data=st.data())
def test_a_batch_of_real_tools_equals_the_single_describes(combined: Catalog, data: st.DataObject) -> None:
    real = st.sampled_from(list(combined.names))
    ns = data.draw(st.lists(real | st.text(max_size=12), min_size=1, max_size=100))
    result = describe_batch(combined, {"names": ns})
    deduped = list(dict.fromkeys(ns))
    assert result["tools"] == [combined.get(n) for n in deduped if combined.get(n) is not None]
    for n, tool in zip([n for n in deduped if combined.get(n) is not None], result["tools"], strict=True):
        assert tool is describe(combined, {"name": n})["tool"]
    assert result["unknown"] == [n for n in deduped if combined.get(n) is None]


@pytest.mark.requirement("LT-09")
@BOUNDED
@given(
    count=st.integers(min_value=0, max_value=12),
    size=st.integers(min_value=1, max_value=14),
    shape=st.sampled_from(["full", "bare", "stock"]),
    detail=st.sampled_from(["name", "summary", "description"]),
)
def test_pages_of_any_size_join_to_the_whole_listing(count: int, size: int, shape: str, detail: str) -> None:
    tools = [{"name": f"t{i}", "description": f"Tool {i}.", "inputSchema": {"type": "object"}} for i in range(count)]
    whole = Catalog.build(tools).page(shape, detail, None)["tools"]  # type: ignore[arg-type]
    catalog = Catalog.build(tools, Options(page_size=size))
    joined: list[Any] = []
    cursor = None
    for _ in range(count + 2):
        page = catalog.page(shape, detail, cursor)  # type: ignore[arg-type]
        assert len([e for e in page["tools"] if e is not catalog.meta_tool]) <= size
        joined.extend(page["tools"])
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert cursor is None
    assert joined == whole


# Token cost: a stub never costs more than the tool it stands for.


def _assert_stubs_cost_no_more(tool: dict[str, Any]) -> None:
    full = Size.of(tool).tokens
    for shape in ("bare", "stock"):
        for detail in ("name", "summary", "description"):
            stub = make_stub(tool, shape, detail)  # type: ignore[arg-type]
            assert Size.of(stub).tokens <= full, (tool["name"], shape, detail)


@pytest.mark.requirement("LT-06")
@pytest.mark.requirement("LT-07")
def test_stubs_of_real_tools_never_cost_more_tokens_than_the_full_tool() -> None:
    tools = shared_catalog("combined")
    assert len(tools) == 954
    for tool in tools:
        _assert_stubs_cost_no_more(tool)


words = st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12)
sentences = st.builds(
    lambda ws, end: " ".join(ws) + end,
    st.lists(words, min_size=1, max_size=30),
    st.sampled_from([".", "!", "?", "", "。"]),
)
descriptions = st.lists(sentences, min_size=1, max_size=4).map(" ".join)
generated_tools = st.builds(
    lambda name, description, summary, properties: {
        "name": name,
        **({"description": description} if description is not None else {}),
        "inputSchema": {"type": "object", "properties": {p: {"type": "string"} for p in properties}},
        **({"_meta": {EXT_ID: {"summary": summary}}} if summary is not None else {}),
    },
    st.from_regex(r"[a-z][a-z0-9_]{0,30}", fullmatch=True),
    st.none() | descriptions,
    st.none() | descriptions,
    st.lists(st.from_regex(r"[a-z]{1,10}", fullmatch=True), max_size=4),
)


@pytest.mark.requirement("LT-06")
@pytest.mark.requirement("LT-07")
@BOUNDED
@given(tool=generated_tools)
def test_stubs_of_generated_tools_never_cost_more_tokens_than_the_full_tool(tool: dict[str, Any]) -> None:
    _assert_stubs_cost_no_more(tool)


# Summaries (§4.6): within the limit, collapsed, and a prefix of the source.


@pytest.mark.requirement("LT-08")
@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(), limit=st.integers(min_value=8, max_value=200), as_metadata=st.booleans())
def test_a_summary_of_any_text_never_exceeds_the_limit(text: str, limit: int, as_metadata: bool) -> None:
    tool: dict[str, Any] = (
        {"name": "t", "_meta": {EXT_ID: {"summary": text}}} if as_metadata else {"name": "t", "description": text}
    )
    summary = summarize(tool, limit)
    assert len(summary) <= limit
    assert summary == summary.strip()
    assert "  " not in summary
    assert not any(c.isspace() and c != " " for c in summary)
    collapsed = " ".join(text.split())
    if not collapsed.startswith(summary):  # cut: the head of the source plus the ellipsis
        assert summary.endswith(ELLIPSIS)
        assert collapsed.startswith(summary[:-1])
        assert len(collapsed) > limit
    if as_metadata and len(collapsed) <= limit:
        assert summary == collapsed
