"""Behaviour of lazymcp.search.index: the tool index behind ``search_tools``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from lazymcp.search import semantic
from lazymcp.search.fusion import HybridRanker
from lazymcp.search.index import MAX_QUERY_CHARS, BM25Ranker, Document, Ranker, SearchResult, ToolIndex, describe_ranker
from lazymcp.search.serverrank import ServerRanker
from lazymcp.search.terms import normalize_name, stem, tokenize
from tests.conftest import EXT_ID, SHARED, SMALL_TOOLS, tool

TOOLS: list[dict[str, Any]] = [
    tool("github__create_issue", "Create a new issue in a GitHub repository."),
    tool("github__list_issues", "List issues in a GitHub repository, with filters."),
    tool("github__get_issue", "Get the details of one issue of a GitHub repository."),
    tool("gitlab__create_issue", "Create a new issue in a GitLab project."),
    tool("gitlab__listMergeRequests", "Merge requests of a project."),
    tool(
        "azure__group_list",
        "List all resource groups in the subscription.",
        inputSchema={
            "type": "object",
            "properties": {
                "subscription": {"type": "string", "description": "The subscription ID or name."},
                "filter": {
                    "type": "object",
                    "properties": {"tagName": {"type": "string", "description": "Only groups with this tag."}},
                },
            },
        },
    ),
    tool("azure__storage_account_create", "Create a storage account."),
    tool("slack__post_message", "Post a message to a Slack channel."),
    tool("time__convert_time", "Convert a time between time zones."),
    tool("fr__facturer_client", "Crée une facture pour un client et l'envoie par courriel."),
    tool("zh__list_vms", "列出订阅中的所有虚拟机。"),
    tool("ja__list_groups", "リソースグループを一覧表示します。"),
    tool(
        "billing_report",
        "Summarize this month's spend.",
        _meta={EXT_ID: {"category": "finance", "summary": "Monthly spend summary."}},
    ),
]


def bm25(tools: Sequence[dict[str, Any]]) -> ToolIndex:
    """The stdlib ranker's index (whatever extras are installed, these tests are about BM25F)."""
    return ToolIndex.build(tools, ranker=BM25Ranker)


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return bm25(TOOLS)


def names(result: SearchResult) -> list[str]:
    return [hit.name for hit in result.hits]


# --- tokenization ---------------------------------------------------------------------------------


def test_tokenize_splits_camel_case_and_separators_in_identifiers() -> None:
    terms = tokenize("gitlab__listMergeRequests", identifier=True, stemming=False)
    assert {"gitlab", "list", "merge", "requests", "listmergerequests"} <= set(terms)
    assert set(tokenize("get-user.profile/v2", identifier=True, stemming=False)) == {"get", "user", "profile", "v2"}


def test_tokenize_is_unicode_aware() -> None:
    assert tokenize("ＡＢＣ Café", stemming=False) == ["abc", "café", "cafe"]  # NFKC; accents folded too
    assert tokenize("STRASSE Straße", stemming=False) == ["strasse", "strasse"]  # casefold, not lower
    chinese = tokenize("虚拟机")
    assert {"虚", "拟", "机", "虚拟", "拟机"} == set(chinese)
    japanese = tokenize("Azure のリソース")
    assert "azure" in japanese and "リソ" in japanese and "ソー" in japanese


def test_english_stopwords_are_dropped_and_words_stemmed() -> None:
    terms = tokenize("the issues of the project")
    assert "the" not in terms and "of" not in terms
    assert "issues" in terms and "~" + stem("issue") in terms


@pytest.mark.parametrize(
    ("words", "common"),
    [
        (("create", "creates", "created", "creating", "creation"), "creat"),
        (("issue", "issues", "issued"), "issu"),
        (("query", "queries"), "queri"),
        (("deploy", "deployment", "deployments", "deployed"), "deploy"),
        (("run", "running"), "run"),
    ],
)
def test_stem_conflates_inflections(words: tuple[str, ...], common: str) -> None:
    assert {stem(word) for word in words} == {common}


