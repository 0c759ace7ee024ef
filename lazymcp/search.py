"""Tool search: rank a catalog's tools for a natural-language request (the ``search_tools`` meta-tool).

Theory of operation. ``ToolIndex.build(tools, summaries, categories)`` runs once per version of the
tool list. It wraps each tool, with the summary and category the catalog resolved for it, in a
``Document``, hands the documents to a ranker factory (by default the best ranker installed, see
``default_ranker``) and keeps the normalized forms of each name for exact matching.
``index.search(query, k)`` asks the ranker for the best candidates, puts exact and near-exact name
matches first, and returns at most ``k`` hits plus ``total``, the number of tools, so a caller can say
"k of N".

The stdlib ranker, ``BM25Ranker``, is a field-weighted BM25 (BM25F, Robertson et al. 2004, the
"simple BM25F" form): a tool is a set of fields (name parts, title, summary, description, category,
parameter names, parameter descriptions), each with its own weight and length normalization; a
term's per-field frequencies are normalized, weighted and summed into one pseudo-frequency that is
saturated once (``k1``) and multiplied by the term's IDF over whole tools. Everything that depends
only on the tools is computed at build time: the inverted index maps each term straight to
``[(tool position, contribution)]``, so a query costs one dict lookup per query term and one float
addition per posting. Terms come from ``lazymcp.terms``.

Other rankers plug in through the ``Ranker`` protocol: one method, ``rank(query, limit)``, returning
tool positions with scores, best first. The embedding and hybrid rankers live in
``lazymcp.semantic``, which is imported only when its optional extra is installed.
"""

from __future__ import annotations

import logging
import math
import os
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, cast

from lazymcp.messages import Tool
from lazymcp.metadata import resolve
from lazymcp.terms import normalize_name, stem, tokenize

__all__ = [
    "BM25Ranker",
    "Document",
    "FieldWeights",
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

MAX_QUERY_CHARS: Final = 2000
"""A longer query is cut to this many characters before it is tokenized (bounds the work per query)."""
MAX_QUERY_TERMS: Final = 64
"""At most this many distinct terms of a query are scored (the first ones)."""
MAX_K: Final = 1000
"""``search`` returns at most this many hits, whatever ``k`` asks."""
K1: Final = 2.0
"""BM25's term-frequency saturation. 2.0 rather than the textbook 1.2, and ``b_description`` 0.5 rather
than 0.75: cross-validation on the dev set picked each in most folds (bench/SEARCH.md)."""
RANKER_ENV: Final = "LAZYMCP_RANKER"
"""``bm25`` keeps the stdlib ranker even where the ``semantic`` extra is installed; unset or ``auto``: the best."""

_log = logging.getLogger("lazymcp.search")


@dataclass(frozen=True, slots=True)
class Document:
    """One tool as rankers see it: its definition, and the summary and category the catalog resolved."""

    tool: Tool
    summary: str
    category: str

    @property
    def name(self) -> str:
        return _text(self.tool.get("name"))


# ---------------------------------------------------------------------------------------------------
# Fields
# ---------------------------------------------------------------------------------------------------


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _properties(schema: object) -> Iterable[tuple[str, dict[str, object]]]:
    if isinstance(schema, dict):
        props: object = cast(dict[str, object], schema).get("properties")
        if isinstance(props, dict):
            for key, prop in cast(dict[str, object], props).items():
                yield key, cast(dict[str, object], prop) if isinstance(prop, dict) else {}


def parameters(tool: Tool) -> list[tuple[str, str]]:
    """(name, description) of the input schema's parameters, top-level and one level nested.

    Nested means the properties of an object parameter and of an array parameter's items.
    """
    found: list[tuple[str, str]] = []
    for key, prop in _properties(tool.get("inputSchema")):
        found.append((key, _text(prop.get("description"))))
        nested = list(_properties(prop))
        items = prop.get("items")
        nested.extend(_properties(items))
        found.extend((sub, _text(sub_prop.get("description"))) for sub, sub_prop in nested)
    return found


@dataclass(frozen=True)
class FieldWeights:
    """BM25F weights (term-frequency multipliers) and length normalizations ``b`` of each field."""

    name: float = 3.0
    title: float = 2.0
    summary: float = 1.0
    description: float = 1.0
    category: float = 1.5
    param_names: float = 0.5
    param_descriptions: float = 0.3
    b_name: float = 0.5
    b_title: float = 0.5
    b_summary: float = 0.5
    b_description: float = 0.5
    b_category: float = 0.0
    b_param_names: float = 0.75
    b_param_descriptions: float = 0.75


FIELDS: Final = ("name", "title", "summary", "description", "category", "param_names", "param_descriptions")


def document_fields(document: Document, *, stemming: bool = True) -> dict[str, list[str]]:
    """The terms of each searchable field of a tool."""
    tool = document.tool
    params = parameters(tool)
    return {
        "name": tokenize(document.name, identifier=True, stemming=stemming),
        "title": tokenize(_text(tool.get("title")), stemming=stemming),
        "summary": tokenize(document.summary, stemming=stemming),
        "description": tokenize(_text(tool.get("description")), stemming=stemming),
        "category": tokenize(document.category, identifier=True, stemming=stemming),
        "param_names": [t for key, _ in params for t in tokenize(key, identifier=True, stemming=stemming)],
        "param_descriptions": [t for _, text in params for t in tokenize(text, stemming=stemming)],
    }


# ---------------------------------------------------------------------------------------------------
# Rankers
# ---------------------------------------------------------------------------------------------------


class Ranker(Protocol):
    """Ranks the tools it was built over for a query."""

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        """At most ``limit`` (tool position, score) pairs, best first; tools that do not match are left out."""
        ...


RankerFactory = Callable[[Sequence[Document]], Ranker]
"""Builds a ranker over the documents of a tool list (``BM25Ranker`` is one)."""


class BM25Ranker:
    """Field-weighted BM25 (BM25F) over an inverted index built once. The default ranker."""

    def __init__(self, documents: Sequence[Document], weights: FieldWeights | None = None, k1: float = K1) -> None:
        self.weights = weights or FieldWeights()
        self.k1 = k1
        self.size = len(documents)
        per_tool = [document_fields(document) for document in documents]
        avg_len = {
            f: (sum(len(fields[f]) for fields in per_tool) / self.size if self.size else 0.0) or 1.0 for f in FIELDS
        }
        weight = {f: float(getattr(self.weights, f)) for f in FIELDS}
        b = {f: float(getattr(self.weights, f"b_{f}")) for f in FIELDS}
        pseudo: dict[str, dict[int, float]] = {}
        for position, fields in enumerate(per_tool):
            for f in FIELDS:
                terms = fields[f]
                if not terms or weight[f] == 0.0:
                    continue
                norm = weight[f] / (1.0 - b[f] + b[f] * len(terms) / avg_len[f])
                for term, count in Counter(terms).items():
                    postings = pseudo.setdefault(term, {})
                    postings[position] = postings.get(position, 0.0) + count * norm
        # Postings live in two flat arrays, term after term: tuples of (position, float) cost ten times
        # as much, 10 MB for a thousand tools.
        self.index: dict[str, int] = {}
        """Each term's number: its postings are ``positions`` and ``contributions`` over
        ``bounds[number]:bounds[number + 1]``."""
        self.bounds = array("I", [0])
        self.positions = array("I")
        self.contributions = array("d")
        for term, postings in pseudo.items():
            df = len(postings)
            idf = math.log(1.0 + (self.size - df + 0.5) / (df + 0.5))
            self.index[term] = len(self.index)
            self.positions.extend(postings)
            self.contributions.extend(idf * tf * (k1 + 1.0) / (k1 + tf) for tf in postings.values())
            self.bounds.append(len(self.positions))

    def query_terms(self, query: str) -> list[str]:
        """The distinct index terms of a query, in order, at most ``MAX_QUERY_TERMS``."""
        terms = dict.fromkeys(tokenize(query[:MAX_QUERY_CHARS], known=self.index))
        return list(terms)[:MAX_QUERY_TERMS]

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        scores: dict[int, float] = {}
        get = scores.get
        bounds, positions, contributions = self.bounds, self.positions, self.contributions
        for term in self.query_terms(query):
            number = self.index.get(term)
            if number is None:
                continue
            start, end = bounds[number], bounds[number + 1]
            for position, contribution in zip(positions[start:end], contributions[start:end], strict=True):
                scores[position] = get(position, 0.0) + contribution
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:limit]


