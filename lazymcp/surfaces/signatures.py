"""A tool as a Python function: its signature and docstring, read from its JSON Schema (code mode).

In ``code`` mode the model writes Python that calls tools, so ``describe`` shows each as the function it
calls: required parameters first, keyword-only, each with its type (``str``, ``int``, ``list[str]``,
``Literal[...]``, ``dict`` for a nested object, whose fields the docstring lists), its default, and its
description. Nothing here checks arguments: a call's arguments are checked by the one check of every
call (``lazymcp.surfaces.arguments``), wherever it comes from.
"""

from __future__ import annotations

import keyword
import re
from typing import Any, Final, cast

from lazymcp.protocol.messages import Tool

SIMPLE: Final = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
DESCRIPTION_CHARS: Final = 200
"""Longest description a parameter's docstring line keeps."""
FIELDS_SHOWN: Final = 12
"""Fields of a nested object the docstring lists."""
_NOT_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]")


def identifier(name: str) -> str:
    """``name`` as a Python identifier: other characters become ``_``, a leading digit or a keyword gets one."""
    cleaned = _NOT_IDENTIFIER.sub("_", name) or "_"
    if cleaned[0].isdigit():
        cleaned = "_" + cleaned
    return cleaned + "_" if keyword.iskeyword(cleaned) else cleaned


def _as_dict(node: object) -> dict[str, Any]:
    return cast(dict[str, Any], node) if isinstance(node, dict) else {}


def type_of(node: object, depth: int = 0) -> str:
    """The Python type a schema node stands for (``Any`` where it says nothing plain)."""
    schema = _as_dict(node)
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        values = cast(list[object], schema["enum"])[:20]
        return "Literal[" + ", ".join(repr(value) for value in values) + "]"
    if "const" in schema:
        return f"Literal[{schema['const']!r}]"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and depth < 3:
            rendered = dict.fromkeys(type_of(option, depth + 1) for option in cast(list[object], options))
            return " | ".join(rendered) if rendered else "Any"
    kind = schema.get("type")
    if isinstance(kind, list):
        rendered = dict.fromkeys(type_of({**schema, "type": one}, depth) for one in cast(list[object], kind))
        return " | ".join(rendered) if rendered else "Any"
    if kind == "array":
        items = schema.get("items")
        return f"list[{type_of(items, depth + 1)}]" if items and depth < 3 else "list"
    if kind == "object":
        return "dict"
    return SIMPLE.get(kind, "Any") if isinstance(kind, str) else "Any"


def _short(text: object) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= DESCRIPTION_CHARS else line[: DESCRIPTION_CHARS - 1] + "…"


def _fields(node: object) -> list[str]:
    """A nested object's fields, as docstring lines (``name: type`` and its description)."""
    schema = _as_dict(node)
    if schema.get("type") == "array":
        schema = _as_dict(schema.get("items"))
    properties = _as_dict(schema.get("properties"))
    required = set(cast(list[str], schema.get("required") or []))
    lines: list[str] = []
    for name, sub in list(properties.items())[:FIELDS_SHOWN]:
        mark = "" if name in required else ", optional"
        text = _as_dict(sub).get("description")
        lines.append(f"        {name}: {type_of(sub)}{mark}" + (f" — {_short(text)}" if text else ""))
    if len(properties) > FIELDS_SHOWN:
        lines.append(f"        ... and {len(properties) - FIELDS_SHOWN} more fields")
    return lines


def signature(python_name: str, tool: Tool) -> str:
    """``tool`` as ``async def`` with its parameters and a docstring, under ``python_name``."""
    schema = _as_dict(tool.get("inputSchema"))
    properties = _as_dict(schema.get("properties"))
    required = [name for name in cast(list[str], schema.get("required") or []) if name in properties]
    optional = [name for name in properties if name not in required]
    params: list[str] = []
    docs: list[str] = []
    for name in [*required, *optional]:
        node = _as_dict(properties[name])
        kind = type_of(node)
        if name in required:
            params.append(f"{name}: {kind}")
        else:
            default = node.get("default")
            params.append(f"{name}: {kind} = {default!r}" if "default" in node else f"{name}: {kind} | None = None")
        text = node.get("description")
        docs.append(f"    {name}: {_short(text) if text else kind}")
        docs += _fields(node)
    space, _, function = python_name.rpartition(".")
    head = f"async def {function}(" + ("*, " + ", ".join(params) if params else "") + ") -> Any:"
    if space:
        head = f"# {space}.{function}: call it as `await {python_name}(...)`\n{head}"
    body = [_short(tool.get("description") or tool["name"])]
    if docs:
        body += ["", "Args:", *docs]
    quoted = "\n    ".join(line.replace('"""', "'''") for line in body)
    return f'{head}\n    """{quoted}\n    """'
