"""Multi-step requests (lazymcp.search.steps), the server ranker (lazymcp.search.serverrank) and the fusion they meet in
(lazymcp.search.fusion), alone and through ``ToolIndex``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from lazymcp.search import steps
from lazymcp.search.fusion import BM25F, SERVER, STDLIB_WEIGHTS, HybridRanker, fit, fused
from lazymcp.search.index import ToolIndex
from lazymcp.search.ranking import BM25Ranker, Document
from lazymcp.search.serverrank import ServerRanker, server_of
from tests.conftest import SERVERS, tool

# --- splitting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Find the cheapest flight and add it to my calendar", ["Find the cheapest flight", "add it to my calendar"]),
        ("Stage the file; then commit it with a message", ["Stage the file", "commit it with a message"]),
        (
            "Liste les fichiers du dossier src puis lis le fichier main.py",
            ["Liste les fichiers du dossier src", "lis le fichier main.py"],
        ),
        ("Busca noticias sobre MCP y después extrae el contenido", ["Busca noticias sobre MCP", "extrae el contenido"]),
        (
            "Erstelle ein Produkt namens Pro und danach einen Preis dafür",
            ["Erstelle ein Produkt namens Pro", "einen Preis dafür"],
        ),
        (
            "Notionでページを検索して、そのページにコメントを追加して",
            ["Notionでページを検索して", "そのページにコメントを追加して"],
        ),
        ("列出所有虚拟机然后删除停止的虚拟机", ["列出所有虚拟机", "删除停止的虚拟机"]),
    ],
)
def test_a_request_of_several_steps_splits_at_its_connectives_in_several_languages(
    query: str, expected: list[str]
) -> None:
    assert steps.split(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "create an issue",
        "list the open issues of acme/api",
        "write README.md to disk",  # a dot inside a word ends nothing
        "convert 1,000 dollars to euros",  # nor a comma inside a number
        "Explore our Data Explorer setup: the clusters",  # a colon elaborates one step
        "approve and merge it",  # pieces of one word are no steps of their own
        "",
    ],
)
def test_a_single_step_request_stays_whole(query: str) -> None:
    assert steps.split(query) == [query]


def test_without_conjunctions_only_punctuation_and_sequencers_split() -> None:
    query = "Find the cheapest flight and add it to my calendar"
    assert steps.split(query, conjunctions=False) == [query]
    assert steps.split("Find the cheapest flight, then add it to my calendar", conjunctions=False) == [
        "Find the cheapest flight",
        "add it to my calendar",
    ]


def test_a_request_of_many_steps_is_bounded() -> None:
    query = "; ".join(f"do task number {i}" for i in range(20))
    found = steps.split(query)
    assert len(found) == steps.MAX_STEPS
    assert "number 19" in found[-1]


# --- merging -----------------------------------------------------------------------------------------


def test_round_robin_merge_covers_each_step_then_fills_from_the_whole_ranking() -> None:
    first = [(1, 4.0), (2, 3.0), (3, 2.0)]
    second = [(1, 9.0), (7, 3.0)]  # its best was taken by the first step: its next one takes the turn
    whole = [(5, 1.0), (1, 0.9), (6, 0.5)]
    merged = steps.merge([first, second], whole, 5)
    assert [p for p, _ in merged] == [1, 7, 2, 3, 5]
    scores = [s for _, s in merged]
    assert scores == sorted(scores, reverse=True)
    assert [p for p, _ in steps.merge([first, second], whole, 2)] == [1, 7]
    assert steps.merge([], whole, 2) == [(5, 1.0), (1, 0.9)]


def test_cover_moves_each_steps_best_into_the_top_k_and_keeps_the_first() -> None:
    whole = [(p, 10.0 - p) for p in range(10)]
    merged = steps.cover([[(8, 1.0)], [(1, 1.0)], [(9, 1.0)]], whole, 10, k=5)
    top = [p for p, _ in merged[:5]]
    assert top[0] == 0 and {8, 1, 9} <= set(top)
    assert sorted(p for p, _ in merged) == list(range(10))  # nothing lost, nothing twice
    assert [p for p, _ in steps.cover([[(2, 1.0)]], whole, 5)] == [0, 1, 2, 3, 4]  # covered: unchanged


def test_a_step_is_ranked_in_the_whole_requests_context() -> None:
    step = [(3, 5.0), (4, 4.9)]  # "show the logs": any server's
    whole = [(4, 10.0), (9, 8.0), (3, 1.0)]  # the request names tool 4's server
    assert [p for p, _ in steps.in_context(step, whole)] == [4, 3]


# --- servers -----------------------------------------------------------------------------------------

TWO_SERVERS: list[dict[str, Any]] = [
    tool("gitlab__create_project", "Create a project."),
    tool("gitlab__list_merge_requests", "List merge requests of a repository."),
    tool("atlas__create_project", "Create a project."),
    tool("atlas__create_cluster", "Create a database cluster in a project."),
    tool("atlas__list_clusters", "List the database clusters."),
]


def documents(tools: list[dict[str, Any]]) -> list[Document]:
    return [Document(t, "", "") for t in tools]


def test_a_tools_server_is_its_names_prefix() -> None:
    assert server_of(Document(tool("atlas__create_project"), "", "")) == "atlas"
    assert server_of(Document(tool("create_project"), "", "")) == ""
    assert server_of(Document(tool("__odd"), "", "")) == ""


def test_the_server_ranker_gives_each_tool_its_servers_score() -> None:
    ranked = ServerRanker(documents(TWO_SERVERS)).rank("a database cluster", 10)
    assert {p for p, _ in ranked} == {2, 3, 4}  # atlas's tools, all alike; gitlab's never matched
    assert len({s for _, s in ranked}) == 1
    described = ServerRanker(documents(TWO_SERVERS), {"gitlab": "Source code hosting and CI pipelines."})
    assert {p for p, _ in described.rank("pipelines", 10)} == {0, 1}
    assert ServerRanker(documents([tool("create_project"), tool("list_projects")])).rank("project", 10) == []


def test_the_server_prior_breaks_a_tie_between_siblings_on_two_servers() -> None:
    query = "create a project for the cluster"
    alone = ToolIndex.build(TWO_SERVERS, ranker=BM25Ranker, split=None).search(query, 2).names
    stdlib = ToolIndex.build(TWO_SERVERS, ranker=lambda docs: fused(docs, STDLIB_WEIGHTS), split=None)
    with_servers = stdlib.search(query, 5).names
    assert alone[0] != "atlas__create_project" or alone[1] != "gitlab__create_project"  # BM25F alone: not decided
    assert with_servers.index("atlas__create_project") < with_servers.index("gitlab__create_project")


def test_the_default_stdlib_ranker_fuses_bm25f_and_the_server_ranker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYMCP_RANKER", "bm25")
    ranker = ToolIndex.build(TWO_SERVERS).ranker
    assert STDLIB_WEIGHTS.get(SERVER, 0) > 0
    assert isinstance(ranker, HybridRanker)
    assert [type(r) for r, _ in ranker.rankers] == [BM25Ranker, ServerRanker]
    assert isinstance(fused(documents(TWO_SERVERS), {BM25F: 1.0}), BM25Ranker)  # no server weight: BM25F itself


# --- through the index ------------------------------------------------------------------------------

STEPWISE: list[dict[str, Any]] = [
    tool("git__git_status", "Show the staged and unstaged files."),
    tool("git__git_diff_staged", "Show the staged changes."),
    tool("git__git_diff_unstaged", "Show the unstaged changes."),
    tool("git__git_commit", "Save a snapshot of the repository."),
]


class OneVector:
    """Ranks as one embedding of a whole request does: the first step's siblings, the second step's tool last."""

    def __init__(self, docs: Any) -> None:
        self.size = len(docs)

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        if "files" in query:  # the whole request, or its first step
            return [(0, 0.9), (1, 0.8), (2, 0.7), (3, 0.2)][:limit]
        return [(3, 0.9), (0, 0.1)][:limit]  # "save a snapshot" alone


def test_the_index_covers_each_step_of_a_request() -> None:
    query = "Show the staged files, then save a snapshot"
    whole = ToolIndex.build(STEPWISE, ranker=OneVector, split=None).search(query, 2).names
    split = ToolIndex.build(STEPWISE, ranker=OneVector, split=steps.split).search(query, 2).names
    covered = ToolIndex.build(STEPWISE, ranker=OneVector, split=steps.split, merge=steps.cover).search(query, 2)
    assert whole == ["git__git_status", "git__git_diff_staged"]
    assert split == ["git__git_status", "git__git_commit"]
    assert covered.names == ["git__git_status", "git__git_commit"]
    assert covered.hits[0].score >= covered.hits[1].score
    exact = ToolIndex.build(STEPWISE, ranker=OneVector, split=steps.split).search("git__git_commit", 1)
    assert exact.names == ["git__git_commit"]


# --- fitting ----------------------------------------------------------------------------------------


def test_the_fit_weighs_the_feature_that_separates_relevant_tools() -> None:
    pairs = [([1.0, 0.2], [0.1, 0.3]), ([0.9, 0.5], [0.2, 0.5]), ([0.8, 0.1], [0.3, 0.0])]
    weights = fit(pairs)
    assert weights[0] > weights[1] and abs(sum(weights) - 1.0) < 1e-9
    with pytest.raises(ValueError, match="no pairs"):
        fit([])


class Backwards:
    """An embedding stand-in that ranks the catalog in reverse order."""

    def __init__(self, size: int) -> None:
        self.size = size

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        return [(position, float(position)) for position in reversed(range(self.size))][:limit]


def test_the_share_grid_starts_at_the_shipped_share_and_moves_the_ranking_with_it() -> None:
    from bench.search_fit import SHARES, Bench, share_grid

    tools = [tool("docs__alpha_report", "Write the alpha report."), tool("mail__send_note", "Send a note.")]
    queries = [{"query": "write the alpha", "relevant": ["docs__alpha_report"], "kind": "direct"}]

    def evaluate(search: Any, qs: Any) -> list[dict[str, float]]:
        return [{"first": 1.0 if search(q["query"])[:1] == q["relevant"] else 0.0} for q in qs]

    bench = Bench(tools, evaluate)
    bench.features["reverse"] = Backwards(len(tools))
    grid = share_grid(bench, queries, ["reverse"], 0.4, 0.0)
    assert list(grid) == ["bm25f=0.4", "bm25f=0.3", "bm25f=0.5", "bm25f=0.6", "bm25f=0.7"]
    assert len(grid) == len(SHARES)
    # BM25F finds the report, the stand-in puts the note first: BM25F wins from one half (a tie goes by
    # catalog order).
    assert {label: rows[0]["first"] for label, rows in grid.items()} == {
        "bm25f=0.4": 0.0,
        "bm25f=0.3": 0.0,
        "bm25f=0.5": 1.0,
        "bm25f=0.6": 1.0,
        "bm25f=0.7": 1.0,
    }


# --- through a real gateway ------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_search_tools_through_a_gateway_ranks_by_the_servers_description(tmp_path: Path) -> None:
    """Two servers with the same tools: the request's words are only in one server's description."""
    server = {"command": sys.executable, "args": [str(SERVERS / "given_server.py")]}
    config = tmp_path / "mcp.json"
    servers = {"s": server, "crm": server | {"lazymcp": {"description": "Contacts and companies of the sales team."}}}
    config.write_text(json.dumps({"mcpServers": servers}))
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "LAZYMCP_RANKER": "bm25"}
    args = ["-m", "lazymcp", "gateway", "--config", str(config)]
    with anyio.fail_after(60):
        async with Client(StdioServerParameters(command=sys.executable, args=args, env=env), mode="legacy") as client:
            found = await client.call_tool("search_tools", {"query": "repeat a text for the sales contacts"})
    shown = "".join(getattr(block, "text", "") for block in found.content)
    assert not found.is_error
    assert 0 <= shown.find("crm__repeat") < shown.find("s__repeat")
