"""Code mode: the tools as a Python API the model calls from code it writes (``run_code``).

Theory of operation. A ``code`` listing holds two meta-tools: ``search_tools``, whose matches also give
each tool's Python name, and ``run_code``, whose description names the servers and how to find their
tools, and nothing per tool, so the listing stays small however many tools there are. Inside the code
each tool of the catalog (which holds only what the session's grant allows) is an async function under
its server's namespace, ``await github.create_issue(owner=..., title=...)``; ``search(query)`` and
``describe(name)`` find and show more (a tool as a Python signature, ``lazymcp.surfaces.signatures``).

What a run does is the I/O's to carry out (a sandbox, the calls through the same door as a direct
call): here a ``run_code`` call becomes ``Code``, an ``Answer`` that says code mode is not served where
nothing carries it out, so a front end that does not know it answers the model that much. The rest
here is plain data: the names, the text ``search`` and ``describe`` answer in the code, and a tool's
result as the Python value the code gets (``value_of``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, cast

import orjson

from lazymcp.protocol.messages import Tool
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.metacalls import Answer, DynamicSession, handles
from lazymcp.surfaces.metatools import RUN_CODE, SEARCH_TOOLS, text_result
from lazymcp.surfaces.signatures import identifier, signature

DEFAULT_NAMESPACE: Final = "tools"
"""The namespace of a catalog's tools when their names carry no server (one server's catalog)."""
SERVER_CHARS: Final = 60
"""Longest server description ``run_code``'s description keeps."""
MAX_SOURCE: Final = 100_000
"""Longest source ``run_code`` takes, in characters."""


@dataclass(frozen=True, slots=True)
class Code(Answer):
    """Run ``source`` in the sandbox: ``result`` is the answer where no sandbox carries it out."""

    source: str = ""


@dataclass(frozen=True, slots=True)
class PythonNames:
    """Each tool's Python name (``namespace.function``) and back, for one catalog version."""

    by_tool: dict[str, tuple[str, str]]
    by_python: dict[str, str]
    namespaces: dict[str, dict[str, str]]
    """Each namespace's functions: function name -> tool name."""


def python_names(catalog: Catalog) -> PythonNames:
    """The Python names of ``catalog``'s tools (built once per catalog): the server as the namespace,
    the rest as the function, each made an identifier (a clash gets ``_2``, ``_3``...)."""

    def build() -> PythonNames:
        by_tool: dict[str, tuple[str, str]] = {}
        by_python: dict[str, str] = {}
        namespaces: dict[str, dict[str, str]] = {}
        separator = catalog.separator
        for name in catalog.index:
            server, sep, rest = name.partition(separator) if separator else (name, "", "")
            space, function = (identifier(server), identifier(rest)) if sep and rest else (DEFAULT_NAMESPACE, name)
            function = identifier(function)
            functions = namespaces.setdefault(space, {})
            chosen, n = function, 1
            while chosen in functions:
                n += 1
                chosen = f"{function}_{n}"
            functions[chosen] = name
            by_tool[name] = (space, chosen)
            by_python[f"{space}.{chosen}"] = name
        return PythonNames(by_tool, by_python, namespaces)

    return catalog.memo("python_names", build)


def python_name(catalog: Catalog, tool: str) -> str | None:
    found = python_names(catalog).by_tool.get(tool)
    return None if found is None else f"{found[0]}.{found[1]}"


def tool_of(catalog: Catalog, name: str) -> str | None:
    """The tool a Python name (or the tool's own name) stands for; None when none."""
    if name in catalog.index:
        return name
    return python_names(catalog).by_python.get(name)


def _servers(catalog: Catalog) -> list[str]:
    """A line per namespace: its name, how many tools, and what it is for where declared (each server's,
    where two servers' names make one namespace)."""
    names = python_names(catalog)
    described = catalog.server_descriptions(list(catalog.infos().values())) if catalog.separator else {}
    lines: list[str] = []
    for space, functions in names.namespaces.items():
        servers = dict.fromkeys(
            tool.partition(catalog.separator)[0] if catalog.separator else space for tool in functions.values()
        )
        texts = dict.fromkeys(" ".join((described.get(server) or "").split()).rstrip(".") for server in servers)
        text = " / ".join(text for text in texts if text)
        if len(text) > SERVER_CHARS:
            text = text[: SERVER_CHARS - 1].rstrip() + "…"
        lines.append(f"{space} ({len(functions)})" + (f": {text}" if text else ""))
    return lines


