"""Round three of the search bench: the server ranker, multi-step splitting, the fitted fusion and BM25F's
share beside the embedding models, each measured by cross-validation against what it would replace
(the shipped share, for the last), on the dev set, and then scored on the multi-step requests of
``bench/multistep.json`` (written before any of it was measured; nothing is chosen on them).

``python -m bench.search --fit`` runs it and prints the weight tables to paste into
``lazymcp/search/fusion.py`` (``STDLIB_WEIGHTS``) and ``lazymcp/search/semantic.py`` (``FUSION_WEIGHTS``): the fit on
the whole dev set, whose cross-validated estimate is printed beside it.
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.search_methods import KINDS, QueryMemo, cross_validate, cross_validate_fitted, encoders, folds
from lazymcp.search import steps
from lazymcp.search.fusion import BM25F, SERVER, HybridRanker, fit, named
from lazymcp.search.index import ToolIndex
from lazymcp.search.ranking import BM25Ranker, Ranker
from lazymcp.search.serverrank import ServerRanker

MULTISTEP = Path(__file__).with_name("multistep.json")
SERVER_GRID = (0.0, 0.1, 0.2, 0.3)
"""The server ranker's share beside BM25F: the grid cross-validation picks from (0 first: the baseline)."""
SPLITS: dict[str, tuple[Callable[[str], list[str]] | None, Any]] = {
    "whole": (None, steps.merge),
    "sequencers+round-robin": (functools.partial(steps.split, conjunctions=False), steps.merge),
    "conjunctions+round-robin": (steps.split, steps.merge),
    "sequencers+cover": (functools.partial(steps.split, conjunctions=False), steps.cover),
    "conjunctions+cover": (steps.split, steps.cover),
}
"""How a request is cut into steps: never (the baseline), at punctuation and sequencing words, and at
coordinating conjunctions too; each merged round-robin (``steps.merge``) or by moving each step's best
into the whole request's top 5 (``steps.cover``)."""
SHARES = (0.3, 0.4, 0.5, 0.6, 0.7)
"""BM25F's share beside the embedding models (split evenly among them), the grid of ``bench.search``; the
shipped share goes first, so the folds won / tied / lost say whether moving it helps."""
NEGATIVES = 10
"""Each relevant tool is paired with this many of the best-ranked non-relevant tools."""

Rows = list[dict[str, float]]
Evaluate = Callable[[ToolIndex, Sequence[dict[str, Any]]], Rows]


def multistep() -> list[dict[str, Any]]:
    return [q | {"kind": "multi"} for q in json.loads(MULTISTEP.read_text())]


def fixed(rankers: Sequence[tuple[Ranker, float]], size: int, floor: float) -> Ranker:
    if len(rankers) == 1:
        return rankers[0][0]
    return HybridRanker(rankers, size=size, floor=floor)


class Bench:
    """The rankers of one catalog, built once, and the indexes of each configuration over them."""

    def __init__(self, tools: list[dict[str, Any]], evaluate: Callable[[Callable[[str], list[str]], Any], Rows]):
        self.tools = tools
        self.evaluate = evaluate
        self.docs = ToolIndex.build(tools, ranker=lambda docs: Keep(docs), split=None).ranker.docs  # type: ignore[attr-defined]
        self.size = len(self.docs)
        self.features: dict[str, Ranker] = {BM25F: BM25Ranker(self.docs), SERVER: ServerRanker(self.docs)}
        self.memo: dict[tuple[tuple[str, ...], str], dict[int, list[float]]] = {}

    def index(self, weights: dict[str, float], split: tuple[Any, Any], floor: float) -> ToolIndex:
        rankers = [(self.features[name], w) for name, w in weights.items() if w > 0]
        ranker = fixed(rankers, self.size, floor)
        return ToolIndex.build(self.tools, ranker=lambda _docs: ranker, split=split[0], merge=split[1])

    def rows(self, index: ToolIndex, queries: Sequence[dict[str, Any]]) -> Rows:
        return self.evaluate(lambda query: index.search(query, 20).names, queries)

    def pairs(
        self, names: Sequence[str], queries: Sequence[dict[str, Any]], train: Sequence[int], base: dict[str, float]
    ) -> list[tuple[list[float], list[float]]]:
        """(relevant, non-relevant) feature rows of the training queries, non-relevant the best under ``base``."""
        columns = list(names)
        position = {doc.name: i for i, doc in enumerate(self.docs)}
        out: list[tuple[list[float], list[float]]] = []
        for i in train:
            found = self.row(tuple(columns), queries[i]["query"])
            relevant = {position[name] for name in queries[i]["relevant"] if name in position}
            score = {
                p: sum(base.get(n, 0.0) * x for n, x in zip(columns, row, strict=True)) for p, row in found.items()
            }
            negatives = sorted((p for p in found if p not in relevant), key=lambda p: -score[p])[:NEGATIVES]
            zero = [0.0] * len(columns)
            for r in relevant:
                out.extend((found.get(r, zero), found[n]) for n in negatives)
        return out

    def row(self, columns: tuple[str, ...], query: str) -> dict[int, list[float]]:
        """Each candidate's normalized score from the ``columns`` rankers (memoized: every fold asks again)."""
        key = (columns, query)
        if key not in self.memo:
            hybrid = HybridRanker([(self.features[name], 1.0) for name in columns], size=self.size)
            self.memo[key] = hybrid.features(query, self.size)
        return self.memo[key]


