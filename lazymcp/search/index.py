"""Tool search: rank a catalog's tools for a natural-language request (the ``search_tools`` meta-tool).

Theory of operation. ``ToolIndex.build(tools, summaries, categories)`` runs once per version of the
tool list. It wraps each tool, with the summary and category the catalog resolved for it, in a
``Document``, hands the documents to a ranker factory (by default the best ranker installed, see
``default_ranker``) and keeps the normalized forms of each name for exact matching.
``index.search(query, k)`` asks the ranker for the best candidates, puts exact and near-exact name
matches first, and returns at most ``k`` hits plus ``total``, the number of tools, so a caller can say
"k of N".

The rankers are ``lazymcp.search.ranking``'s (the stdlib BM25F) and ``lazymcp.search.semantic``'s (embeddings, and
their fusion with BM25F), which is imported only when its optional extra is installed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from lazymcp.protocol.messages import SEPARATOR, Tool
from lazymcp.search import steps
from lazymcp.search.fusion import STDLIB, STDLIB_WEIGHTS, fused
from lazymcp.search.ranking import (
    MAX_QUERY_CHARS,
    BM25Ranker,
    Document,
    FieldWeights,
    Ranker,
    RankerFactory,
)
from lazymcp.search.terms import normalize_name, stem, tokenize
from lazymcp.tools.metadata import resolve

__all__ = [
    "BM25Ranker",
    "Document",
    "FieldWeights",
    "MAX_QUERY_CHARS",
    "Ranker",
    "RankerFactory",
    "SearchHit",
    "SearchResult",
    "ToolIndex",
    "default_ranker",
    "describe_ranker",
    "normalize_name",
    "stem",
    "tokenize",
]

MAX_K: Final = 1000
"""``search`` returns at most this many hits, whatever ``k`` asks."""
POOL: Final = 50
"""A step of a multi-step request is ranked among the whole request's this many best tools only."""
RANKER_ENV: Final = "LAZYMCP_RANKER"
"""``bm25`` keeps the stdlib ranker even where the ``semantic`` extra is installed; unset or ``auto``: the best."""

_log = logging.getLogger("lazymcp.search")
Merge = Callable[[Sequence[Sequence[tuple[int, float]]], Sequence[tuple[int, float]], int], list[tuple[int, float]]]


def default_ranker(servers: Mapping[str, str] | None = None) -> RankerFactory:
    """The best ranker installed: BM25F and the server ranker fused with every embedding model installed
    (the ``semantic`` extras), else BM25F and the server ranker (``fusion.STDLIB_WEIGHTS``).

    ``servers`` gives each server's description where the front end knows it (a gateway).

    ``LAZYMCP_RANKER=bm25`` keeps BM25F. A semantic ranker that fails to build (a broken install; an
    unwritable cache is no failure) falls back to BM25F with a warning on the ``lazymcp.search`` logger.
    """

    def stdlib(documents: Sequence[Document]) -> Ranker:
        return fused(documents, STDLIB_WEIGHTS, servers=servers)

    if os.environ.get(RANKER_ENV, "auto").strip().lower() in ("bm25", "bm25f", "stdlib"):
        return stdlib
    from lazymcp.search import semantic  # stdlib-only at import: its dependencies load in semantic.load_encoder

    if not semantic.installed_models():
        return stdlib

    def build(documents: Sequence[Document]) -> Ranker:
        try:
            return semantic.hybrid(servers=servers)(documents)
        except Exception as exc:  # a broken optional install must not take search down
            _log.warning("semantic search unavailable (%s); using BM25F", exc)
            return stdlib(documents)

    return build


def describe_ranker() -> str:
    """The ranker ``search_tools`` uses here, in words: for ``lazymcp stats`` and the server's startup line."""
    from lazymcp.search import semantic

    if os.environ.get(RANKER_ENV, "auto").strip().lower() in ("bm25", "bm25f", "stdlib") or not (
        semantic.installed_models()
    ):
        return STDLIB
    return semantic.describe()


# ---------------------------------------------------------------------------------------------------
# The index
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchHit:
    name: str
    score: float


@dataclass(frozen=True)
class SearchResult:
    """The best ``hits`` for a query, best first, out of ``total`` tools."""

    query: str
    hits: tuple[SearchHit, ...]
    total: int

    @property
    def names(self) -> list[str]:
        return [hit.name for hit in self.hits]


