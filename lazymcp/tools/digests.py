"""Tool digests: what ``tools/manifest`` says of each tool, so a client that kept a tool can tell it
has not changed (spec/lazy-tools.md §18).

A tool's **canonical encoding** is its JSON with object keys sorted by code point at every depth, no
white space, UTF-8 with no escaping of non-ASCII characters (only ``"``, ``\\`` and control characters
are escaped), integers in decimal and other numbers in their shortest round-trip form: the bytes orjson
writes with ``OPT_SORT_KEYS``. Its **digest** is ``sha256:`` and the lowercase hex SHA-256 of those
bytes; its **size** is their length in bytes. The digest covers the tool exactly as ``tools/describe``
returns it, name included, so a gateway's renamed tool has a digest of its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import orjson

PREFIX: Final = "sha256:"


def canonical(tool: object) -> bytes:
    """``tool``'s canonical encoding.

    Raises:
        TypeError: ``tool`` is not JSON.
    """
    return orjson.dumps(tool, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True, slots=True)
class Digest:
    """A tool's digest and the size in bytes of its canonical encoding."""

    digest: str
    size: int

    @classmethod
    def of(cls, tool: object) -> Digest:
        """The digest of ``tool``.

        Raises:
            TypeError: ``tool`` is not JSON.
        """
        return cls.of_canonical(canonical(tool))

    @classmethod
    def of_canonical(cls, blob: bytes) -> Digest:
        """The digest of a canonical encoding."""
        return cls(PREFIX + hashlib.sha256(blob).hexdigest(), len(blob))


def well_formed(digest: object) -> bool:
    """Is ``digest`` a ``sha256:`` digest as this module writes them (64 lowercase hex digits)?"""
    if not isinstance(digest, str) or not digest.startswith(PREFIX) or len(digest) != len(PREFIX) + 64:
        return False
    return all(c in "0123456789abcdef" for c in digest[len(PREFIX) :])


def manifest_entry(tool: Mapping[str, Any], digest: Digest) -> dict[str, Any]:
    """One ``tools/manifest`` entry: ``{name, title?, digest, size, annotations?}``."""
    entry: dict[str, Any] = {"name": tool["name"]}
    title = tool.get("title")
    if isinstance(title, str):
        entry["title"] = title
    entry["digest"] = digest.digest
    entry["size"] = digest.size
    annotations = tool.get("annotations")
    if isinstance(annotations, dict):
        entry["annotations"] = cast(dict[str, Any], annotations)
    return entry