class Keep:
    def __init__(self, docs: Sequence[Any]) -> None:
        self.docs = list(docs)

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        return []


def round_three(
    tools: list[dict[str, Any]],
    queries: Sequence[dict[str, Any]],
    evaluate: Callable[[Callable[[str], list[str]], Sequence[dict[str, Any]]], Rows],
    models: Sequence[str],
) -> dict[str, Any]:
    """Every round-three family's cross-validated estimate, the multi-step set's scores, and the fits."""
    bench = Bench(tools, evaluate)
    extra = multistep()
    cv: dict[str, Any] = {}
    held: dict[str, dict[str, Any]] = {}
    dev: dict[str, dict[str, float]] = {}

    # 1. Server ranker and step splitting, stdlib: a grid, each point fixed before measuring.
    grid: dict[str, Rows] = {}
    for split_name, split in SPLITS.items():
        for share in SERVER_GRID:
            label = f"server={share},split={split_name}"
            index = bench.index({BM25F: 1.0 - share, SERVER: share}, split, 0.0)
            grid[label] = bench.rows(index, queries)
            held[label] = bench.rows(index, extra)
    cv["stdlib: server share (whole requests)"] = cross_validate(
        {k: v for k, v in grid.items() if k.endswith("split=whole")}, queries
    )
    cv["stdlib: step splitting (no server)"] = cross_validate(
        {k: v for k, v in grid.items() if k.startswith("server=0.0,")}, queries
    )
    cv["stdlib: both grids"] = cross_validate(grid, queries)
    for split_label in SPLITS:
        dev[f"stdlib, split={split_label}"] = by_kind(grid[f"server=0.0,split={split_label}"], queries)
    split_name = majority(cv["stdlib: step splitting (no server)"]["picks"], "split=", "whole")
    split = SPLITS[split_name]

    # 2. The fitted fusion, stdlib: BM25F and the server ranker, with the split chosen above.
    fits: dict[tuple[str, ...], dict[str, float]] = {}
    base_rows = grid[f"server=0.0,split={split_name}"]
    cv["stdlib: fitted (bm25f, server)"], fits[()] = fitted(
        bench, queries, [BM25F, SERVER], {BM25F: 1.0}, split, 0.0, base_rows
    )
    held["fitted stdlib"] = bench.rows(bench.index(fits[()], split, 0.0), extra)
    baseline = dict.fromkeys(held, "server=0.0,split=whole")

    # 3. With each installed embedding model: the shipped convex weights against the fitted ones.
    from lazymcp.search.semantic import EXTRAS, FLOOR, FUSION_WEIGHTS

    rankers = embedders(bench, models)
    bench.features |= rankers
    for model in rankers:
        shipped = FUSION_WEIGHTS.get((model,)) or {BM25F: 0.5, model: 0.5}
        shipped = {k: v for k, v in shipped.items() if k != SERVER}  # the previous round's: no server ranker
        for split_label, chosen in SPLITS.items():
            label = f"{model} shipped, split={split_label}"
            index = bench.index(shipped, chosen, FLOOR)
            grid[label] = bench.rows(index, queries)
            held[label] = bench.rows(index, extra)
        cv[f"{model}: server share (whole requests)"] = cross_validate(
            {f"server={share}": server_rows(bench, queries, shipped, share, FLOOR) for share in SERVER_GRID}, queries
        )
        for split_label in SPLITS:
            dev[f"{model}, split={split_label}"] = by_kind(grid[f"{model} shipped, split={split_label}"], queries)
        cv[f"{model}: step splitting"] = cross_validate(
            {f"split={s}": grid[f"{model} shipped, split={s}"] for s in SPLITS}, queries
        )
        split_name = majority(cv[f"{model}: step splitting"]["picks"], "split=", "whole")
        split = SPLITS[split_name]
        base = grid[f"{model} shipped, split={split_name}"]
        key = f"{model}: fitted (bm25f, {model})"
        cv[key], _ = fitted(bench, queries, [BM25F, model], shipped, split, FLOOR, base)
        key = f"{model}: fitted (bm25f, server, {model})"
        cv[key], fits[(model,)] = fitted(bench, queries, [BM25F, SERVER, model], shipped, split, FLOOR, base)
        held[f"fitted {model}"] = bench.rows(bench.index(fits[(model,)], split, FLOOR), extra)
        baseline |= {label: f"{model} shipped, split=whole" for label in held if label not in baseline}

    # 4. BM25F's share beside each model, and beside all of them, against the shipped share.
    sets = [(model,) for model in rankers] + ([tuple(m for m in EXTRAS if m in rankers)] if len(rankers) > 1 else [])
    for names in sets:
        share = FUSION_WEIGHTS.get(names, {}).get(BM25F, 0.5)
        cv[f"{' + '.join(names)}: BM25F share (shipped {share:g} first)"] = cross_validate(
            share_grid(bench, queries, names, share, FLOOR), queries
        )
    # 5. The same shares on the single-step requests alone (every kind but ``multi``): the bars for
    # single-tool requests are judged there.
    single = [q for q in queries if q["kind"] != "multi"]
    cv[f"stdlib: server share, single-step requests ({len(single)})"] = cross_validate(
        {f"server={share}": server_rows(bench, single, {BM25F: 1.0}, share, 0.0) for share in SERVER_GRID}, single
    )
    for names in sets:
        share = FUSION_WEIGHTS.get(names, {}).get(BM25F, 0.5)
        cv[f"{' + '.join(names)}: BM25F share, single-step requests ({len(single)})"] = cross_validate(
            share_grid(bench, single, names, share, FLOOR), single
        )
    scored = {label: summary(rows, held[baseline[label]], extra) for label, rows in held.items()}
    return {"cv": cv, "multistep": scored, "dev_by_kind": dev, "fits": fits}


