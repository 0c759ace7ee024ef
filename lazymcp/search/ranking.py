"""Ranking tools for a query: a tool as rankers see it (``Document``), the one-method ``Ranker``
protocol, and the stdlib ranker, ``BM25Ranker``.

``BM25Ranker`` is a field-weighted BM25 (BM25F, Robertson et al. 2004, the "simple BM25F" form): a tool
is a set of fields (name parts, title, summary, description, category, parameter names, parameter
descriptions), each with its own weight and length normalization; a term's per-field frequencies are
normalized, weighted and summed into one pseudo-frequency that is saturated once (``k1``) and
multiplied by the term's IDF over whole tools. Everything that depends only on the tools is computed at
build time: the inverted index maps each term straight to ``[(tool position, contribution)]``, so a
query costs one dict lookup per query term and one float addition per posting. Terms come from
``lazymcp.search.terms``.

Other rankers plug in through ``Ranker``: the embedding and hybrid rankers of ``lazymcp.search.semantic``.
Which ranker a search uses is ``lazymcp.search.index``'s choice.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, cast

from lazymcp.protocol.messages import SEPARATOR, Tool
from lazymcp.search.terms import normalize_name, tokenize

MAX_QUERY_CHARS: Final = 2000
"""A longer query is cut to this many characters before it is tokenized (bounds the work per query)."""
MAX_QUERY_TERMS: Final = 64
"""At most this many distinct terms of a query are scored (the first ones)."""
K1: Final = 2.0
"""BM25's term-frequency saturation. 2.0 rather than the textbook 1.2, and ``b_description`` 0.5 rather
than 0.75: cross-validation on the dev set picked each in most folds (bench/SEARCH.md)."""


@dataclass(frozen=True, slots=True)
class Document:
    """One tool as rankers see it: its definition, and the summary and category the catalog resolved."""

    tool: Tool
    summary: str
    category: str
    separator: str = SEPARATOR
    """What joins a server's name and its tool's in this tool's name (a gateway's catalog)."""

    @property
    def name(self) -> str:
        return _text(self.tool.get("name"))

    def name_words(self) -> str:
        """The name as words: its server prefix and its parts (``github__create_issue``: github create issue)."""
        return normalize_name(self.name.replace(self.separator, " ") if self.separator else self.name)


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