@dataclass(frozen=True, eq=False)
class ToolIndex:
    """A search index over one version of a tool list. Build it with ``ToolIndex.build``."""

    names: tuple[str, ...]
    ranker: Ranker
    exact: dict[str, tuple[int, ...]] = field(repr=False)
    split: Callable[[str], list[str]] | None = None
    """Splits a request into its steps (``lazymcp.search.steps``); ``None`` ranks every request whole."""
    merge: Merge = steps.merge
    """Merges the steps' rankings with the whole request's (``steps.merge`` or ``steps.cover``)."""

    @classmethod
    def build(
        cls,
        tools: Iterable[Tool],
        *,
        summaries: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        ranker: RankerFactory | None = None,
        separator: str = SEPARATOR,
        servers: Mapping[str, str] | None = None,
        split: Callable[[str], list[str]] | None = None,
        merge: Merge = steps.merge,
    ) -> ToolIndex:
        """Precompute the index once.

        ``summaries`` and ``categories`` are each tool's, in order (the catalog passes what it resolved;
        by default ``lazymcp.tools.metadata.resolve`` gives them). ``ranker`` builds the ranker (by default
        ``default_ranker(servers)``, ``servers`` giving each server's description where known). ``separator``
        joins a server's name and its tool's in a gateway's names: a query naming the tool alone matches it
        exactly too, and the server ranker groups tools by it. ``split`` cuts a request into its steps
        (``None``: never). Tools without a string name are left out.
        """
        given = list(tools)
        keep = [i for i, tool in enumerate(given) if isinstance(tool.get("name"), str)]  # pyright: ignore[reportUnnecessaryIsInstance]
        documents: list[Document] = []
        for i in keep:
            tool = given[i]
            if summaries is None or categories is None:
                info = resolve(tool)
                summary, category = info.summary, info.category
            else:
                summary, category = summaries[i], categories[i]
            documents.append(Document(tool, summary, category, separator))
        names = tuple(document.name for document in documents)
        exact: dict[str, list[int]] = {}
        for position, name in enumerate(names):
            forms = {name.casefold(), normalize_name(name)}
            head, sep, tail = name.partition(separator) if separator else (name, "", "")
            if sep and head and tail:
                forms |= {tail.casefold(), normalize_name(tail)}
            for form in forms:
                if form:
                    exact.setdefault(form, []).append(position)
        return cls(
            names=names,
            ranker=(ranker or default_ranker(servers))(documents),
            exact={form: tuple(positions) for form, positions in exact.items()},
            split=split,
            merge=merge,
        )

    @property
    def total(self) -> int:
        return len(self.names)

    def exact_matches(self, query: str) -> tuple[int, ...]:
        """Positions of the tools whose name the query is, exactly or with separators normalized."""
        query = query.strip()
        if not query or len(query) > 200:
            return ()
        return self.exact.get(query.casefold(), ()) or self.exact.get(normalize_name(query), ())

    def search(self, query: str, k: int = 10) -> SearchResult:
        """The ``k`` best tools for ``query``, best first; exact name matches come first."""
        k = max(0, min(k, MAX_K))
        query = query[:MAX_QUERY_CHARS]
        if k == 0 or not query.strip():
            return SearchResult(query=query, hits=(), total=self.total)
        exact = self.exact_matches(query)
        ranked = self.rank(query, k + len(exact))
        if exact:
            scores = dict(ranked)
            top = ranked[0][1] if ranked else 0.0
            boosted = sorted(exact, key=lambda pos: (-scores.get(pos, 0.0), pos))
            first = [(pos, top + 1.0 + scores.get(pos, 0.0) * 1e-6) for pos in boosted]
            chosen = set(exact)
            ranked = first + [(pos, score) for pos, score in ranked if pos not in chosen]
        hits = tuple(SearchHit(name=self.names[pos], score=round(score, 6)) for pos, score in ranked[:k])
        return SearchResult(query=query, hits=hits, total=self.total)

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        """The ranker's best ``limit`` tools; for a request of several steps, each step covered in turn.

        Each step is ranked among the whole request's ``POOL`` best tools, by its own score plus the whole
        request's (``steps.in_context``: the request's context, such as the server it names, stays), and
        ``steps.merge`` interleaves the steps' rankings.
        """
        parts = self.split(query) if self.split is not None else [query]
        whole = self.ranker.rank(query, max(limit, POOL) if len(parts) > 1 else limit)
        if len(parts) == 1:
            return whole
        per_step = [steps.in_context(self.ranker.rank(part, self.total), whole[:POOL]) for part in parts]
        return self.merge(per_step, whole, limit)