def server_rows(
    bench: Bench, queries: Sequence[dict[str, Any]], shipped: dict[str, float], share: float, floor: float
) -> Rows:
    """The shipped weights scaled to leave ``share`` to the server ranker, whole requests."""
    weights = {name: w * (1.0 - share) for name, w in shipped.items()} | {SERVER: share}
    return bench.rows(bench.index(weights, SPLITS["whole"], floor), queries)


def share_grid(
    bench: Bench, queries: Sequence[dict[str, Any]], models: Sequence[str], shipped: float, floor: float
) -> dict[str, Rows]:
    """Each share of ``SHARES`` for BM25F (the rest split evenly among ``models``), ``shipped`` first."""
    order = [shipped, *(s for s in SHARES if abs(s - shipped) > 1e-9)]
    return {
        f"bm25f={s:g}": bench.rows(
            bench.index({BM25F: s} | {m: (1.0 - s) / len(models) for m in models}, SPLITS["whole"], floor), queries
        )
        for s in order
    }


def by_kind(rows: Rows, queries: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Recall@5 on the whole dev set by kind, and on every kind but ``multi`` (the single-step requests)."""
    out: dict[str, list[float]] = {}
    for row, q in zip(rows, queries, strict=True):
        out.setdefault(q["kind"], []).append(row["recall@5"])
        if q["kind"] != "multi":
            out.setdefault("single-step", []).append(row["recall@5"])
    return {kind: sum(v) / len(v) for kind, v in out.items()}


def majority(picks: dict[str, int], key: str, default: str) -> str:
    """The value of ``key`` in the most-picked label (``server=0.1,split=whole`` → ``whole``)."""
    if not picks:
        return default
    label = max(picks, key=lambda name: picks[name])
    return label.split(key, 1)[1].split(",")[0]


def fitted(
    bench: Bench,
    queries: Sequence[dict[str, Any]],
    names: list[str],
    base: dict[str, float],
    split: tuple[Any, Any],
    floor: float,
    baseline: Rows,
) -> tuple[dict[str, Any], dict[str, float]]:
    """The cross-validated estimate of a fit over ``names`` (refitted inside each fold), and the whole-set fit."""

    def model(train: list[int]) -> tuple[Rows, dict[str, float]]:
        weights = dict(named(names, fit(bench.pairs(names, queries, train, base))))
        return bench.rows(bench.index(weights, split, floor), queries), weights

    estimate = cross_validate_fitted(model, baseline, queries)
    return estimate, model(list(range(len(queries))))[1]


def embedders(bench: Bench, models: Sequence[str]) -> dict[str, Ranker]:
    try:
        from lazymcp.search.semantic import EmbeddingCache, EmbeddingRanker
    except ImportError as exc:
        print(f"skipping the embedding models: {exc}", file=sys.stderr)
        return {}
    found: dict[str, Ranker] = {}
    cache = EmbeddingCache()
    for model, encoder in encoders(models).items():
        found[model] = EmbeddingRanker(bench.docs, QueryMemo(encoder), cache)
    return found


def summary(rows: Rows, base: Rows, queries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means over the multi-step set, and Recall@5's gain over ``base`` fold by fold (the same 5 × 4 folds)."""
    n = len(rows)
    gains: list[float] = []
    wins = [0, 0, 0]
    for repeat in range(4):
        for held in folds(queries, 5, seed=repeat):
            gain = sum(rows[i]["recall@5"] - base[i]["recall@5"] for i in held) / len(held)
            gains.append(gain)
            wins[0 if gain > 1e-9 else 1 if gain > -1e-9 else 2] += 1
    return {m: sum(r[m] for r in rows) / n for m in ("recall@5", "mrr", "hit@5")} | {
        "all@5": sum(1.0 for r in rows if r["recall@5"] >= 1.0) / n,
        "gain": statistics.fmean(gains),
        "gain_sd": statistics.stdev(gains),
        "wins_ties_losses": wins,
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        "| change (family) | Recall@5 | MRR | Hit@5 direct | amb.-server | multi | foreign | vocab |"
        " Δ objective vs baseline | folds won / tied / lost | picks or fitted weights |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for family, r in result["cv"].items():
        kinds = [
            f"{r['hit@5_by_kind'].get(k, 0):.3f}" for k in ("direct", "ambiguous-server", "multi", "foreign", "vocab")
        ]
        if r.get("models"):
            chosen = "; ".join(
                f"{n} {min(m[n] for m in r['models']):.2f}–{max(m[n] for m in r['models']):.2f}" for n in r["models"][0]
            )
        else:
            chosen = ", ".join(f"{k} ×{n}" for k, n in sorted(r["picks"].items(), key=lambda x: -x[1]))
        won = "/".join(str(x) for x in r["wins_ties_losses"])
        lines.append(
            f"| {family} | {r['recall@5']:.3f} ± {r['recall@5_sd']:.3f} | {r['mrr']:.3f} ± {r['mrr_sd']:.3f} | "
            + " | ".join(kinds)
            + f" | {r['gain']:+.3f} ± {r['gain_sd']:.3f} | {won} | {chosen} |"
        )
    lines += [
        "",
        "| method on bench/multistep.json (26 requests) | Recall@5 | all steps in top 5 | Hit@5 | MRR |"
        " Δ Recall@5 vs whole, by fold | folds won / tied / lost |",
    ]
    lines.append("|---|---:|---:|---:|---:|---|---|")
    for label, s in result["multistep"].items():
        won = "/".join(str(x) for x in s["wins_ties_losses"])
        lines.append(
            f"| {label} | {s['recall@5']:.3f} | {s['all@5']:.3f} | {s['hit@5']:.3f} | {s['mrr']:.3f} |"
            f" {s['gain']:+.3f} ± {s['gain_sd']:.3f} | {won} |"
        )
    lines += [
        "",
        "| Recall@5 on the whole dev set (fixed methods, nothing chosen) | single-step | " + " | ".join(KINDS) + " |",
    ]
    lines.append("|---|---:|" + "---:|" * len(KINDS))
    for label, kinds in result["dev_by_kind"].items():
        cells = [f"{kinds.get(k, 0):.3f}" for k in ("single-step", *KINDS)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "weights fitted on the whole dev set (to paste):"]
    for models, weights in result["fits"].items():
        lines.append(f"  {models!r}: {weights!r},")
    return "\n".join(lines)
