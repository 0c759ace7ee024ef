"""The search bench's reference ranker (plain Okapi BM25, as the dev set defines it), its cross-validation
and helpers."""

from __future__ import annotations

import math
import random
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

from lazymcp.search.index import Ranker

KINDS = ("direct", "ambiguous-server", "multi", "foreign", "vocab")
METRICS = ("recall@1", "recall@5", "recall@10", "hit@5", "mrr")
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
        parts: list[str] = [tool["name"], tool.get("description") or ""]
        schema: dict[str, Any] = tool.get("inputSchema") or {}
        props: dict[str, Any] = schema.get("properties") or {}
        for key, prop in props.items():
            parts.append(key)
            described: Any = cast(dict[str, Any], prop).get("description") if isinstance(prop, dict) else None
            if isinstance(described, str):
                parts.append(described)
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


def folds(queries: Sequence[dict[str, Any]], k: int, seed: int) -> list[list[int]]:
    """``k`` folds of query positions, stratified by kind, from a seeded shuffle."""
    rng = random.Random(seed)
    out: list[list[int]] = [[] for _ in range(k)]
    slot = 0
    for kind in KINDS:
        members = [i for i, q in enumerate(queries) if q["kind"] == kind]
        rng.shuffle(members)
        for i in members:
            out[slot % k].append(i)
            slot += 1
    return out


def cross_validate(
    family: dict[str, list[dict[str, float]]], queries: Sequence[dict[str, Any]], k: int = 5, repeats: int = 4
) -> dict[str, Any]:
    """Pick the variant with the best mean of Recall@5 and MRR on the training folds; score it held out.

    Returns the held-out folds' mean and standard deviation of each metric, the picks, each query's
    held-out Hit@5 by kind (every query is held out once per repeat), and against the family's first
    variant (the a-priori baseline): the folds where the pick beat, tied or lost to it on the held-out
    objective, and the mean ± sd of that difference.
    """
    scores: dict[str, list[float]] = {m: [] for m in METRICS}
    picks: dict[str, int] = {}
    baseline = next(iter(family))  # the a-priori choice: what a change is measured against, fold by fold
    wins = [0, 0, 0]  # folds where the pick's held-out objective beat / tied / lost to the baseline's
    gains: list[float] = []
    kind_hits: dict[str, list[float]] = {}
    for repeat in range(repeats):
        for held in folds(queries, k, seed=repeat):
            heldset = set(held)
            train = [i for i in range(len(queries)) if i not in heldset]

            def objective(name: str, train: list[int] = train) -> float:
                rows = family[name]
                return sum(rows[i]["recall@5"] + rows[i]["mrr"] for i in train) / (2 * len(train))

            best = max(family, key=objective)  # dict order breaks ties: the a-priori default is first
            picks[best] = picks.get(best, 0) + 1
            for m in METRICS:
                scores[m].append(sum(family[best][i][m] for i in held) / len(held))
            gain = objective(best, held) - objective(baseline, held)
            gains.append(gain)
            wins[0 if gain > 1e-9 else 1 if gain > -1e-9 else 2] += 1
            for i in held:
                kind_hits.setdefault(queries[i]["kind"], []).append(family[best][i]["hit@5"])
    return {
        **{m: statistics.fmean(v) for m, v in scores.items()},
        **{f"{m}_sd": statistics.stdev(v) for m, v in scores.items()},
        **{f"{m}_range": (min(v), max(v)) for m, v in scores.items()},
        "hit@5_by_kind": {kind: statistics.fmean(v) for kind, v in sorted(kind_hits.items())},
        "picks": picks,
        "folds": k * repeats,
        "vs": baseline,
        "wins_ties_losses": wins,
        "gain": statistics.fmean(gains),
        "gain_sd": statistics.stdev(gains),
    }


def fixed_folds(rows: list[dict[str, float]], queries: Sequence[dict[str, Any]], k: int = 5) -> dict[str, float]:
    """One fixed method's fold means (5 stratified folds, 4 repeats): its own spread, nothing chosen."""
    values: dict[str, list[float]] = {m: [] for m in ("recall@5", "mrr")}
    for repeat in range(4):
        for held in folds(queries, k, seed=repeat):
            for m in values:
                values[m].append(sum(rows[i][m] for i in held) / len(held))
    return {f"{m}_sd": statistics.stdev(v) for m, v in values.items()}


def cross_validate_fitted(
    fitted: Callable[[list[int]], tuple[list[dict[str, float]], Any]],
    baseline: list[dict[str, float]],
    queries: Sequence[dict[str, Any]],
    k: int = 5,
    repeats: int = 4,
) -> dict[str, Any]:
    """``cross_validate`` for a model fitted on each training fold: ``fitted(train)`` returns every query's
    metrics under the model fitted on ``train`` (only the held-out ones are read) and what it fitted.

    The same folds as ``cross_validate``; ``baseline`` (fixed rows) is what the model is measured against.
    """
    scores: dict[str, list[float]] = {m: [] for m in METRICS}
    kind_hits: dict[str, list[float]] = {}
    wins = [0, 0, 0]
    gains: list[float] = []
    models: list[Any] = []
    for repeat in range(repeats):
        for held in folds(queries, k, seed=repeat):
            heldset = set(held)
            rows, model = fitted([i for i in range(len(queries)) if i not in heldset])
            models.append(model)
            for m in METRICS:
                scores[m].append(sum(rows[i][m] for i in held) / len(held))
            for i in held:
                kind_hits.setdefault(queries[i]["kind"], []).append(rows[i]["hit@5"])
            gain = sum(
                rows[i]["recall@5"] + rows[i]["mrr"] - baseline[i]["recall@5"] - baseline[i]["mrr"] for i in held
            )
            gain /= 2 * len(held)
            gains.append(gain)
            wins[0 if gain > 1e-9 else 1 if gain > -1e-9 else 2] += 1
    return {
        **{m: statistics.fmean(v) for m, v in scores.items()},
        **{f"{m}_sd": statistics.stdev(v) for m, v in scores.items()},
        **{f"{m}_range": (min(v), max(v)) for m, v in scores.items()},
        "hit@5_by_kind": {kind: statistics.fmean(v) for kind, v in sorted(kind_hits.items())},
        "picks": {},
        "models": models,
        "folds": k * repeats,
        "wins_ties_losses": wins,
        "gain": statistics.fmean(gains),
        "gain_sd": statistics.stdev(gains),
    }


def encoders(models: Sequence[str]) -> dict[str, Any]:
    """Each of ``models`` whose extra is installed, loaded; the others skipped with a line on stderr."""
    from lazymcp.search.semantic import load_encoder

    found: dict[str, Any] = {}
    for model in models:
        try:
            found[model] = load_encoder(model)
        except ImportError as exc:
            print(f"skipping {model}: {exc}", file=sys.stderr)
    return found
