"""The ``tools/call`` argument check: arguments against the tool's real input schema (LT-14).

A model that saw only a stub may guess arguments. Checking them here, before the tool runs, turns a
wrong guess into an ``isError`` result that carries the schema, so the model can correct itself.
The check follows the schema's own dialect (``$schema``; MCP's default is 2020-12) and never refuses
a call because a schema cannot be checked: an unknown dialect, an invalid schema or an unresolvable
``$ref`` lets the call through to the tool, as if lazymcp were not there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.exceptions import best_match as _best_match  # pyright: ignore[reportUnknownVariableType]
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from lazymcp.metatools import text_result

_UNKNOWN = object()
best_match = cast("Callable[[Iterable[ValidationError]], ValidationError | None]", _best_match)


def compile_validator(schema: object) -> Validator | None:
    """A validator for ``schema``, or None when it cannot be checked."""
    if not isinstance(schema, dict):
        return None
    schema = cast(dict[str, Any], schema)
    dialect = schema.get("$schema")
    cls: Any = Draft202012Validator if dialect is None else validator_for(schema, default=_UNKNOWN)  # pyright: ignore[reportArgumentType]
    if cls is _UNKNOWN:
        return None
    try:
        cls.check_schema(schema)
    except SchemaError:
        return None
    return cls(schema)


def check_arguments(name: str, validator: Validator | None, arguments: object) -> dict[str, Any] | None:
    """An ``isError`` ``CallToolResult`` when ``arguments`` fail the schema; None to let the call run."""
    if validator is None:
        return None
    instance: Any = {} if arguments is None else arguments
    try:
        error = best_match(validator.iter_errors(instance))
    except Exception:  # an unresolvable $ref, a bad regex...: the schema cannot be checked
        return None
    if error is None:
        return None
    path: Iterable[object] = error.absolute_path  # pyright: ignore[reportUnknownMemberType]
    where = "/".join(str(part) for part in path) or "(root)"
    schema = orjson.dumps(validator.schema).decode()
    text = (
        f"Invalid arguments for tool {name!r} at {where}: {error.message}\n"
        f"The tool was not called. Its inputSchema is: {schema}"
    )
    return text_result(text, is_error=True)
