"""Claude Code's tool search, read from the environment it starts a stdio server with (spec §17).

Theory of operation. Claude Code (2.1.332) decides whether to defer tool definitions behind its own search
from ``ENABLE_TOOL_SEARCH``, and the server it starts inherits that environment, so lazymcp can read the
decision as Claude Code makes it (``tool_search``) and serve the mode that pays there (``hosts.choose``).
Claude Code reads the value as it is written (``setting``):

- ``auto:N``: N is read as JavaScript's ``parseInt`` reads it (``2.5`` is 2, ``5%`` is 5; ``1e1`` and
  ``1,000`` are whole numbers too), held to 0..100; 0 is always on, 100 always off, any other N is
  ``auto`` at N% (not a number: ``auto`` at its 10%);
- ``auto``: on once the definitions it would defer reach 10% of its context window (``auto_search``);
- a true or false word (``1``, ``true``, ``yes``, ``on``; ``0``, ``false``, ``no``, ``off``, in any case and
  spacing): on or off;
- anything else, unset and empty too (``force``, ``AUTO``, ``auto`` with a space: only ``auto`` as written is auto): on.

``CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS`` set to a true word turns it off, whatever the setting says.
Unset, it is on behind any ``ANTHROPIC_BASE_URL`` too (measured: tests/hosts); an endpoint that refuses the
deferred tools gets the request again without them, and Claude Code's warning then says to set
``ENABLE_TOOL_SEARCH=false``, which lazymcp reads as it does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

AUTO_SHARE: Final = 10
"""Claude Code's ``ENABLE_TOOL_SEARCH=auto`` turns its tool search on once the deferrable definitions reach
10% of the model's context window (``auto:N``: N%)."""
CONTEXT_WINDOW: Final = 1_000_000
"""The window Claude Code (2.1.332) assumes for its default models, in tokens."""
SMALL_CONTEXT_WINDOW: Final = 200_000
"""Its window with ``CLAUDE_CODE_DISABLE_1M_CONTEXT`` set."""
OWN_DEFERRED: Final = 7_000
"""The tokens of Claude Code's own deferrable tools (2.1.332: 11 of them, 7,338 cl100k_base tokens), which
it counts with the MCP servers' tools."""
NO_BETAS: Final = "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS"
"""Set to a true word (as Claude Code's gateway and cloud providers set it), Claude Code sends no beta
features, its tool search among them: off, even with ``ENABLE_TOOL_SEARCH`` ``true`` or ``force`` (measured)."""
_TRUE: Final = ("true", "1", "yes", "on")
_FALSE: Final = ("false", "0", "no", "off")
_SPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What JavaScript's ``trim`` takes off (Python's ``strip`` takes other characters too)."""
_EXPONENT: Final = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)[eE][+-]?[0-9]+")
_GROUPED: Final = re.compile(r"[+-]?[0-9]{1,3}([_,\u00a0\u202f ])[0-9]{3}(?:\1[0-9]{3})*")
_LEADING: Final = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class SearchSetting:
    """``ENABLE_TOOL_SEARCH`` as Claude Code reads it: on, off, or auto at a share."""

    on: bool | None
    """True or false; None for auto (``share``)."""
    share: int | None = None
    """The percentage of the context window ``auto`` counts against; None unless auto."""


def setting(value: str) -> SearchSetting:
    """The value of ``ENABLE_TOOL_SEARCH`` (``""`` when unset) as Claude Code 2.1.332 reads it."""
    share = _share(value[5:]) if value.startswith("auto:") else None
    if share == 0:
        return SearchSetting(True)
    if share == 100:
        return SearchSetting(False)
    if value == "auto" or value.startswith("auto:"):
        return SearchSetting(None, AUTO_SHARE if share is None else share)
    return SearchSetting(value.lower().strip(_SPACE) not in _FALSE)  # a true word, or any other: on


def _share(text: str) -> int | None:
    """``N`` of ``auto:N`` held to 0..100, read as Claude Code reads a number; None when it is not one."""
    number = _integer(text.strip(_SPACE))
    return None if number is None else max(0, min(100, number))


def _integer(text: str) -> int | None:
    """A whole number as Claude Code reads one: an exponent form or a number in groups of three whole,
    else the leading digits (``parseInt``); None when there are none (or an exponent form is not whole)."""
    if len(text) <= 32:
        if _EXPONENT.fullmatch(text):
            number = float(text)
            return int(number) if number.is_integer() else None
        if _GROUPED.fullmatch(text):
            return int(re.sub(r"[_,\u00a0\u202f ]", "", text))
    leading = _LEADING.match(text)
    return int(leading.group()) if leading else None


def _true_word(value: str) -> bool:
    """A true word as Claude Code reads one: ``1``, ``true``, ``yes`` or ``on``, in any case and spacing."""
    return value.lower().strip(_SPACE) in _TRUE


def tool_search(environ: Mapping[str, str], full_tokens: Callable[[], int]) -> tuple[bool, str] | None:
    """Whether Claude Code's tool search is on, read as Claude Code decides it from the environment it
    starts a stdio server with (``setting``), and why; None when that environment is not Claude Code's.

    ``full_tokens()`` is the tokens of lazymcp's full listing, which ``auto`` counts (``auto_search``).
    """
    if environ.get("CLAUDECODE") != "1" and "CLAUDE_CODE_ENTRYPOINT" not in environ:
        return None
    if _true_word(environ.get(NO_BETAS, "")):
        return False, f"{NO_BETAS} set (Claude Code then searches no tools, whatever ENABLE_TOOL_SEARCH says)"
    value = environ.get("ENABLE_TOOL_SEARCH", "")
    read = setting(value)
    said = f"ENABLE_TOOL_SEARCH={value}" if value else "ENABLE_TOOL_SEARCH unset"
    if read.on is None:
        return auto_search(environ, read.share or AUTO_SHARE, full_tokens, said)
    return read.on, said


def auto_search(
    environ: Mapping[str, str], share: int, full_tokens: Callable[[], int], said: str = "ENABLE_TOOL_SEARCH=auto"
) -> tuple[bool, str]:
    """``auto`` at ``share``% as Claude Code decides it: on once the tokens of every deferrable definition
    (lazymcp's full listing, ``full_tokens()``, and Claude Code's own, ``OWN_DEFERRED``) reach that share of
    the context window it assumes (``context_window``).

    So the listing that decides is the full one: served ``eager``, a catalog under the threshold is shown in
    full (no search), and one over it is deferred; a smaller listing (stubs) stays under it.
    """
    window = context_window(environ)
    threshold = window * share // 100
    tokens = full_tokens() + OWN_DEFERRED
    why = f"{said}: about {tokens:,} tokens of deferrable definitions against {share}% of {window:,}"
    return tokens >= threshold, why


def context_window(environ: Mapping[str, str]) -> int:
    """The context window Claude Code assumes, as its environment says: ``CLAUDE_CODE_MAX_CONTEXT_TOKENS``
    with ``DISABLE_COMPACT``; 200,000 with ``CLAUDE_CODE_DISABLE_1M_CONTEXT``; else its default models' 1M."""
    if _true_word(environ.get("DISABLE_COMPACT", "")):
        limit = environ.get("CLAUDE_CODE_MAX_CONTEXT_TOKENS", "").strip()
        if limit.isdigit() and int(limit) > 0:
            return int(limit)
    if _true_word(environ.get("CLAUDE_CODE_DISABLE_1M_CONTEXT", "")):
        return SMALL_CONTEXT_WINDOW
    return CONTEXT_WINDOW
