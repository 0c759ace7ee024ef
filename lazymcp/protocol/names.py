"""Name suggestions: the known names closest to an unknown one, from a trigram index built once.

Every "did you mean" of lazymcp (unknown tools, categories, configured names) comes from here.
"""

from __future__ import annotations

import difflib
from array import array
from collections import Counter
from collections.abc import Iterable


def suggest(name: str, known: NameIndex | Iterable[str], limit: int = 3) -> list[str]:
    """Up to ``limit`` known names close to ``name``, best first: a case-insensitive match, then difflib's."""
    index = known if isinstance(known, NameIndex) else NameIndex(known)
    return index.suggest(name, limit)


MAX_NAME = 256
"""Longer names get no suggestions: bounded work for hostile input."""
SHORTLIST = 64
"""Names compared in full by difflib, chosen by shared trigrams; a smaller catalog is compared whole."""


def _trigrams(text: str) -> set[str]:
    padded = f"  {text} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class NameIndex:
    """Known names, indexed once by trigram so a suggestion costs the same at 100 or 10,000 names.

    difflib against every name cost 104 ms per unknown name at 10,000 tools, and any client can ask
    for that; here it compares only the names that share the most trigrams with the query.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(dict.fromkeys(names))
        self._folded: dict[str, list[str]] = {}
        postings: dict[str, list[int]] = {}
        for position, known in enumerate(self.names):
            folded = known.casefold()
            self._folded.setdefault(folded, []).append(known)
            for gram in _trigrams(folded):
                postings.setdefault(gram, []).append(position)
        # as arrays: a list of positions costs twice the memory, for nothing a lookup needs
        self._postings = {gram: array("I", positions) for gram, positions in postings.items()}

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        if len(name) > MAX_NAME or not self.names:
            return []
        folded = name.casefold()
        same = self._folded.get(folded, [])
        if len(self.names) <= SHORTLIST:
            candidates = self.names
        else:
            shared: Counter[int] = Counter()
            for gram in _trigrams(folded):
                shared.update(self._postings.get(gram, ()))
            candidates = [self.names[position] for position, _ in shared.most_common(SHORTLIST)]
        close = difflib.get_close_matches(name, candidates, n=limit, cutoff=0.6)
        return list(dict.fromkeys(same + close))[:limit]


def one_edit_away(name: str, known: Iterable[str]) -> str | None:
    """The known name one edit from ``name`` (a letter added, dropped, changed, or two neighbours
    swapped: ``agrs`` for ``args``), else None; the first in sorted order when several are."""
    for candidate in sorted(known):
        if _one_edit(name, candidate):
            return candidate
    return None


def _one_edit(a: str, b: str) -> bool:
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    if len(a) == len(b):
        if a[start + 1 :] == b[start + 1 :]:
            return True  # one letter changed
        swapped = start + 1 < len(a) and a[start] == b[start + 1] and a[start + 1] == b[start]
        return swapped and a[start + 2 :] == b[start + 2 :]
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[start + 1 :] == shorter[start:]
