"""Search quality and speed on the authored dev set (../shared/evals): `python -m bench.search [--json FILE]`.

Methods, side by side:

- ``okapi``: plain Okapi BM25 (k1 = 1.2, b = 0.75) over each tool's name, description and top-level
  parameter names and descriptions, split at camelCase boundaries, lowercased and split on
  non-alphanumerics (``_`` too), no stemming, no stopwords: a reimplementation of the dev set's
  reference point (it reproduces its published figures exactly).
- ``bm25f``: the stdlib ranker (``lazymcp.search.index.BM25Ranker``) through ``ToolIndex.search``, plus a few
  variants of its settings fixed before measuring (``bm25f:k1=2``, ...).
- ``embed:<model>``: an ``EmbeddingRanker`` alone (skipped with a message when its extra is absent).
- ``hybrid:<model>@w``: BM25F fused with the embedding ranker, BM25F's share ``w``
  (``lazymcp.search.semantic.hybrid(weight=w)``); ``hybrid:all@w`` fuses every model installed.

Honest estimates: every figure is the mean over queries, and ``cross_validate`` picks among the
variants of a family (stdlib, or semantic) inside training folds only, then scores the pick on the
held-out fold (5 folds stratified by kind, 4 repeats with different shuffles): the folds' mean and
spread estimate what the chosen configuration scores on queries it was not chosen on.

Metrics follow ../shared/evals/README.md: 20 names requested per query; Recall@1/5/10, Hit@5, MRR
(first relevant within the top 20), Hit@5 by kind, and the time of each query (median, p95).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.search_methods import (
    KINDS,
    METRICS,
    OkapiBM25,
    QueryMemo,
    cross_validate,
    encoders,
    fixed_folds,
    ranker_search,
)
from lazymcp.search.fusion import BM25F
from lazymcp.search.index import BM25Ranker, FieldWeights, RankerFactory, ToolIndex

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LAZYMCP_SHARED", ROOT.parent / "shared"))
QUERIES = SHARED / "evals" / "authored" / "queries.json"
CATALOG = SHARED / "catalogs" / "combined.json"
DEPTH = 20
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
"""BM25F's share in the hybrid, the grid cross-validation chooses from."""


def _bm25_variant(k1: float, b_description: float, param_descriptions: float) -> RankerFactory:
    weights = FieldWeights(b_description=b_description, param_descriptions=param_descriptions)
    return lambda docs: BM25Ranker(docs, weights, k1=k1)


BM25_VARIANTS: dict[str, RankerFactory] = {
    "bm25f" if (k1, b, p) == (2.0, 0.5, 0.3) else f"bm25f:k1={k1},b_desc={b},param_desc={p}": _bm25_variant(k1, b, p)
    for k1 in (2.0, 1.2)
    for b in (0.5, 0.75)
    for p in (0.3, 0.0)
}
"""A small grid fixed before measuring (k1, the description's length normalization, the weight of parameter
descriptions); cross-validation picks among them. The shipped default is the first."""

Search = Callable[[str], list[str]]
PARAMETERS = os.environ.get("BENCH_SEARCH_PARAMETERS") == "1"
"""Also embed each tool's text with its parameter names (one more catalog embedding per model)."""
NAMES = os.environ.get("BENCH_SEARCH_NAMES") == "1"
"""Also embed each tool's name alone, fused as one more ranker (the same query vector, one more product)."""


def name_text(document: Any) -> str:
    return document.name.replace("__", " ").replace("_", " ").replace("-", " ")


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    if not QUERIES.exists() or not CATALOG.exists():
        return None
    tools: list[dict[str, Any]] = json.loads(CATALOG.read_text())["tools"]
    queries: list[dict[str, Any]] = json.loads(QUERIES.read_text())
    return tools, queries


def per_query(search: Search, queries: Sequence[dict[str, Any]], catalog: set[str]) -> dict[str, Any]:
    """Each query's metrics and time under one method."""
    rows: list[dict[str, float]] = []
    times: list[float] = []
    ranked_all: dict[str, list[str]] = {}
    for q in queries:
        start = time.perf_counter()
        ranked = search(q["query"])
        times.append(time.perf_counter() - start)
        names = list(dict.fromkeys(n for n in ranked if n in catalog))[:DEPTH]
        ranked_all[q["id"]] = names
        relevant = set(q["relevant"])
        first = next((i for i, n in enumerate(names, 1) if n in relevant), None)
        rows.append(
            {
                "recall@1": len(relevant & set(names[:1])) / len(relevant),
                "recall@5": len(relevant & set(names[:5])) / len(relevant),
                "recall@10": len(relevant & set(names[:10])) / len(relevant),
                "hit@5": 1.0 if relevant & set(names[:5]) else 0.0,
                "mrr": 1.0 / first if first else 0.0,
            }
        )
    return {"rows": rows, "times": times, "ranked": ranked_all}


