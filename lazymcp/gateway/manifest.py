"""The manifest cache: each server's last tool list, so the gateway lists, describes and searches a
server's tools without starting it, and its last prompt, resource and resource-template lists, so that
a client listing those at start-up (as most do) starts no server either.

A manifest is keyed by a hash of how the server is started or reached (command, arguments, working
directory, URL); it records the server's ``serverInfo`` version and when it was fetched. One JSON file
per server under the user cache directory (``$LAZYMCP_CACHE_DIR``, else ``$XDG_CACHE_HOME/lazymcp``,
else ``~/.cache/lazymcp``). A manifest that cannot be read counts as absent: the server is started.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson

from lazymcp import jsonrpc
from lazymcp.messages import Tool

FORMAT = 1
DEFAULT_TTL = 7 * 24 * 3600.0
"""Seconds a manifest is fresh; an older one is still listed, and refreshed on the server's first use."""


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where manifests are kept."""
    environ = os.environ if environ is None else environ
    if environ.get("LAZYMCP_CACHE_DIR"):
        return Path(environ["LAZYMCP_CACHE_DIR"])
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lazymcp"


def manifest_key(identity: Sequence[Any]) -> str:
    """The cache key of a server: a hash of how it is started or reached."""
    return hashlib.sha256(orjson.dumps([FORMAT, *identity])).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Manifest:
    """One server's tool list as last fetched."""

    tools: tuple[Tool, ...]
    fetched: float
    """Wall-clock seconds (``time.time``) of the fetch."""
    version: str | None = None
    """The server's ``serverInfo.version`` then."""
    lists: Mapping[str, list[Any]] = field(default_factory=lambda: {})
    """Its last answers to ``prompts/list``, ``resources/list`` and ``resources/templates/list``, by method."""

    def fresh(self, ttl: float, now: float | None = None) -> bool:
        return (time.time() if now is None else now) - self.fetched < ttl


@dataclass(frozen=True, slots=True)
class ManifestStore:
    """The manifests in one directory."""

    directory: Path

    def _path(self, identity: Sequence[Any]) -> Path:
        return self.directory / f"{manifest_key(identity)}.json"

    def load(self, identity: Sequence[Any]) -> Manifest | None:
        """The manifest of a server, or None when there is none (or it cannot be read)."""
        try:
            data = orjson.loads(self._path(identity).read_bytes())
        except (OSError, orjson.JSONDecodeError):
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
        lists = data.get("lists")
        kept = {
            method: cast(list[Any], entries)
            for method, entries in (cast(dict[str, Any], lists) if isinstance(lists, dict) else {}).items()
            if isinstance(entries, list)
        }
        version = version if isinstance(version, str) else None
        return Manifest(tuple(cast(list[Tool], tools)), float(fetched), version, kept)

    def save(
        self,
        identity: Sequence[Any],
        tools: Sequence[Tool],
        version: str | None = None,
        lists: Mapping[str, list[Any]] | None = None,
    ) -> Manifest:
        """Store a server's tool list and other lists (written whole, then renamed into place)."""
        manifest = Manifest(tuple(tools), time.time(), version, dict(lists or {}))
        path = self._path(identity)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"format": FORMAT, "fetched": manifest.fetched, "version": version, "tools": list(tools)}
        blob = orjson.dumps({**record, "lists": manifest.lists})
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(blob)
        partial.replace(path)
        return manifest

    def forget(self, identity: Sequence[Any]) -> None:
        self._path(identity).unlink(missing_ok=True)
