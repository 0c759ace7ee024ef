"""Search quality and speed on the authored dev set (../shared/evals): `python -m bench.search [--json FILE]`.

Methods, side by side:

- ``okapi``: plain Okapi BM25 (k1 = 1.2, b = 0.75) over each tool's name, description and top-level
  parameter names and descriptions, split at camelCase boundaries, lowercased and split on
  non-alphanumerics (``_`` too), no stemming, no stopwords: a reimplementation of the dev set's
  reference point (it reproduces its published figures exactly).
- ``bm25f``: lazymcp's default ranker (``lazymcp.search.BM25Ranker``) through ``ToolIndex.search``.
- ``embed:<model>``: the optional ``EmbeddingRanker`` alone (needs ``lazymcp[embeddings]``; skipped
  with a message when it is absent).
- ``rrf:<model>``: BM25F and the embedding ranker by reciprocal rank fusion (c = 60), for comparison.
- ``hybrid:<model>``: ``HybridRanker``, the convex combination 0.5 * BM25F + 0.5 * embedding of
  min-max-normalized scores, through ``ToolIndex.search`` (what ``lazymcp.search.hybrid(model)`` builds).
- ``hybrid:all``: BM25F and every embedding model available, equal weights (``hybrid(*models)``).

Metrics follow ../shared/evals/README.md: 20 names requested per query; Recall@1/5/10, Hit@5, MRR
(first relevant within the top 20), Hit@5 by kind, and the time of each query (median, p95).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lazymcp.search import (
    EMBEDDING_EXTRAS,
    EMBEDDING_MODEL,
    MINILM_MODEL,
    EmbeddingRanker,
    HybridRanker,
    Ranker,
    ToolIndex,
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LAZYMCP_SHARED", ROOT.parent / "shared"))
QUERIES = SHARED / "evals" / "authored" / "queries.json"
CATALOG = SHARED / "catalogs" / "combined.json"
DEPTH = 20
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
KINDS = ("direct", "ambiguous-server", "multi", "foreign", "vocab")

Search = Callable[[str], list[str]]


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


class RRF:
    """Reciprocal rank fusion (Cormack et al. 2009, c = 60) of rankers, for comparison with ``HybridRanker``."""

    def __init__(self, rankers: Sequence[Ranker], c: float = 60.0, depth: int = 100) -> None:
        self.rankers = rankers
        self.c = c
        self.depth = depth

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        fused: dict[int, float] = {}
        for ranker in self.rankers:
            for rank, (pos, _) in enumerate(ranker.rank(query, self.depth), start=1):
                fused[pos] = fused.get(pos, 0.0) + 1.0 / (self.c + rank)
        return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    if not QUERIES.exists() or not CATALOG.exists():
        return None
    tools: list[dict[str, Any]] = json.loads(CATALOG.read_text())["tools"]
    queries: list[dict[str, Any]] = json.loads(QUERIES.read_text())
    return tools, queries


def evaluate(search: Search, queries: Sequence[dict[str, Any]], catalog: set[str]) -> dict[str, Any]:
    """Every metric of the dev set's README for one method, plus per-query time."""
    recall = {1: 0.0, 5: 0.0, 10: 0.0}
    hit5 = 0.0
    mrr = 0.0
    by_kind: dict[str, list[float]] = {}
    times: list[float] = []
    per_query: dict[str, list[str]] = {}
    for q in queries:
        start = time.perf_counter()
        ranked = search(q["query"])
        times.append(time.perf_counter() - start)
        names = list(dict.fromkeys(n for n in ranked if n in catalog))[:DEPTH]
        per_query[q["id"]] = names
        relevant = set(q["relevant"])
        for k in recall:
            recall[k] += len(relevant & set(names[:k])) / len(relevant)
        hit = 1.0 if relevant & set(names[:5]) else 0.0
        hit5 += hit
        by_kind.setdefault(q["kind"], []).append(hit)
        first = next((i for i, n in enumerate(names, 1) if n in relevant), None)
        mrr += 1.0 / first if first else 0.0
    n = len(queries)
    times.sort()
    return {
        "recall@1": recall[1] / n,
        "recall@5": recall[5] / n,
        "recall@10": recall[10] / n,
        "hit@5": hit5 / n,
        "mrr": mrr / n,
        "hit@5_by_kind": {kind: sum(v) / len(v) for kind, v in sorted(by_kind.items())},
        "ms_median": statistics.median(times) * 1000,
        "ms_p95": times[min(len(times) - 1, math.ceil(0.95 * len(times)) - 1)] * 1000,
        "ranked": per_query,
    }


