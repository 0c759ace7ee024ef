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
from urllib.parse import unquote

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.exceptions import relevance as _relevance_key  # pyright: ignore[reportUnknownVariableType]
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from lazymcp.metatools import text_result

_UNKNOWN = object()
_relevance = cast("Callable[[ValidationError], Any]", _relevance_key)
"""``jsonschema``'s ranking of errors (what its ``best_match`` picks the greatest of)."""


def compile_validator(schema: object) -> Validator | None:
    """A validator for ``schema``, or None when it cannot be checked."""
    if not isinstance(schema, dict):
        return None
    schema = cast(dict[str, Any], schema)
    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        return None
    if not _refs_resolve(schema, schema):
        return None
    cls: Any = Draft202012Validator if dialect is None else validator_for(schema, default=_UNKNOWN)  # pyright: ignore[reportArgumentType]
    if cls is _UNKNOWN:
        return None
    try:
        cls.check_schema(schema)
    except SchemaError:
        return None
    return cls(schema)


def _refs_resolve(node: object, root: dict[str, Any], depth: int = 0) -> bool:
    """Does every ``$ref`` in the schema point inside it? (No remote fetching: there is no network.)"""
    if depth > 64:
        return False
    if isinstance(node, dict):
        node = cast(dict[str, Any], node)
        ref = node.get("$ref")
        if ref is not None and not (isinstance(ref, str) and _pointer_target(root, ref) is not None):
            return False
        return all(_refs_resolve(value, root, depth + 1) for value in node.values())
    if isinstance(node, list):
        return all(_refs_resolve(value, root, depth + 1) for value in cast(list[object], node))
    return True


def _pointer_target(root: dict[str, Any], ref: str) -> object | None:
    """What a local ``#/a/b`` reference points to in ``root``, or None."""
    if not ref.startswith("#"):
        return None
    node: object = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = cast(dict[str, object], node)[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(cast(list[object], node)):
            node = cast(list[object], node)[int(part)]
        else:
            return None
    return node


def check_arguments(name: str, validator: Validator | None, arguments: object) -> dict[str, Any] | None:
    """An ``isError`` ``CallToolResult`` when ``arguments`` fail the schema; None to let the call run.

    The text lists every violation (at most ``MAX_VIOLATIONS``, the most relevant first, as
    ``jsonschema``'s ``best_match`` ranks them), each with where it is and what the schema expects
    there, so that a model can fix them all in one round trip; then the schema itself.
    """
    if validator is None:
        return None
    instance: Any = {} if arguments is None else arguments
    try:
        errors = list(validator.iter_errors(instance))
    except Exception:  # an unresolvable $ref, a bad regex...: the schema cannot be checked
        return None
    if not errors:
        return None
    ranked = sorted(errors, key=_relevance, reverse=True)
    shown = ranked[:MAX_VIOLATIONS]
    count = f"{len(errors)} problem" + ("s" if len(errors) != 1 else "")
    lines = [f"Invalid arguments for tool {name!r} ({count}):"]
    lines += [f"- {violation(error)}" for error in shown]
    if len(errors) > len(shown):
        lines.append(f"- ... and {len(errors) - len(shown)} more")
    schema = orjson.dumps(validator.schema).decode()
    lines.append(f"The tool was not called. Its inputSchema is: {schema}")
    return text_result("\n".join(lines), is_error=True)


MAX_VIOLATIONS = 10
"""Violations an invalid-arguments result lists; the rest are counted."""
EXPECTED_CHARS = 80
"""Longest rendering of what a schema keyword expects, in a violation's line."""


def violation(error: ValidationError) -> str:
    """One violation: where it is, what is wrong, and what the schema expects there."""
    path: Iterable[object] = error.absolute_path  # pyright: ignore[reportUnknownMemberType]
    where = "/" + "/".join(str(part) for part in path) if error.absolute_path else "(root)"  # pyright: ignore[reportUnknownMemberType]
    keyword = str(error.validator)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    try:
        expected = orjson.dumps(error.validator_value).decode()  # pyright: ignore[reportUnknownMemberType]
    except TypeError:
        expected = repr(error.validator_value)  # pyright: ignore[reportUnknownMemberType]
    if len(expected) > EXPECTED_CHARS:
        expected = expected[: EXPECTED_CHARS - 1] + "…"
    return f"at {where}: {error.message} (expected {keyword}: {expected})"
