"""Reading the JSON files a user hands lazymcp (catalogs, metadata): one clear error naming the file."""

from __future__ import annotations

from pathlib import Path

import orjson

from lazymcp.errors import CatalogError


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