def run_code_definition(catalog: Catalog, name: str) -> Tool:
    """``run_code`` as ``catalog`` lists it: the servers, and how to find their tools from the code."""
    servers = "; ".join(_servers(catalog)) or "none"
    description = (
        "Run Python (a subset: no files, network or environment; json, re, math, datetime import) that calls tools as "
        "async functions: `r = await server.tool(arg=...)`. Returns what the code prints and its last "
        "expression's value. In the code, `await search('what it should do')` lists matching tools' Python "
        "names and `await describe('server.tool')` shows its signature. A tool's structured result or JSON "
        "comes back as Python values; a tool error raises ToolError, wrong arguments raise TypeError. "
        f"Namespaces (tool count): {servers}."
    )
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {"code": {"type": "string", "minLength": 1, "description": "Python source."}},
            "required": ["code"],
            "additionalProperties": False,
        },
    }


@handles(RUN_CODE)
def run_code(catalog: Catalog, args: dict[str, Any], session: DynamicSession | None) -> Answer:
    """``run_code``: the source to run, for the front end that carries code mode out."""
    source: str = args["code"]
    if len(source) > MAX_SOURCE:
        return Answer(text_result(f"The code is {len(source)} characters; at most {MAX_SOURCE}.", is_error=True))
    unserved = "run_code is served by the gateway (lazymcp gateway --mode code); nothing here runs code."
    return Code(text_result(unserved, is_error=True), source=source)


# --- inside a run ----------------------------------------------------------------------------------


def search_in_code(catalog: Catalog, query: str, limit: int) -> list[dict[str, Any]]:
    """``search(query)`` in the code: the best matches, each with its Python name and summary."""
    from lazymcp.surfaces.metacalls import HANDLERS

    answer = cast(Answer, HANDLERS[SEARCH_TOOLS](catalog, {"query": query, "limit": limit}, None))
    payload = orjson.loads(answer.result["content"][0]["text"])
    entries = cast(list[dict[str, Any]], payload.get("tools") or [])
    return [{"name": python_name(catalog, entry["name"]), "summary": entry.get("summary", "")} for entry in entries]


def describe_in_code(catalog: Catalog, name: str) -> str:
    """``describe(name)`` in the code: the tool as a Python signature, or what is close to the name."""
    tool_name = tool_of(catalog, name)
    tool = None if tool_name is None else catalog.get(tool_name)
    if tool is None or tool_name is None:
        close = [python_name(catalog, t) for t in catalog.search_index().search(name, 5).names]
        return f"No tool {name!r}. Close: {', '.join(str(c) for c in close) or 'none'}."
    return signature(python_name(catalog, tool_name) or tool_name, tool)


def signatures_of(catalog: Catalog, names: list[str]) -> dict[str, Any]:
    """``describe_tools`` in code mode: each tool asked for (by its Python or its own name) as a signature."""
    shown = [describe_in_code(catalog, name) for name in dict.fromkeys(names)]
    found = any(tool_of(catalog, name) is not None for name in names)
    return text_result("\n\n".join(shown), is_error=not found)


def with_python_names(catalog: Catalog, result: dict[str, Any]) -> dict[str, Any]:
    """A ``search_tools`` answer in code mode: each match also gives its Python name (``python``)."""
    content = result.get("content")
    if not isinstance(content, list) or not content or result.get("isError"):
        return result
    try:
        payload = orjson.loads(cast(list[dict[str, Any]], content)[0]["text"])
    except (KeyError, orjson.JSONDecodeError):
        return result
    for entry in cast(list[dict[str, Any]], payload.get("tools") or []):
        entry["python"] = python_name(catalog, entry["name"])
    return {**result, "content": [{"type": "text", "text": orjson.dumps(payload).decode()}]}
