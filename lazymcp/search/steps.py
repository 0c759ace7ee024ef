"""Multi-step requests: split a request into its steps, and merge the steps' rankings so each step is covered.

Theory of operation. "Find the cheapest flight and add it to my calendar" needs two tools; ranked as one
text, its top 5 fills with siblings of whichever step has the rarer words. ``split`` cuts a request at
clause boundaries: sentence and clause punctuation in any script, and a small fixed list of connectives
(coordinating conjunctions and sequencing adverbs: "and", "then", "afterwards", "puis", "después",
"danach", "然后", ...), the words languages use to chain actions. A piece too short to be a step (fewer
than ``MIN_TERMS`` index terms: "if it's fine", "approve") joins the piece before it, so a request
that is one step stays whole. ``merge`` then takes the steps' rankings in turn, best first (round-robin),
skipping tools already taken, and fills up from the whole request's ranking: each step's best tool is in
the top ``k`` whenever there are at most ``k`` steps. A step alone loses the request's context ("merge
it" no longer says which server): ``in_context`` ranks each step among the whole request's best
candidates, by the step's score plus the whole request's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from lazymcp.search.terms import tokenize

MIN_TERMS: Final = 2
"""A piece with fewer index terms than this is no step of its own: it joins the piece before it."""
MAX_STEPS: Final = 4
"""At most this many steps are ranked (each costs one ranking; later pieces join the last step)."""

_SEQUENCERS: Final = (
    # English, French, Spanish, Portuguese, Italian, German, Dutch: sequencing adverbs and phrases
    "and then|then|afterwards|after that|next|finally|also|"
    "et puis|puis|ensuite|après ça|enfin|"
    "y luego|luego|después|y después|entonces|"
    "e depois|depois|em seguida|"
    "e poi|poi|quindi|"
    "und dann|dann|danach|anschließend|außerdem|"
    "daarna|vervolgens"
)
_CONJUNCTIONS: Final = "and|et|y|e|und|и|и потом|потом|затем"
"""Coordinating conjunctions (with Russian's sequencers). Not Dutch "en": it is "in" in Spanish and French."""
_NOSPACE_CONNECTIVES: Final = "然后|之后|并且|再|それから|その後|次に|그리고|다음에"
"""Chinese, Japanese and Korean connectives: matched inside words (these scripts do not space words)."""
_PUNCTUATION: Final = r"[;；，、。！？]|[,.!?](?=\s|$)"
"""Sentence and clause ends (a colon introduces an elaboration of one step, not a new one; "1,000" and
"README.md" do not end anything)."""


def _pattern(conjunctions: bool) -> re.Pattern[str]:
    words = _SEQUENCERS + ("|" + _CONJUNCTIONS if conjunctions else "")
    return re.compile(rf"{_PUNCTUATION}|(?<!\w)(?:{words})(?!\w)|{_NOSPACE_CONNECTIVES}", re.IGNORECASE)


_SPLITTERS: Final = {True: _pattern(True), False: _pattern(False)}


def split(query: str, *, conjunctions: bool = True) -> list[str]:
    """The steps of a request, in order; ``[query]`` when it is one step.

    ``conjunctions`` false splits at punctuation and sequencing words only, not at a bare "and".
    """
    pieces = [piece.strip() for piece in _SPLITTERS[conjunctions].split(query)]
    steps: list[str] = []
    pending = ""
    for piece in pieces:
        if not piece:
            continue
        if len(tokenize(piece, stemming=False)) < MIN_TERMS:
            if steps:
                steps[-1] = f"{steps[-1]} {piece}"
            else:
                pending = f"{pending} {piece}".strip()
            continue
        if pending:
            piece, pending = f"{pending} {piece}", ""
        steps.append(piece)
    if len(steps) > MAX_STEPS:
        steps[MAX_STEPS - 1 :] = [" ".join(steps[MAX_STEPS - 1 :])]
    return steps if len(steps) > 1 else [query]


def merge(
    steps: Sequence[Sequence[tuple[int, float]]], whole: Sequence[tuple[int, float]], limit: int
) -> list[tuple[int, float]]:
    """Round-robin over the steps' rankings, best first, then the whole request's ranking; each tool once.

    Scores are each tool's score in the ranking it came from, relative to that ranking's best, made
    non-increasing down the list (what a caller reads as "how good" stays monotone).
    """
    merged: list[tuple[int, float]] = []
    taken: set[int] = set()
    cursors = [0] * len(steps)
    while len(merged) < limit:
        moved = False
        for i, ranking in enumerate(steps):
            at = cursors[i]
            while at < len(ranking) and ranking[at][0] in taken:
                at += 1  # a tool another step already brought: this step's next one takes the turn
            if at < len(ranking) and len(merged) < limit:
                _take(merged, taken, ranking[at][0], _relative(ranking, at))
                at += 1
                moved = True
            cursors[i] = at
        if not moved:
            break
    for at, (position, _) in enumerate(whole):
        if len(merged) >= limit:
            break
        if position not in taken:
            _take(merged, taken, position, _relative(whole, at))
    return merged


def in_context(step: Sequence[tuple[int, float]], whole: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """A step's ranking among the whole request's candidates: each scored by its step score plus its whole
    score, each relative to its ranking's best. "show me the app's logs" alone ranks every server's log
    tools; in context, the logs of the server the request names come first."""
    if not whole:
        return []
    step_top = step[0][1] if step and step[0][1] > 0 else 1.0
    whole_top = whole[0][1] if whole[0][1] > 0 else 1.0
    own = {position: score / step_top for position, score in step}
    scored = [(position, own.get(position, 0.0) + score / whole_top) for position, score in whole if position in own]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def cover(
    steps: Sequence[Sequence[tuple[int, float]]], whole: Sequence[tuple[int, float]], limit: int, k: int = 5
) -> list[tuple[int, float]]:
    """The whole request's ranking, with each step's best tool moved up into the top ``k`` when it is not there.

    The tools a step needs replace the whole ranking's last ones in the top ``k`` (never its first), so
    the order the whole request gave is kept wherever the steps are already covered.
    """
    k = min(k, limit)
    order = [position for position, _ in whole]
    tops = list(dict.fromkeys(ranking[0][0] for ranking in steps if ranking))
    head = order[:k]
    missing = [top for top in tops if top not in head][: max(0, k - 1)]
    if missing:
        keep = [p for p in head if p in tops or p == head[0]]
        keep += [p for p in head if p not in keep][: k - len(keep) - len(missing)]
        rank = {p: i for i, p in enumerate(order)}
        head = sorted(keep, key=lambda p: rank[p]) + missing
    chosen = set(head)
    final = head + [p for p in order if p not in chosen]
    merged: list[tuple[int, float]] = []
    score = dict(whole)
    top = whole[0][1] if whole and whole[0][1] > 0 else 1.0
    for position in final[:limit]:
        value = score.get(position, 0.0) / top
        merged.append((position, min(value, merged[-1][1]) if merged else value))
    return merged


def _relative(ranking: Sequence[tuple[int, float]], at: int) -> float:
    top = ranking[0][1]
    return ranking[at][1] / top if top > 0 else 0.0


def _take(merged: list[tuple[int, float]], taken: set[int], position: int, score: float) -> None:
    if merged:
        score = min(score, merged[-1][1])
    merged.append((position, score))
    taken.add(position)