def default_ranker() -> RankerFactory:
    """The best ranker installed: BM25F fused with every embedding model installed (the ``semantic``
    extras), else BM25F.

    ``LAZYMCP_RANKER=bm25`` keeps BM25F. A semantic ranker that fails to build (a broken install; an
    unwritable cache is no failure) falls back to BM25F with a warning on the ``lazymcp.search`` logger.
    """
    if os.environ.get(RANKER_ENV, "auto").strip().lower() in ("bm25", "bm25f", "stdlib"):
        return BM25Ranker
    from lazymcp import semantic  # stdlib-only at import: its dependencies load in semantic.load_encoder

    if not semantic.installed_models():
        return BM25Ranker

    def build(documents: Sequence[Document]) -> Ranker:
        try:
            return semantic.hybrid()(documents)
        except Exception as exc:  # a broken optional install must not take search down
            _log.warning("semantic search unavailable (%s); using BM25F", exc)
            return BM25Ranker(documents)

    return build


def describe_ranker() -> str:
    """The ranker ``search_tools`` uses here, in words: for ``lazymcp stats`` and the server's startup line."""
    if default_ranker() is BM25Ranker:
        return "bm25f (stdlib)"
    from lazymcp import semantic

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

    @classmethod
    def build(
        cls,
        tools: Iterable[Tool],
        *,
        summaries: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        ranker: RankerFactory | None = None,
    ) -> ToolIndex:
        """Precompute the index once.

        ``summaries`` and ``categories`` are each tool's, in order (the catalog passes what it resolved;
        by default ``lazymcp.metadata.resolve`` gives them). ``ranker`` builds the ranker (by default
        ``default_ranker()``). Tools without a string name are left out.
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
            documents.append(Document(tool, summary, category))
        names = tuple(document.name for document in documents)
        exact: dict[str, list[int]] = {}
        for position, name in enumerate(names):
            forms = {name.casefold(), normalize_name(name)}
            head, sep, tail = name.partition("__")
            if sep and head and tail:
                forms |= {tail.casefold(), normalize_name(tail)}
            for form in forms:
                if form:
                    exact.setdefault(form, []).append(position)
        return cls(
            names=names,
            ranker=(ranker or default_ranker())(documents),
            exact={form: tuple(positions) for form, positions in exact.items()},
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
        ranked = self.ranker.rank(query, k + len(exact))
        if exact:
            scores = dict(ranked)
            top = ranked[0][1] if ranked else 0.0
            boosted = sorted(exact, key=lambda pos: (-scores.get(pos, 0.0), pos))
            first = [(pos, top + 1.0 + scores.get(pos, 0.0) * 1e-6) for pos in boosted]
            chosen = set(exact)
            ranked = first + [(pos, score) for pos, score in ranked if pos not in chosen]
        hits = tuple(SearchHit(name=self.names[pos], score=round(score, 6)) for pos, score in ranked[:k])
        return SearchResult(query=query, hits=hits, total=self.total)