def long_query_ms(search: Search, tools: Sequence[dict[str, Any]], repeat: int = 20) -> float:
    """Median time of a worst-case query: 2,000 characters of tool descriptions (many distinct terms)."""
    text = " ".join(str(tool.get("description") or "") for tool in tools[::7])[:2000]
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        search(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def ranker_search(ranker: Ranker, names: Sequence[str]) -> Search:
    return lambda query: [names[pos] for pos, _ in ranker.rank(query, DEPTH)]


def index_search(index: ToolIndex) -> Search:
    return lambda query: index.search(query, DEPTH).names


def timed(build: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    built = build()
    return built, time.perf_counter() - start


def run(models: Sequence[str]) -> dict[str, Any] | None:
    loaded = load()
    if loaded is None:
        return None
    tools, queries = loaded
    names = [tool["name"] for tool in tools]
    catalog = set(names)
    results: dict[str, Any] = {}

    okapi, seconds = timed(lambda: OkapiBM25(tools))
    results["okapi"] = evaluate(ranker_search(okapi, names), queries, catalog) | {"build_s": seconds}
    results["okapi"]["ms_long_query"] = long_query_ms(ranker_search(okapi, names), tools)

    index, seconds = timed(lambda: ToolIndex.build(tools))
    results["bm25f"] = evaluate(index_search(index), queries, catalog) | {"build_s": seconds}
    results["bm25f"]["ms_long_query"] = long_query_ms(index_search(index), tools)
    bm25: Ranker = index.ranker

    embedders: dict[str, Ranker] = {}
    for model in models:
        try:
            embed, seconds = timed(lambda model=model: EmbeddingRanker(tools, model))
        except ImportError as exc:
            print(f"skipping {model}: {exc}", file=sys.stderr)
            continue
        embedders[model] = embed
        results[f"embed:{model}"] = evaluate(ranker_search(embed, names), queries, catalog) | {"build_s": seconds}
        results[f"rrf:{model}"] = evaluate(ranker_search(RRF([bm25, embed]), names), queries, catalog)
    fusions = {f"hybrid:{model}": [embed] for model, embed in embedders.items()}
    if len(embedders) > 1:
        fusions["hybrid:all"] = list(embedders.values())
    for label, semantic in fusions.items():
        rankers = [bm25, *semantic]
        weights = [(ranker, 1.0 / len(rankers)) for ranker in rankers]
        fused = ToolIndex.build(tools, ranker=lambda tools, weights=weights: HybridRanker(weights, size=len(tools)))
        results[label] = evaluate(index_search(fused), queries, catalog)
        results[label]["ms_long_query"] = long_query_ms(index_search(fused), tools, repeat=5)
    return results


def per_query(result: dict[str, Any], queries: Sequence[dict[str, Any]], metric: str) -> list[float]:
    """Each query's Recall@5 ("recall@5") or reciprocal rank ("mrr") from a method's rankings."""
    values: list[float] = []
    for q in queries:
        names = result["ranked"][q["id"]]
        relevant = set(q["relevant"])
        if metric == "recall@5":
            values.append(len(relevant & set(names[:5])) / len(relevant))
        else:
            first = next((i for i, n in enumerate(names, 1) if n in relevant), None)
            values.append(1.0 / first if first else 0.0)
    return values


def bootstrap(results: dict[str, Any], queries: Sequence[dict[str, Any]], rounds: int = 5000) -> str:
    """95% intervals (paired bootstrap over queries, fixed seed) of each method and of its gain over okapi."""
    rng = random.Random(0)
    n = len(queries)
    samples = [[rng.randrange(n) for _ in range(n)] for _ in range(rounds)]
    lines = ["| method | metric | value [95% CI] | gain over okapi [95% CI] |", "|---|---|---|---|"]
    for method in results:
        if method == "okapi":
            continue
        for metric in ("recall@5", "mrr"):
            ours = per_query(results[method], queries, metric)
            base = per_query(results["okapi"], queries, metric)
            values = sorted(sum(ours[i] for i in s) / n for s in samples)
            gains = sorted(sum(ours[i] - base[i] for i in s) / n for s in samples)
            lo, hi = int(0.025 * rounds), int(0.975 * rounds) - 1
            lines.append(
                f"| {method} | {metric} | {sum(ours) / n:.3f} [{values[lo]:.3f}, {values[hi]:.3f}] "
                f"| {(sum(ours) - sum(base)) / n:+.3f} [{gains[lo]:+.3f}, {gains[hi]:+.3f}] |"
            )
    return "\n".join(lines)


def table(results: dict[str, Any]) -> str:
    methods = list(results)
    rows = [
        ("Recall@1", "recall@1"),
        ("Recall@5", "recall@5"),
        ("Recall@10", "recall@10"),
        ("Hit@5", "hit@5"),
        ("MRR", "mrr"),
        *((f"Hit@5 {kind}", kind) for kind in KINDS),
        ("ms/query median", "ms_median"),
        ("ms/query p95", "ms_p95"),
        ("ms, one 2,000-char query", "ms_long_query"),
        ("build s", "build_s"),
    ]
    lines = ["| metric | " + " | ".join(methods) + " |", "|---|" + "---:|" * len(methods)]
    for label, key in rows:
        cells: list[str] = []
        for method in methods:
            r = results[method]
            value = r["hit@5_by_kind"].get(key) if key in KINDS else r.get(key)
            digits = 2 if key.startswith(("ms", "build")) else 3
            cells.append("" if value is None else f"{value:.{digits}f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def section(cfg: Any, results: dict[str, Any]) -> dict[str, Any]:
    """The harness's search section: the dev-set figures, with whichever embedding extras are installed."""
    found = run(() if cfg.quick else (EMBEDDING_MODEL, MINILM_MODEL))
    if found is None:
        return {"status": "skipped", "reason": "../shared/evals is not here"}
    return {"status": "ok", "methods": found}


def render_section(section: dict[str, Any]) -> str:
    return "search (150-query dev set over the 954 real tools)\n" + table(section["methods"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write every figure (and each query's ranking) here")
    parser.add_argument(
        "--model",
        action="append",
        help=f"an embedding model to add (repeatable; default: {', '.join(EMBEDDING_EXTRAS)}, each skipped when its"
        " extra is absent)",
    )
    parser.add_argument("--no-embeddings", action="store_true", help="BM25 methods only")
    parser.add_argument("--bootstrap", action="store_true", help="also print 95%% bootstrap intervals")
    args = parser.parse_args(argv)
    models: list[str] = [] if args.no_embeddings else args.model or list(EMBEDDING_EXTRAS)
    results = run(models)
    if results is None:
        print(f"skipped: the dev set is not here ({QUERIES} or {CATALOG} is absent)")
        return 0
    print(table(results))
    if args.bootstrap:
        loaded = load()
        assert loaded is not None
        print()
        print(bootstrap(results, loaded[1]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