def summarize(found: dict[str, Any], queries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    rows: list[dict[str, float]] = found["rows"]
    n = len(rows)
    by_kind: dict[str, list[float]] = {}
    for q, row in zip(queries, rows, strict=True):
        by_kind.setdefault(q["kind"], []).append(row["hit@5"])
    times = sorted(found["times"])
    return {
        **{m: sum(r[m] for r in rows) / n for m in METRICS},
        "hit@5_by_kind": {kind: sum(v) / len(v) for kind, v in sorted(by_kind.items())},
        "ms_median": statistics.median(times) * 1000,
        "ms_p95": times[min(n - 1, int(0.95 * n + 0.999) - 1)] * 1000,
    }


def index_search(index: ToolIndex) -> Search:
    return lambda query: index.search(query, DEPTH).names


def timed(build: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    built = build()
    return built, time.perf_counter() - start


def semantic_methods(
    tools: list[dict[str, Any]], queries: Sequence[dict[str, Any]], catalog: set[str], models: Sequence[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The embedding rankers alone and fused at every weight of ``WEIGHTS``, with query embeddings memoized."""
    try:
        from lazymcp.search.semantic import (
            E5_MODEL,
            FLOOR,
            FUSION_WEIGHTS,
            EmbeddingCache,
            EmbeddingRanker,
            HybridRanker,
            embedding_text,
        )
    except ImportError as exc:  # numpy absent
        print(f"skipping the semantic methods: {exc}", file=sys.stderr)
        return {}, {}
    documents = ToolIndex.build(tools, ranker=lambda docs: DocumentsOf(docs)).ranker
    assert isinstance(documents, DocumentsOf)
    cache = EmbeddingCache()
    found: dict[str, dict[str, Any]] = {}
    costs: dict[str, Any] = {}
    embedders: dict[str, EmbeddingRanker] = {}
    for model, encoder in encoders(models).items():
        embed, seconds = timed(lambda encoder=encoder: EmbeddingRanker(documents.docs, QueryMemo(encoder), cache))
        costs[model] = {"build_s": seconds, "embedded": cache.computed}
        raw = EmbeddingRanker(documents.docs, encoder, cache)  # unmemoized, for the per-query time
        costs[model] |= summarize(per_query(ranker_search(raw, documents.names, DEPTH), queries, catalog), queries)
        embedders[model] = embed
        found[f"embed:{model}"] = per_query(ranker_search(embed, documents.names, DEPTH), queries, catalog)
        if PARAMETERS:
            text = functools.partial(embedding_text, with_parameters=True)
            memo = embed.encoder
            embedders[f"{model}+params"] = EmbeddingRanker(documents.docs, memo, cache, text=text)
        if NAMES:
            names_only = EmbeddingRanker(documents.docs, embed.encoder, cache, text=name_text)
            embedders[f"{model}&names"] = names_only
    groups = {label: [embed] for label, embed in embedders.items() if "&" not in label}
    for label, names_only in embedders.items():
        if "&" in label:
            groups[label] = [embedders[label.split("&")[0]], names_only]
    base = [embed for label, embed in embedders.items() if "+" not in label and "&" not in label]
    if len(base) > 1:
        groups["all"] = base
    if NAMES and len(base) > 1:
        groups["all&names"] = [embed for label, embed in embedders.items() if "+" not in label]
    bm25 = BM25Ranker(documents.docs)
    for label, semantic in groups.items():
        for weight in WEIGHTS:
            rankers = [(bm25, weight), *((r, (1 - weight) / len(semantic)) for r in semantic)]
            fused = HybridRanker(rankers, size=len(tools), floor=FLOOR)
            index = ToolIndex.build(tools, ranker=lambda _docs, fused=fused: fused)
            found[f"hybrid:{label}@{weight}"] = per_query(index_search(index), queries, catalog)
    if E5_MODEL in embedders:  # the floor's cost, at the default weight
        share = FUSION_WEIGHTS[(E5_MODEL,)][BM25F]
        rankers = [(bm25, share), (embedders[E5_MODEL], 1 - share)]
        index = ToolIndex.build(tools, ranker=lambda _docs: HybridRanker(rankers, size=len(tools)))
        found[f"no-floor:{E5_MODEL}@{share}"] = per_query(index_search(index), queries, catalog)
    return found, costs


class DocumentsOf:
    """A stand-in ranker that only keeps the documents ``ToolIndex.build`` made (to share them)."""

    def __init__(self, docs: Sequence[Any]) -> None:
        self.docs = list(docs)
        self.names = [d.name for d in self.docs]

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        return []


START_SCRIPT = """
import json, sys, time, resource
start = time.perf_counter()
from lazymcp.search.index import ToolIndex, default_ranker, describe_ranker
tools = json.load(open(sys.argv[1]))["tools"]
before = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
imported = time.perf_counter() - start
start = time.perf_counter()
index = ToolIndex.build(tools, ranker=default_ranker())
built = time.perf_counter() - start
index.search("warm up", 5)
times = []
for q in json.load(open(sys.argv[2])):
    t = time.perf_counter(); index.search(q["query"], 20); times.append(time.perf_counter() - t)
times.sort()
print(json.dumps({"ranker": describe_ranker(), "import_and_load_s": imported, "index_s": built,
                  "ms_median": times[len(times) // 2] * 1000,
                  "ms_p95": times[int(0.95 * len(times))] * 1000,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_mb": int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024,
                  "rss_before_index_mb": before}))
"""


def start_cost(ranker: str) -> dict[str, Any]:
    """A fresh process: import lazymcp (the SDK with it) and read the catalog, then build the default index
    (``index_s``: what search adds to a server's start; the cache is warm), then run every query."""
    env = os.environ | {"LAZYMCP_RANKER": ranker}
    out = subprocess.run(
        [sys.executable, "-c", START_SCRIPT, str(CATALOG), str(QUERIES)], env=env, capture_output=True, text=True
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-300:]}
    return json.loads(out.stdout)


def run(models: Sequence[str], costs: bool = True) -> dict[str, Any] | None:
    loaded = load()
    if loaded is None:
        return None
    tools, queries = loaded
    names = [tool["name"] for tool in tools]
    catalog = set(names)
    found: dict[str, dict[str, Any]] = {}
    found["okapi"] = per_query(ranker_search(OkapiBM25(tools), names, DEPTH), queries, catalog)
    for label, factory in BM25_VARIANTS.items():
        found[label] = per_query(index_search(ToolIndex.build(tools, ranker=factory)), queries, catalog)
    semantic, model_costs = semantic_methods(tools, queries, catalog, models)
    found |= semantic
    methods = {label: summarize(result, queries) for label, result in found.items()}
    for label, result in found.items():
        methods[label] |= fixed_folds(result["rows"], queries)
    families = {"stdlib (cv)": [label for label in found if label.startswith("bm25f")]}
    for model in models:  # one family per install: what each extra alone can be tuned to
        labels = [label for label in found if label.startswith(tuple(f"hybrid:{model}{c}" for c in "@+&"))]
        if labels:
            families[f"{model} (cv)"] = labels
    if any(label.startswith("hybrid:all") for label in found):  # "all@" and "all&names@"
        families["all (cv)"] = [label for label in found if label.startswith("hybrid:all")]
    cv = {
        family: cross_validate({label: found[label]["rows"] for label in labels}, queries)
        for family, labels in families.items()
    }
    result: dict[str, Any] = {"methods": methods, "cv": cv, "model_costs": model_costs}
    if costs:
        result["start"] = {"bm25": start_cost("bm25"), "auto": start_cost("auto")}
    result["ranked"] = {label: r["ranked"] for label, r in found.items()}
    return result


def table(methods: dict[str, Any]) -> str:
    labels = list(methods)
    rows = [
        ("Recall@1", "recall@1"),
        ("Recall@5", "recall@5"),
        ("Recall@10", "recall@10"),
        ("Hit@5", "hit@5"),
        ("MRR", "mrr"),
        *((f"Hit@5 {kind}", kind) for kind in KINDS),
        ("ms/query median", "ms_median"),
    ]
    lines = ["| metric | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for name, key in rows:
        cells: list[str] = []
        for label in labels:
            r = methods[label]
            value = r["hit@5_by_kind"].get(key) if key in KINDS else r.get(key)
            digits = 2 if key.startswith("ms") else 3
            cells.append("" if value is None else f"{value:.{digits}f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cv_table(cv: dict[str, Any]) -> str:
    lines = [
        "| family | Recall@5 | MRR | Recall@1 | Hit@5 | " + " | ".join(f"Hit@5 {k}" for k in KINDS) + " | picks |",
        "|---|---|---|---|---|" + "---:|" * len(KINDS) + "---|",
    ]
    for family, r in cv.items():
        cells = [f"{r[m]:.3f} ± {r[f'{m}_sd']:.3f}" for m in ("recall@5", "mrr", "recall@1", "hit@5")]
        kinds = [f"{r['hit@5_by_kind'].get(k, 0):.3f}" for k in KINDS]
        picks = ", ".join(f"{label} ×{n}" for label, n in sorted(r["picks"].items(), key=lambda x: -x[1]))
        lines.append(f"| {family} | " + " | ".join(cells + kinds) + f" | {picks} |")
    return "\n".join(lines)


def section(cfg: Any, results: dict[str, Any]) -> dict[str, Any]:
    """The harness's search section: the dev-set figures, with whichever embedding extras are installed."""
    from lazymcp.search.semantic import E5_MODEL, MINILM_MODEL

    found = run(() if cfg.quick else (E5_MODEL, MINILM_MODEL), costs=not cfg.quick)
    if found is None:
        return {"status": "skipped", "reason": "../shared/evals is not here"}
    return {"status": "ok", "methods": found["methods"], "cv": found["cv"]}


def render_section(section: dict[str, Any]) -> str:
    return (
        "search (150-query dev set over the 954 real tools)\n"
        + table(section["methods"])
        + "\n\ncross-validated (5 folds x 4 repeats, mean ± sd of the held-out folds)\n"
        + cv_table(section["cv"])
    )


def main(argv: Sequence[str] | None = None) -> int:
    from lazymcp.search.semantic import EXTRAS

    parser = argparse.ArgumentParser(prog="python -m bench.search", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write every figure (and each query's ranking) here")
    parser.add_argument(
        "--model",
        action="append",
        help=f"an embedding model to add (repeatable; default: {', '.join(EXTRAS)}, each skipped when its"
        " extra is absent)",
    )
    parser.add_argument("--no-embeddings", action="store_true", help="BM25 methods only")
    parser.add_argument("--no-start", action="store_true", help="skip the fresh-process start and memory runs")
    parser.add_argument("--start-only", action="store_true", help="only the fresh-process start and memory runs")
    parser.add_argument(
        "--fit",
        action="store_true",
        help="round three only: the server ranker, step splitting, the fitted fusion and BM25F's share beside"
        " the --model encoders, cross-validated, and the weights to ship",
    )
    args = parser.parse_args(argv)
    if args.start_only:
        print(json.dumps({ranker: start_cost(ranker) for ranker in ("bm25", "auto")}, indent=1))
        return 0
    models: list[str] = [] if args.no_embeddings else args.model or list(EXTRAS)
    if args.fit:
        return fit_main(models, args.json)
    results = run(models, costs=not args.no_start)
    if results is None:
        print(f"skipped: the dev set is not here ({QUERIES} or {CATALOG} is absent)")
        return 0
    print(table(results["methods"]))
    print()
    print(cv_table(results["cv"]))
    print()
    print(json.dumps({"model_costs": results["model_costs"], "start": results.get("start")}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    return 0


def fit_main(models: Sequence[str], out: Path | None) -> int:
    from bench.search_fit import render, round_three

    loaded = load()
    if loaded is None:
        print(f"skipped: the dev set is not here ({QUERIES} or {CATALOG} is absent)")
        return 0
    tools, queries = loaded
    catalog = {tool["name"] for tool in tools}
    result = round_three(tools, queries, lambda search, qs: per_query(search, qs, catalog)["rows"], models)
    print(render(result))
    if out:
        result["fits"] = {" + ".join(models) or "stdlib": weights for models, weights in result["fits"].items()}
        out.write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
