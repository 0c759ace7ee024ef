"""The scripted model: what it does next, from what a request shows it (the host's API aside).

It wants one tool of the sample catalog, ``issues_get``, called with its required arguments. It reads only
what a model would see: the tools defined in the request (name and schema), the names a host lists as
deferred, and the text of earlier tool results. Its steps, first that applies:

1. the target's schema is known (defined in the request with properties, or in a result's JSON): call it,
   directly when it is defined, else through ``invoke_tool``, else load it through the host's search;
2. the target's name is known: load it through the host's search when it is deferred, else ask
   ``describe_tools`` for it (loading that through the host's search first when it is deferred);
3. nothing known: ``search_tools``, or the host's own search.

It never sends an argument whose name it has not seen in a schema (``Unseen`` is raised instead), and it
takes argument values from ``VALUES`` by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TARGET = "issues_get"
VALUES: dict[str, Any] = {"issue_id": "ISS-42"}
"""The value the model gives each required argument of the target, by the name its schema gives it."""
QUERY = "fetch a single issue by its ID"
HOST_PROPERTIES = {"wait_for_previous"}
"""Parameters a host adds to every tool's schema (Gemini CLI's): they say nothing of the tool's own."""
META = ("describe_tools", "search_tools", "invoke_tool")


class Unseen(Exception):
    """The model would have to guess: an argument name that no schema it saw has."""


@dataclass
class View:
    """What one request shows the model, in host-neutral terms."""

    tools: dict[str, dict[str, Any]]
    """Callable tools by the host's name for them: their input schema."""
    deferred: set[str] = field(default_factory=set[str])
    """Names the host lists without a schema (loaded through its search)."""
    results: list[str] = field(default_factory=list[str])
    """The text of every tool result so far, in order."""
    search: str | None = None
    """The host's own search tool, when it has one in this request."""
    searched: list[str] = field(default_factory=list[str])
    """The queries the model gave the host's search so far."""


@dataclass
class Call:
    """A tool call the model makes: the host's name of the tool and the arguments."""

    name: str
    arguments: dict[str, Any]
    host_search: bool = False
    """A call of the host's own search tool."""


def named(names: set[str] | dict[str, Any], tool: str) -> str | None:
    """The host's name for a lazymcp tool (the tool's own, or it behind the host's prefix for the server)."""
    for name in names:
        if name == tool or name.endswith(("__" + tool, "_lazy_" + tool)):
            return name
    return None


def _schemas_in(value: Any, tool: str) -> dict[str, Any] | None:
    if isinstance(value, dict):
        name = value.get("name")
        if isinstance(name, str) and (name == tool or name.endswith("__" + tool)):
            for key in ("inputSchema", "input_schema", "parameters"):
                schema = value.get(key)
                if isinstance(schema, dict) and _own_properties(schema):
                    return schema
        for item in value.values():
            found = _schemas_in(item, tool)
            if found:
                return found
    elif isinstance(value, list):
        for item in value:
            found = _schemas_in(item, tool)
            if found:
                return found
    return None


def _own_properties(schema: dict[str, Any]) -> set[str]:
    return set(schema.get("properties") or {}) - HOST_PROPERTIES


def parsed_json(text: str) -> Any:
    """The JSON a tool result carries, also inside a host's wrapping (Gemini CLI's ``<untrusted_context>``)."""
    for candidate in (text, text[text.find("{") : text.rfind("}") + 1]):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def schema_from_results(results: list[str], tool: str) -> dict[str, Any] | None:
    for text in reversed(results):
        found = _schemas_in(parsed_json(text), tool)
        if found:
            return found
    return None


def checked(schema: dict[str, Any] | None, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments``, once every name is one the schema shows."""
    properties = (schema or {}).get("properties") or {}
    unseen = [name for name in arguments if name not in properties]
    if unseen:
        raise Unseen(f"argument(s) {unseen} not in the schema the model saw: {sorted(properties)}")
    return arguments


def target_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    required = schema.get("required") or []
    missing = [name for name in required if name not in VALUES]
    if missing:
        raise Unseen(f"the model has no value for the required argument(s) {missing}")
    return checked(schema, {name: VALUES[name] for name in required})


def done(view: View) -> bool:
    """The target answered with the arguments it was given (the sample tools echo them)."""
    for text in view.results:
        parsed = parsed_json(text)
        if isinstance(parsed, dict) and all(parsed.get(k) == v for k, v in VALUES.items()):
            return True
    return False


def next_call(view: View) -> Call | None:
    """The model's next tool call, or None when it has what it came for."""
    if done(view):
        return None
    target = named(view.tools, TARGET)
    schema = view.tools[target] if target and _own_properties(view.tools[target]) else None
    schema = schema or schema_from_results(view.results, TARGET)
    if schema is not None:
        arguments = target_arguments(schema)
        if target:
            return Call(target, arguments)
        invoke = named(view.tools, "invoke_tool")
        if invoke:
            return Call(invoke, checked(view.tools[invoke], {"name": TARGET, "arguments": arguments}))
        return _load(view, [TARGET] if _findable(view, TARGET) else ["invoke_tool"])
    known = target or named(view.deferred, TARGET) or any(TARGET in text for text in view.results)
    if known:
        if target is None and _findable(view, TARGET):
            return _load(view, [TARGET])
        describe = named(view.tools, "describe_tools")
        if describe:
            return Call(describe, checked(view.tools[describe], {"names": [TARGET]}))
        # it will be called through invoke_tool when it is not defined: load that at once
        return _load(view, ["describe_tools"] if target else ["describe_tools", "invoke_tool"])
    search = named(view.tools, "search_tools")
    if search:
        return Call(search, checked(view.tools[search], {"query": QUERY}))
    if named(view.deferred, "search_tools") or QUERY in view.searched:
        return _load(view, ["search_tools"])
    return _load(view, [], keywords=QUERY)


def _findable(view: View, tool: str) -> bool:
    """Whether the host's search may load ``tool``: it lists it, or it lists no names and the model has not
    searched for it yet."""
    if named(view.deferred, tool):
        return True
    return view.search is not None and not view.deferred and _query(view, [tool]) not in view.searched


def _query(view: View, tools: list[str], keywords: str | None = None) -> str:
    schema = view.tools.get(view.search or "") or {}
    listed = [named(view.deferred, tool) for tool in tools]
    if tools and all(listed) and "select:" in json.dumps(schema):
        return "select:" + ",".join(name for name in listed if name)
    return keywords or " ".join(tool.replace("_", " ") for tool in tools)


def _load(view: View, tools: list[str], keywords: str | None = None) -> Call:
    """A call of the host's search to load lazymcp's ``tools``: by their names where the host lists them
    (Claude Code's ``select:`` form), else by the words of their names; or a search for ``keywords``."""
    if view.search is None:
        raise Unseen("the model needs a tool that the request neither defines nor lets it search for")
    query = _query(view, tools, keywords)
    if query in view.searched and not view.deferred:
        raise Unseen(f"the host's search found nothing usable for {query!r}, twice")
    return Call(view.search, checked(view.tools.get(view.search) or {}, {"query": query}), host_search=True)
