"""The files lazymcp reads and keeps: the JSON files a user hands it (catalogs, metadata), read with one
clear error naming the file, and the one cache directory (manifests, embeddings, described tools, the
start-up line's token counts).

What lazymcp keeps in that directory it reads and writes through ``read_private`` and ``write_private``:
only a regular file of a bounded size is read (a FIFO, a device or a link is not), and a file is written
to a new file, created exclusively without following links, then renamed into place, in a directory made
private (0700), so nothing planted there can redirect a write or stall a read.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import orjson

from lazymcp.protocol.errors import CatalogError

CACHE_ENV: Final = "LAZYMCP_CACHE_DIR"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where lazymcp keeps what it can compute again: ``$LAZYMCP_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/lazymcp``, else ``~/.cache/lazymcp``."""
    environ = os.environ if environ is None else environ
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV])
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lazymcp"


def read_json(path: str | Path, what: str, *, comments: bool = False) -> object:
    """The JSON value in file ``path``; ``what`` names the file in errors ("metadata file", "catalog").
    With ``comments``, the file is read as VS Code reads JSON with comments: ``//`` and ``/* */``
    comments and a comma before a closing bracket are let be.

    Raises:
        CatalogError: the file cannot be read, or is not JSON.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CatalogError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    try:
        return orjson.loads(without_comments(raw) if comments else raw)
    except orjson.JSONDecodeError as exc:
        hint = "" if comments or not _COMMENTED.search(raw) else " (comments are read in an mcp.json only)"
        raise CatalogError(f"{what} {str(path)!r} is not JSON{hint}: {exc}") from None


_COMMENT = re.compile(rb'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TRAILING = re.compile(rb'"(?:[^"\\]|\\.)*"|,(?=\s*[\]}])')
_COMMENTED = re.compile(rb"^\s*//|/\*", re.MULTILINE)


def without_comments(raw: bytes) -> bytes:
    """JSON with comments made JSON: each comment and each comma before ``]`` or ``}`` becomes spaces (its
    line breaks kept, so a parse error's line and column still point into the file); strings are let be."""

    def blank(match: re.Match[bytes]) -> bytes:
        text = match.group()
        return text if text.startswith(b'"') else re.sub(rb"[^\n]", b" ", text)

    return _TRAILING.sub(blank, _COMMENT.sub(blank, raw))


def read_private(path: Path, limit: int) -> bytes | None:
    """A kept file's bytes: None unless it is a regular file (no link, FIFO or device) of at most
    ``limit`` bytes that can be read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit:  # a directory opens too: refused here
            os.close(descriptor)
            return None
    except OSError:
        os.close(descriptor)
        return None
    with os.fdopen(descriptor, "rb") as file:
        try:
            raw = file.read(limit + 1)
        except OSError:
            return None
    return raw if len(raw) <= limit else None


def write_private(path: Path, blob: bytes, *, durable: bool = False) -> None:
    """Put ``blob`` in file ``path`` whole: written to a new file of a random name beside it (created
    exclusively, without following a link, mode 0600), then renamed into place, which replaces a link at
    ``path`` itself, never what it points to. The directory is made (0700) if missing. ``durable``: for what
    cannot be computed again (sign-ins), the new file is synced to disk before the rename and the directory
    after it, so that a crash leaves the old file or the new one, never an empty one.

    Raises:
        OSError: the directory cannot be made, or the file cannot be written.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(blob)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    if durable:
        directory = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
