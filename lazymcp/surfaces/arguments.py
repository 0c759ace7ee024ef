"""The ``tools/call`` argument check: arguments against the tool's real input schema (LT-14).

A model that saw only a stub may guess arguments. Checking them here, before the tool runs, turns a
wrong guess into an ``isError`` result that carries the schema, so the model can correct itself.
The check follows the schema's own dialect (``$schema``; MCP's default is 2020-12) and never refuses
a call because a schema cannot be checked: an unknown dialect, an invalid schema or an unresolvable
``$ref`` lets the call through to the tool, as if lazymcp were not there.

Most tools' schemas are plain: an object of named properties of the JSON primitive types, some of them
required. For those, ``Plain`` sees at a glance that a call's arguments fit, so the validator (several
microseconds a call) runs only for the calls it cannot vouch for; it never refuses a call itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote

import orjson

from lazymcp.surfaces.metatools import text_result

if TYPE_CHECKING:  # jsonschema itself is imported at the first check: a process that lists only never loads it
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

_UNKNOWN = object()


def _relevance(error: ValidationError) -> Any:
    """``jsonschema``'s ranking of errors (what its ``best_match`` picks the greatest of)."""
    from jsonschema.exceptions import relevance  # pyright: ignore[reportUnknownVariableType]

    return cast("Callable[[ValidationError], Any]", relevance)(error)


ANNOTATIONS = frozenset(
    {"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "format"}
)
"""Keywords that assert nothing (``format`` too: the validator is made without a format checker)."""
PLAIN_TOP = ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}
PLAIN_DIALECTS = (
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-04/schema#",
)
"""Dialects in which the plain keywords mean what ``Plain`` takes them to (not draft-03's)."""
PRIMITIVES: dict[str, Callable[[object], bool]] = {
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) in (int, float),
    "boolean": lambda value: type(value) is bool,
    "null": lambda value: value is None,
}


@dataclass(frozen=True, slots=True)
class Plain:
    """The shape of a plain object schema: which properties are required, the primitive types each
    property may take, and whether other properties are refused."""

    required: tuple[str, ...]
    types: Mapping[str, tuple[Callable[[object], bool], ...]]
    closed: bool

    @classmethod
    def of(cls, schema: Mapping[str, Any]) -> Plain | None:
        """The plain shape of ``schema``, or None when it has any other keyword."""
        extra, required = schema.get("additionalProperties", True), schema.get("required", [])
        properties = schema.get("properties", {})
        if not set(schema) <= PLAIN_TOP or schema.get("type", "object") != "object" or not isinstance(extra, bool):
            return None
        if not isinstance(required, list) or not all(isinstance(n, str) for n in cast(list[object], required)):
            return None
        if not isinstance(properties, dict) or schema.get("$schema", PLAIN_DIALECTS[0]) not in PLAIN_DIALECTS:
            return None
        types: dict[str, tuple[Callable[[object], bool], ...]] = {}
        for name, node in cast(dict[str, object], properties).items():
            kinds = primitive_types(node)
            if kinds is None:  # a keyword that may assert something, even of an absent property
                return None
            types[name] = tuple(PRIMITIVES[kind] for kind in kinds)
        return cls(tuple(cast(list[str], required)), types, not extra)

    def fits(self, arguments: object) -> bool:
        """Do ``arguments`` surely pass the schema? (False: let the validator decide.)"""
        if not isinstance(arguments, dict):
            return False
        arguments = cast(dict[str, object], arguments)
        if any(name not in arguments for name in self.required):
            return False
        for name, value in arguments.items():
            if name not in self.types:
                if self.closed:
                    return False
                continue
            if not any(kind(value) for kind in self.types[name]):
                return False
        return True


def primitive_types(node: object) -> tuple[str, ...] | None:
    """The primitive types a property's schema allows, when that is all it says; else None."""
    if not isinstance(node, dict) or not set(cast(dict[str, object], node)) <= ANNOTATIONS | {"type"}:
        return None
    kind = cast(dict[str, object], node).get("type")
    kinds = (kind,) if isinstance(kind, str) else tuple(cast(list[object], kind)) if isinstance(kind, list) else ()
    if not kinds or not all(isinstance(k, str) and k in PRIMITIVES for k in kinds):
        return None
    return cast(tuple[str, ...], kinds)


@dataclass(frozen=True, slots=True)
class Check:
    """A tool's argument check: the validator of its schema, and its plain shape when it has one."""

    validator: Validator
    plain: Plain | None


def compile_validator(schema: object) -> Check | None:
    """The check of ``schema``, or None when it cannot be checked."""
    if not isinstance(schema, dict):
        return None
    schema = cast(dict[str, Any], schema)
    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        return None
    if not _refs_resolve(schema, schema):
        return None
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    cls: Any = Draft202012Validator if dialect is None else validator_for(schema, default=_UNKNOWN)  # pyright: ignore[reportArgumentType]
    if cls is _UNKNOWN:
        return None
    try:
        cls.check_schema(schema)
    except SchemaError:
        return None
    return Check(cls(schema), Plain.of(schema))


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


def without_nulls(check: Check | None, arguments: object, *, always: bool = False) -> dict[str, Any] | None:
    """``arguments`` without the ``null`` of each property that is not required and whose schema does not
    allow ``null``, or None when there is none to take out.

    Frameworks that build an argument model from a schema send ``null`` for every optional parameter
    they were not given; such a ``null`` means "absent", and is taken as that before the check and the
    call. ``always``: take out every optional ``null`` (the meta-tools', which declare it as absent).
    """
    if check is None or not isinstance(arguments, dict):
        return None
    arguments = cast(dict[str, Any], arguments)
    nulls = [key for key, value in arguments.items() if value is None]
    if not nulls:
        return None
    schema = cast(Mapping[str, Any], check.validator.schema)
    properties, required = schema.get("properties"), schema.get("required")
    if not isinstance(properties, dict):
        return None
    properties = cast(dict[str, object], properties)
    needed: set[object] = set(cast(list[object], required)) if isinstance(required, list) else set()
    absent = {key for key in nulls if key in properties and key not in needed}
    if not always:
        absent = {key for key in absent if not _allows_null(check.validator, properties[key])}
    if not absent:
        return None
    return {key: value for key, value in arguments.items() if key not in absent}


def _allows_null(validator: Validator, node: object) -> bool:
    """Does a property's schema take ``null``? (When that cannot be told, it does: the value is kept.)"""
    try:
        return validator.evolve(schema=node).is_valid(None)  # pyright: ignore[reportUnknownMemberType]
    except Exception:  # an unresolvable $ref, a bad regex...
        return True


def check_arguments(name: str, check: Check | None, arguments: object) -> dict[str, Any] | None:
    """An ``isError`` ``CallToolResult`` when ``arguments`` fail the schema; None to let the call run.

    The text lists every violation (at most ``MAX_VIOLATIONS``, the most relevant first, as
    ``jsonschema``'s ``best_match`` ranks them), each with where it is and what the schema expects
    there, so that a model can fix them all in one round trip; then the schema itself.
    """
    if check is None:
        return None
    instance: Any = {} if arguments is None else arguments
    if check.plain is not None and check.plain.fits(instance):
        return None
    validator = check.validator
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
