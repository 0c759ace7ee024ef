"""Fusing rankers: a linear model over each ranker's min-max-normalized scores (``HybridRanker``,
``fused``), its weights for each install (``STDLIB_WEIGHTS`` here, ``semantic.FUSION_WEIGHTS`` with
embedding models), and the fit that gives them (``fit``).

Theory of operation. Every ranker (BM25F, the server ranker of ``lazymcp.search.serverrank``, each embedding model
of ``lazymcp.search.semantic``) is one feature: its score for a tool, scaled to [0, 1] over what it returned.
A tool's fused score is the weighted sum of its features (convex fusion, Bruch et al. 2023, "An analysis
of fusion functions for hybrid retrieval"). The weights are not guessed: ``fit`` learns them from
labelled queries with a pairwise logistic loss and an L2 penalty, stdlib only, so the bench can refit
them in any install (``python -m bench.search --fit``); the product only reads the constants below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final

from lazymcp.search.ranking import BM25Ranker, Document, Ranker
from lazymcp.search.serverrank import ServerRanker

BM25F: Final = "bm25f"
"""The feature name of the stdlib ranker's score."""
SERVER: Final = "server"
"""The feature name of the server ranker's score (``lazymcp.servers``)."""

STDLIB_WEIGHTS: Final[dict[str, float]] = {BM25F: 0.8, SERVER: 0.2}
"""The stdlib install's weights (BM25F and the server ranker): the server share cross-validation picked
in 19 of 20 folds (bench/SEARCH.md; the pairwise fit, 0.64 / 0.36, estimated lower).
``semantic.FUSION_WEIGHTS`` holds each set of embedding models'. A feature absent weighs 0."""


def weights_text(weights: Mapping[str, float]) -> str:
    """Fusion weights in words: ``bm25f 0.8 + server 0.2``."""
    return " + ".join(f"{name} {weight:g}" for name, weight in weights.items() if weight > 0)


STDLIB: Final = f"{weights_text(STDLIB_WEIGHTS)} (stdlib)"
"""The stdlib install's ranker in words (``lazymcp stats``, the server's startup line)."""


class HybridRanker:
    """A weighted sum of rankers' normalized scores.

    Each ranker is asked for its ``depth`` best tools; its scores are scaled to [0, 1] by min-max over
    what it returned, with the minimum taken as 0 when it returned fewer than all the tools (BM25
    leaves non-matching tools out: they score 0). A tool a ranker left out gets 0 from it. Tools whose
    fused score is below ``floor`` times the best one's are left out: an embedding ranker scores every
    tool, and without a floor "weather" would return a notes tool whenever there are few tools.
    """

    def __init__(
        self, rankers: Sequence[tuple[Ranker, float]], size: int, depth: int | None = None, floor: float = 0.0
    ) -> None:
        self.rankers = list(rankers)
        self.size = size
        self.depth = size if depth is None else depth
        self.floor = floor

    def features(self, query: str, limit: int) -> dict[int, list[float]]:
        """Each candidate tool's normalized score from every ranker, in ``rankers`` order (0 where left out)."""
        found: dict[int, list[float]] = {}
        count = len(self.rankers)
        for column, (ranker, _) in enumerate(self.rankers):
            ranked = ranker.rank(query, max(limit, self.depth))
            if not ranked:
                continue
            high = ranked[0][1]
            low = min(score for _, score in ranked) if len(ranked) >= self.size else min(0.0, ranked[-1][1])
            span = high - low
            for position, score in ranked:  # all alike (one tool, say): each counts fully
                row = found.get(position)
                if row is None:
                    row = found[position] = [0.0] * count
                row[column] = (score - low) / span if span > 0 else 1.0
        return found

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        weights = [weight for _, weight in self.rankers]
        fused = {
            position: sum(w * x for w, x in zip(weights, row, strict=True))
            for position, row in self.features(query, limit).items()
        }
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
        if ranked and self.floor > 0:
            cut = self.floor * ranked[0][1]
            ranked = [item for item in ranked if item[1] >= cut and item[1] > 0]
        return ranked[:limit]


def fused(
    documents: Sequence[Document],
    weights: Mapping[str, float],
    embedders: Mapping[str, Ranker] | None = None,
    servers: Mapping[str, str] | None = None,
    floor: float = 0.0,
) -> Ranker:
    """The ranker of an install: BM25F, the server ranker and each embedding ranker, by ``weights``.

    ``embedders`` maps a model's name (its feature) to its ranker over ``documents``; ``servers`` gives
    each server's description, where the front end knows it. A feature of weight 0 is not built; with
    BM25F alone, BM25F is the ranker.
    """
    rankers: list[tuple[Ranker, float]] = [(BM25Ranker(documents), weights.get(BM25F, 0.0))]
    if weights.get(SERVER, 0.0) > 0:
        rankers.append((ServerRanker(documents, servers), weights[SERVER]))
    rankers += [(ranker, weights.get(model, 0.0)) for model, ranker in (embedders or {}).items()]
    if len(rankers) == 1:
        return rankers[0][0]
    return HybridRanker(rankers, size=len(documents), floor=floor)


def fit(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], l2: float = 0.1, steps: int = 300, rate: float = 0.5
) -> list[float]:
    """Weights of a linear scorer from (relevant tool's features, non-relevant tool's features) pairs.

    Minimizes the mean pairwise logistic loss log(1 + exp(-w·(a - b))) plus ``l2`` · |w|² by full-batch
    gradient descent (convex: any start reaches the same weights). The result is scaled to sum to 1 (a
    ranking does not change with the scale; ``HybridRanker``'s floor is relative too).
    """
    if not pairs:
        raise ValueError("no pairs to fit on")
    width = len(pairs[0][0])
    diffs = [[x - y for x, y in zip(a, b, strict=True)] for a, b in pairs]
    w = [1.0 / width] * width
    for _ in range(steps):
        grad = [2.0 * l2 * wi for wi in w]
        for d in diffs:
            margin = sum(wi * di for wi, di in zip(w, d, strict=True))
            g = -1.0 / (1.0 + math.exp(min(margin, 50.0))) / len(diffs)
            for i, di in enumerate(d):
                grad[i] += g * di
        w = [wi - rate * gi for wi, gi in zip(w, grad, strict=True)]
    w = [max(wi, 0.0) for wi in w]  # a ranker that only hurts is dropped, never subtracted
    total = sum(w)
    return [wi / total for wi in w] if total > 0 else [1.0 / width] * width


def named(names: Sequence[str], weights: Sequence[float]) -> Mapping[str, float]:
    """``fit``'s weights by feature name, rounded as the weight tables hold them."""
    return {name: round(weight, 2) for name, weight in zip(names, weights, strict=True)}
