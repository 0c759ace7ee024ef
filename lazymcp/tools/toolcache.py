"""Described tools kept on disk by digest, so that a client describes a tool once across sessions
(spec/lazy-tools.md §18.2).

Each tool is one file, ``<hex of its digest>.json``, holding its JSON as the server described it, in
``$LAZYMCP_CACHE_DIR/tools`` (else ``$XDG_CACHE_HOME/lazymcp/tools``, else ``~/.cache/lazymcp/tools``) or
a directory of the caller's choosing. The cache is only ever a shortcut, never a source of truth: a file
is used only when it is a regular file of a sane size in a private directory of the user's, holding a
tool whose own digest is the file's name, so a corrupt, truncated or planted file counts as absent. It is
bounded: past ``max_bytes``, the files used least recently go. Any failure to read or write it costs a
request, never an error.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Final, cast

import orjson

from lazymcp.local.files import cache_dir, read_private, write_private
from lazymcp.protocol.messages import Tool
from lazymcp.tools.digests import PREFIX, Digest, well_formed

DEFAULT_CACHE_BYTES: Final = 64 * 1024 * 1024
"""Bytes of kept tools at most, by default (the 954 tools of the shared catalogs take 1.9 MB)."""
MAX_TOOL_BYTES: Final = 4 * 1024 * 1024
"""The largest tool kept (and read back)."""
SUBDIRECTORY: Final = "tools"
_KEPT_SHARE = 0.9
"""Trimming leaves this share of ``max_bytes`` used, so that every write does not trim again."""


class ToolCache:
    """The tools kept in one directory, by digest."""

    def __init__(self, directory: str | Path | None = None, *, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, not {max_bytes}")
        self.directory = Path(directory) if directory is not None else cache_dir() / SUBDIRECTORY
        self.max_bytes = max_bytes
        self._used: int | None = None
        self._private: bool | None = None

    def path(self, digest: str) -> Path | None:
        """The file of a tool of ``digest`` (None: not a digest this cache keeps)."""
        if not well_formed(digest):
            return None
        return self.directory / f"{digest[len(PREFIX) :]}.json"

    def get(self, digest: str) -> Tool | None:
        """The tool of ``digest``, or None when none is kept (or what is kept is not that tool)."""
        path = self.path(digest)
        if path is None or not self._usable():
            return None
        raw = read_private(path, min(MAX_TOOL_BYTES, self.max_bytes))
        if raw is None:
            return None
        try:
            decoded: object = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(decoded, dict):
            return None
        tool = cast(dict[str, Any], decoded)
        if not isinstance(tool.get("name"), str):
            return None
        try:
            if Digest.of(tool).digest != digest:
                return None
        except TypeError:
            return None
        try:  # used now: the last to go
            os.utime(path, follow_symlinks=False)
        except OSError:
            pass
        return tool

    def put(self, digest: str, tool: Tool) -> bool:
        """Keep ``tool`` under ``digest`` if that is its digest; True when it is kept."""
        path = self.path(digest)
        if path is None:
            return False
        try:
            blob = orjson.dumps(tool)  # as served, members in its order; its digest checked when read
            if len(blob) > min(MAX_TOOL_BYTES, self.max_bytes) or Digest.of(tool).digest != digest:
                return False
        except TypeError:
            return False
        if not self._usable():
            return False
        try:
            write_private(path, blob)
        except OSError:
            return False
        if not self._usable():  # made by another just now, and not private: what was written goes again
            path.unlink(missing_ok=True)
            return False
        self._used = (self._scan_used() if self._used is None else self._used) + len(blob)
        if self._used > self.max_bytes:
            self.trim()
        return True

    def trim(self, target: int | None = None) -> None:
        """Remove the least recently used tools until at most ``target`` bytes (default: 90% of
        ``max_bytes``) are kept."""
        target = int(self.max_bytes * _KEPT_SHARE) if target is None else target
        files = sorted(self._files())
        used = sum(size for _, size, _ in files)
        for _, size, path in files:
            if used <= target:
                break
            try:
                path.unlink()
            except OSError:
                continue
            used -= size
        self._used = used

    def _files(self) -> list[tuple[float, int, Path]]:
        """(last use, size, path) of every kept tool file (regular files named as this cache names them)."""
        found: list[tuple[float, int, Path]] = []
        try:
            with os.scandir(self.directory) as entries:
                for entry in entries:
                    if not (entry.name.endswith(".json") and well_formed(PREFIX + entry.name[:-5])):
                        continue
                    try:
                        status = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(status.st_mode):
                        found.append((status.st_mtime, status.st_size, Path(entry.path)))
        except OSError:
            return []
        return found

    def _scan_used(self) -> int:
        return sum(size for _, size, _ in self._files())

    def _usable(self) -> bool:
        """Is the directory this user's own and private (0700; a looser one of the user's is made so)?
        Absent counts as usable: it is made private when first written."""
        if self._private:
            return True
        try:
            status = os.lstat(self.directory)
        except FileNotFoundError:
            return True
        except OSError:
            self._private = False
            return False
        private = stat.S_ISDIR(status.st_mode) and status.st_uid == os.geteuid()
        if private and stat.S_IMODE(status.st_mode) & 0o077:
            try:
                os.chmod(self.directory, 0o700)  # a directory, not a link: lstat said so
            except OSError:
                private = False
        self._private = private
        return private