def test_stem_leaves_short_and_non_ascii_words_alone() -> None:
    assert stem("list") == "list"
    assert stem("créées") == "créées"
    assert stem("install") == "install"
    assert stem("access") == "access"


def test_normalize_name() -> None:
    assert normalize_name("gitlab__listMergeRequests") == "gitlab list merge requests"
    assert normalize_name("  Create-Issue ") == "create issue"


# --- the index -------------------------------------------------------------------------------------


def test_exact_name_ranks_first(index: ToolIndex) -> None:
    assert names(index.search("github__get_issue"))[0] == "github__get_issue"
    assert names(index.search("GITHUB__GET_ISSUE"))[0] == "github__get_issue"


def test_near_exact_names_rank_first(index: ToolIndex) -> None:
    # The name with separators normalized, and the name's tail after "__" (every server's tool of that name).
    assert names(index.search("github get issue"))[0] == "github__get_issue"
    assert set(names(index.search("create_issue"))[:2]) == {"github__create_issue", "gitlab__create_issue"}
    assert names(index.search("list merge requests"))[0] == "gitlab__listMergeRequests"
    hits = index.search("create_issue").hits
    assert hits[0].score >= hits[1].score > hits[2].score  # scores stay monotone


def test_camel_case_and_underscore_parts_match(index: ToolIndex) -> None:
    assert names(index.search("merge requests"))[0] == "gitlab__listMergeRequests"
    assert names(index.search("convert time zones"))[0] == "time__convert_time"


def test_parameters_are_searched_including_nested_ones(index: ToolIndex) -> None:
    assert names(index.search("tag name"))[0] == "azure__group_list"


def test_stemming_matches_inflections(index: ToolIndex) -> None:
    assert names(index.search("creating storage accounts"))[0] == "azure__storage_account_create"


def test_surface_form_breaks_stem_ties(index: ToolIndex) -> None:
    # "issues" matches list_issues on its surface form and get_issue only on its stem.
    assert names(index.search("issues in my GitHub repository"))[0] == "github__list_issues"


def test_service_name_decides_between_look_alikes(index: ToolIndex) -> None:
    assert names(index.search("create an issue on GitLab"))[0] == "gitlab__create_issue"
    assert names(index.search("create an issue on GitHub"))[0] == "github__create_issue"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("créer une facture client", "fr__facturer_client"),  # French
        ("facture", "fr__facturer_client"),
        ("虚拟机列表", "zh__list_vms"),  # Chinese: "list of virtual machines"
        ("列出虚拟机", "zh__list_vms"),
        ("リソースグループ一覧", "ja__list_groups"),  # Japanese: "resource group list"
    ],
)
def test_non_ascii_queries_find_non_ascii_descriptions(index: ToolIndex, query: str, expected: str) -> None:
    assert names(index.search(query))[0] == expected


def test_hits_carry_name_score_and_total(index: ToolIndex) -> None:
    result = index.search("list resource groups", k=3)
    assert result.total == len(TOOLS)
    assert len(result.hits) == 3
    assert result.hits[0].name == "azure__group_list"
    assert result.hits[0].score > result.hits[1].score


def test_summaries_and_categories_passed_in_are_searched() -> None:
    given = ToolIndex.build(
        TOOLS[:3],
        summaries=["Open a ticket.", "Tickets, filtered.", "One ticket."],
        categories=["trackers", "trackers", "vcs"],
        ranker=BM25Ranker,
    )
    assert given.search("ticket filtered").names[0] == "github__list_issues"
    assert given.search("vcs").names == ["github__get_issue"]


def test_accents_are_optional_in_queries(index: ToolIndex) -> None:
    assert index.search("creer une facture").names[0] == "fr__facturer_client"


def test_metadata_category_is_searched(index: ToolIndex) -> None:
    assert names(index.search("finance"))[0] == "billing_report"


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "???", "the of and"])
def test_empty_query_returns_nothing(index: ToolIndex, query: str) -> None:
    result = index.search(query)
    assert result.hits == ()
    assert result.total == len(TOOLS)


