"""The files lazymcp reads and keeps: the JSON files a user hands it (catalogs, metadata), read with one
clear error naming the file, and the one cache directory (manifests, embeddings)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import orjson

from lazymcp.errors import CatalogError

CACHE_ENV: Final = "LAZYMCP_CACHE_DIR"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where lazymcp keeps what it can compute again: ``$LAZYMCP_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/lazymcp``, else ``~/.cache/lazymcp``."""
    environ = os.environ if environ is None else environ
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV])
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lazymcp"


def read_json(path: str | Path, what: str) -> object:
    """The JSON value in file ``path``; ``what`` names the file in errors ("metadata file", "catalog").

    Raises:
        CatalogError: the file cannot be read, or is not JSON.
    """
    try:
        return orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise CatalogError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise CatalogError(f"{what} {str(path)!r} is not JSON: {exc}") from None
