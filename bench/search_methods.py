"""The search bench's reference ranker (plain Okapi BM25, as the dev set defines it) and its helpers."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from lazymcp.search import Ranker

CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class OkapiBM25:
    """Plain Okapi BM25 over name + description + top-level parameter names and descriptions."""

    def __init__(self, tools: Sequence[dict[str, Any]], k1: float = 1.2, b: float = 0.75) -> None:
        self.names = [tool["name"] for tool in tools]
        docs = [self.tokens(self.text(tool)) for tool in tools]
        n = len(docs)
        avg = sum(len(d) for d in docs) / n
        df: dict[str, int] = {}
        for doc in docs:
            for term in set(doc):
                df[term] = df.get(term, 0) + 1
        self.index: dict[str, list[tuple[int, float]]] = {}
        for pos, doc in enumerate(docs):
            counts: dict[str, int] = {}
            for term in doc:
                counts[term] = counts.get(term, 0) + 1
            norm = k1 * (1 - b + b * len(doc) / avg)
            for term, tf in counts.items():
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                self.index.setdefault(term, []).append((pos, idf * tf * (k1 + 1) / (tf + norm)))

    @staticmethod
    def text(tool: dict[str, Any]) -> str:
        parts = [tool["name"], tool.get("description") or ""]
        props = (tool.get("inputSchema") or {}).get("properties") or {}
        for key, prop in props.items():
            parts.append(key)
            if isinstance(prop, dict) and isinstance(prop.get("description"), str):
                parts.append(prop["description"])
        return " ".join(parts)

    @staticmethod
    def tokens(text: str) -> list[str]:
        return re.findall(r"[^\W_]+", CAMEL.sub(" ", text).lower())

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        scores: dict[int, float] = {}
        for term in self.tokens(query):  # query term frequency counts, as in the textbook formula
            for pos, contribution in self.index.get(term, ()):
                scores[pos] = scores.get(pos, 0.0) + contribution
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]


class QueryMemo:
    """An encoder that remembers query embeddings, so one query is embedded once across fusion weights."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.key: str = encoder.key
        self.memo: dict[str, Any] = {}

    def documents(self, texts: list[str]) -> Any:
        return self.encoder.documents(texts)

    def query(self, text: str) -> Any:
        if text not in self.memo:
            self.memo[text] = self.encoder.query(text)
        return self.memo[text]


def ranker_search(ranker: Ranker, names: Sequence[str], depth: int) -> Callable[[str], list[str]]:
    return lambda query: [names[pos] for pos, _ in ranker.rank(query, depth)]