def test_k_is_respected(index: ToolIndex) -> None:
    assert index.search("issue", k=0).hits == ()
    assert len(index.search("issue", k=2).hits) == 2
    assert len(index.search("issue", k=-5).hits) == 0


def test_huge_query_is_bounded(index: ToolIndex) -> None:
    huge = " ".join(f"word{i} issue" for i in range(200_000))
    result = index.search(huge, k=5)
    assert len(result.query) == MAX_QUERY_CHARS
    assert len(result.hits) <= 5
    assert index.search("x" * 1_000_000).hits == ()


def test_search_is_deterministic() -> None:
    first = bm25(TOOLS)
    second = bm25(list(TOOLS))
    for query in ("issue", "create", "list", "repository", "リソース"):
        assert first.search(query, k=20) == second.search(query, k=20)
        assert first.search(query, k=20) == first.search(query, k=20)


def test_ties_are_broken_by_catalog_order() -> None:
    twins = [tool(f"tool_{i}", "Does the same thing.") for i in range(5)]
    assert names(bm25(twins).search("same thing")) == [f"tool_{i}" for i in range(5)]


def test_tools_without_a_string_name_are_skipped() -> None:
    index = bm25([{"name": 3}, tool("ok", "fine")])
    assert index.total == 1


def test_real_sample_tools(index: ToolIndex) -> None:
    small = bm25(SMALL_TOOLS)
    assert names(small.search("echo"))[0] == "echo"
    assert names(small.search("search issues"))[0] == "issues_search"


def test_a_ranker_can_be_plugged_in() -> None:
    class Reverse:
        """Ranks tools in reverse catalog order, whatever the query."""

        def __init__(self, documents: Sequence[Document]) -> None:
            self.size = len(documents)

        def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
            return [(pos, float(pos)) for pos in reversed(range(self.size))][:limit]

    index = ToolIndex.build(TOOLS, ranker=Reverse)
    ranker: Ranker = index.ranker
    assert isinstance(ranker, Reverse)
    assert names(index.search("anything", k=2)) == [TOOLS[-1]["name"], TOOLS[-2]["name"]]
    assert names(index.search("time__convert_time", k=2))[0] == "time__convert_time"  # exact match still first


def test_bm25_is_the_default_without_the_semantic_extra_or_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYMCP_RANKER", "bm25")
    ranker = ToolIndex.build(TOOLS).ranker
    assert isinstance(ranker, HybridRanker)  # BM25F and the server ranker (tools of several servers here)
    assert [type(part) for part, _ in ranker.rankers] == [BM25Ranker, ServerRanker]
    assert describe_ranker() == "bm25f 0.8 + server 0.2 (stdlib)"
    monkeypatch.setenv("LAZYMCP_RANKER", "auto")
    if not semantic.installed_models():
        assert describe_ranker().endswith("(stdlib)")
    else:
        assert describe_ranker().startswith("hybrid: bm25f")


# --- the dev set ------------------------------------------------------------------------------------


def test_bm25f_is_at_least_as_good_as_plain_okapi_on_the_dev_set() -> None:
    if not (SHARED / "evals" / "authored" / "queries.json").exists():
        pytest.skip("../shared/evals is not here (it sits beside the project in CI)")
    from bench.search import index_search, load, per_query, summarize
    from bench.search_methods import OkapiBM25, ranker_search

    loaded = load()
    assert loaded is not None
    tools, queries = loaded
    all_names = [t["name"] for t in tools]
    catalog = set(all_names)
    okapi = summarize(per_query(ranker_search(OkapiBM25(tools), all_names, 20), queries, catalog), queries)
    ours = summarize(per_query(index_search(bm25(tools)), queries, catalog), queries)
    assert okapi["recall@5"] == pytest.approx(0.639, abs=0.005)  # the reference point, reproduced
    assert ours["recall@5"] >= okapi["recall@5"]
    assert ours["mrr"] >= okapi["mrr"]
