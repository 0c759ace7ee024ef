"""The manifest cache on disk: one JSON file per server under the cache directory
(``lazymcp.local.files.cache_dir``), keyed by a hash of everything that can change what the server lists
(``ServerEntry.identity``: command, arguments, working directory, URL, environment and headers; the
hash alone is kept, never a secret). Each records the server's ``serverInfo`` version and when it was
fetched.

A manifest that cannot be used counts as absent, and the server is listed afresh: only a regular file
of at most ``MAX_MANIFEST`` bytes is read (a FIFO, a device or a link is not). The directory is made
private (0700), and a manifest is written to a new file, created without following links, then
renamed into place, so nothing planted in the directory can redirect the write (``lazymcp.local.files``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson

from lazymcp.local.files import read_private, write_private
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.messages import Tool
from lazymcp.tools.manifest import Listed, Manifest
from lazymcp.tools.packed import Packed

FORMAT = 1
"""The manifests' format: written in each file and hashed into its name. A file of another format (an
earlier or later lazymcp's) is not read and is no error: the server is listed afresh and its manifest
written anew in this format, as when there was none."""
MAX_MANIFEST = 32 * 1024 * 1024
"""Bytes of one manifest file read at most (the 954 tools of 30 servers take 1.8 MB in all)."""


def manifest_key(identity: Sequence[Any]) -> str:
    """The cache key of a server: a hash of how it is started or reached."""
    return hashlib.sha256(orjson.dumps([FORMAT, *identity])).hexdigest()[:24]


def _decode(raw: bytes) -> Any:
    """A manifest file's JSON.

    Not orjson's: its parser takes a scratch buffer several times a large file's size and frees it,
    which leaves glibc's malloc placing every later block up to that size (a whole ``tools/list``
    answer and its copies on the way out) on a heap it never gives back.

    Raises:
        ValueError: the file is not JSON.
    """
    return json.loads(raw)


def _lists(data: object) -> dict[str, Listed]:
    kept: dict[str, Listed] = {}
    for method, listed in (cast(dict[str, Any], data) if isinstance(data, dict) else {}).items():
        entries, fetched = jsonrpc.field(listed, "entries"), jsonrpc.field(listed, "fetched")
        if isinstance(entries, list) and isinstance(fetched, int | float) and not isinstance(fetched, bool):
            kept[method] = Listed(cast(list[Any], entries), float(fetched))
    return kept


@dataclass(frozen=True, slots=True)
class ManifestStore:
    """The manifests in one directory."""

    directory: Path
    ignored: set[Path] = field(default_factory=lambda: set(), compare=False)
    """Files found unusable (and said so, once)."""
    on_saved: Callable[[str, bytes, Sequence[str]], None] | None = field(default=None, compare=False)
    """Told each manifest written (its key, its bytes, the ``list_changed`` notifications that made it be
    written): gateway instances share them (``--redis``)."""

    def path(self, identity: Sequence[Any]) -> Path:
        """The file of a server's manifest."""
        return self.directory / f"{manifest_key(identity)}.json"

    def load(self, identity: Sequence[Any]) -> Manifest | None:
        """The manifest of a server, or None when there is none (or it cannot be read)."""
        raw = read_private(self.path(identity), MAX_MANIFEST)
        if raw is None:
            return None
        try:
            data = _decode(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        data = cast(dict[str, Any], data)
        if data.get("format") != FORMAT:
            return None
        tools, fetched, version = data.get("tools"), data.get("fetched"), data.get("version")
        if not isinstance(tools, list) or not isinstance(fetched, int | float):
            return None
        if not all(isinstance(jsonrpc.field(t, "name"), str) for t in cast(list[object], tools)):
            return None
        try:  # JSON orjson cannot write (a lone surrogate) is no file this store wrote
            orjson.dumps(tools)
        except TypeError:
            return None
        names = [cast(str, jsonrpc.field(tool, "name")) for tool in cast(list[object], tools)]
        packed = Packed.deferred(names, lambda: cast(list[Tool], _decode(raw)["tools"]))
        version = version if isinstance(version, str) else None
        return Manifest(packed, float(fetched), version, _lists(data.get("lists")))

    def save(
        self,
        identity: Sequence[Any],
        tools: Sequence[Tool],
        version: str | None = None,
        lists: Mapping[str, Listed | list[Any]] | None = None,
        *,
        changed: Sequence[str] = (),
    ) -> Manifest:
        """Store a server's tool list and other lists (written whole, then renamed into place); a list
        given bare is fetched now, a ``Listed`` keeps its time. ``changed``: the server's ``list_changed``
        notifications that made lists of it stale, told to ``on_saved``."""
        now = time.time()
        kept = {m: v if isinstance(v, Listed) else Listed(v, now) for m, v in (lists or {}).items()}
        manifest = Manifest(tools if isinstance(tools, Packed) else tuple(tools), now, version, kept)
        record = {"format": FORMAT, "fetched": manifest.fetched, "version": version, "tools": list(tools)}
        written = {m: {"entries": v.entries, "fetched": v.fetched} for m, v in kept.items()}
        blob = orjson.dumps({**record, "lists": written})
        path = self.path(identity)
        write_private(path, blob)
        if self.on_saved is not None:
            self.on_saved(path.stem, blob, changed)
        return manifest

    def put(self, identity: Sequence[Any], blob: bytes) -> None:
        """Store a manifest's bytes as another store wrote them (read back with ``load``, which checks them)."""
        write_private(self.path(identity), blob)
