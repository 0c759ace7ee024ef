"""Index terms: the text normalization and tokenization that search rankers share.

Text is NFKC-normalized and casefolded, then split into runs of Unicode word characters (``_`` is a
separator too). Identifiers (tool and parameter names) are also split at camelCase boundaries and keep
their whole form; accented words also yield their unaccented form. Runs in scripts written without
spaces (Han, kana, Thai, Lao, Khmer, Myanmar) become character unigrams and bigrams. ASCII words lose
English stopwords and are indexed twice: as written and as a marked stem (``stem``), so inflections
match while the exact form counts more.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Container
from typing import Final

__all__ = ["STEM_MARK", "STOPWORDS", "normalize_name", "stem", "tokenize"]

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
    out.extend(_word_terms(word, stemming))


@functools.lru_cache(maxsize=1 << 16)
def _word_terms(word: str, stemming: bool) -> tuple[str, ...]:
    """A casefolded word's terms (memoized: a catalog repeats its words, and stemming is the costly part)."""
    if word.isascii():
        if len(word) < 2 and not word.isdigit() or word in STOPWORDS:
            return ()
        if stemming and _ASCII_ALPHA.fullmatch(word):
            return (word, STEM_MARK + stem(word))
        return (word,)
    folded = _fold_accents(word)
    if folded != word and folded.isascii():
        return (word, *_word_terms(folded, stemming))  # "créer" also yields "creer": users often drop accents
    return (word,)


def _fold_accents(word: str) -> str:
    """The word without combining marks ("é" -> "e", "ü" -> "u"); other characters are kept."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


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
    if not identifier and known is None:  # the common case, prose: no camelCase to look at
        for run, word in _TOKEN.findall(text.casefold()):
            if run:
                _emit_nospace(run, out)
            else:
                out.extend(_word_terms(word, stemming))
        return out
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
