"""Full tool -> lazy stub, and the one-line summary a stub carries (spec/lazy-tools.md, LT-06..LT-08).

A summary is the tool's own metadata summary when it declares one, else the first sentence of its
description, whitespace collapsed, cut at a word boundary to at most ``limit`` characters counting the
ellipsis. Real descriptions are long (a third of them run past 500 characters), which is why a
``{name, description}`` stub saves only ~70% of a listing's tokens while ``{name, summary}`` saves ~94%.
"""

from __future__ import annotations

import re
from typing import Any, cast

from lazymcp.protocol.messages import EXT_ID, Detail, Shape, Tool, ToolStub

ELLIPSIS = "…"
DEFAULT_SUMMARY_CHARS = 80
STOCK_INPUT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
"""A stock stub's ``inputSchema``. ``properties`` is there because clients read it unguarded: LangChain's
``tool.args`` raises ``KeyError('properties')`` on a bare ``{"type": "object"}``."""
STOCK_KEPT = ("title", "outputSchema", "annotations", "execution")
"""What a stock stub keeps of its tool: members clients use outside the model's prompt (display names,
approval prompts, task support, typed results) and never put in it. They cost wire bytes, not context
tokens (spec/lazy-tools.md, LT-07)."""

# A sentence ends at . ! ? followed by white space, right after a full-width 。！？, or at a blank line.
_SENTENCE_END = re.compile(r"(?P<blank>\n[^\S\n]*\n)|(?<=[.!?])\s|(?<=[。！？])")
# Abbreviations whose dot ends no sentence.
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "incl.", "no.", "cf.")
_INITIALS = re.compile(r"(?:^|[\s(])(?:[A-Za-z]\.){2,}$")
_WHITESPACE = re.compile(r"\s+")


def first_sentence(text: str) -> str:
    """The first sentence of ``text``, whitespace collapsed."""
    start = 0
    while True:
        match = _SENTENCE_END.search(text, start)
        if match is None:
            sentence = text
            break
        candidate = text[: match.start()].rstrip()
        if not candidate.strip():  # leading blank lines or a lone heading mark
            start = match.end()
            continue
        is_blank_line = match.group("blank") is not None
        if not is_blank_line and (candidate.lower().endswith(_ABBREVIATIONS) or _INITIALS.search(candidate)):
            start = match.end()  # "e.g." or initials like "U.S." end no sentence, but a blank line always does
            continue
        sentence = candidate
        break
    return _WHITESPACE.sub(" ", sentence).strip()


def shorten(text: str, limit: int = DEFAULT_SUMMARY_CHARS) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, counting the ellipsis."""
    if len(text) <= limit:
        return text
    room = max(limit - len(ELLIPSIS), 0)
    cut = text[: room + 1]
    space = cut.rfind(" ")
    head = cut[:space] if space > 0 else text[:room]  # one long word: cut it
    return head.rstrip(" ,;:-–—(") + ELLIPSIS


def declared_summary(tool: Tool) -> str | None:
    """The summary the tool declares in its metadata (``_meta[EXT_ID]["summary"]``), if any."""
    meta: object = tool.get("_meta")
    if isinstance(meta, dict):
        ours: object = cast(dict[str, object], meta).get(EXT_ID)
        if isinstance(ours, dict):
            summary = cast(dict[str, object], ours).get("summary")
            if isinstance(summary, str) and summary.strip():
                return _WHITESPACE.sub(" ", summary).strip()
    return None


def summarize(tool: Tool, limit: int = DEFAULT_SUMMARY_CHARS) -> str:
    """The tool's one-line summary (LT-08)."""
    summary = declared_summary(tool)
    if summary is None:
        description = tool.get("description")
        summary = first_sentence(description) if isinstance(description, str) else ""
    return shorten(summary, limit)


def make_stub(
    tool: Tool, shape: Shape, detail: Detail, limit: int = DEFAULT_SUMMARY_CHARS, summary: str | None = None
) -> ToolStub:
    """The stub of one tool for a listing of ``shape`` ("bare" or "stock") at ``detail``.

    ``summary`` is one declared outside the tool (a registration argument, a metadata file), if any.
    """
    stub: ToolStub = {"name": tool["name"]}
    if detail != "name":
        if detail == "summary":
            text = summary if summary is not None else summarize(tool, limit)
        else:
            text = tool.get("description")
        if isinstance(text, str) and text:
            stub["description"] = text
    if shape == "stock":
        stub["inputSchema"] = STOCK_INPUT_SCHEMA
        members = cast(dict[str, Any], stub)
        members.update((key, tool[key]) for key in STOCK_KEPT if key in tool)
    return stub
