"""The gateway's one catalog: every server's tools under their gateway names, with the categories,
descriptions and per-tool metadata of the configuration, and the mode ``auto`` picks by budget.

``Merged`` holds a session's catalog, builds it again when a server's tools change, and is the door of
its ``tools/*`` requests: answered through ``lazymcp.surfaces.methods.dispatch``, or ``Routed`` to a server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import orjson

from lazymcp.access.policy import Grant
from lazymcp.core.entries import ServerEntry
from lazymcp.core.session import ClientSession
from lazymcp.gateway.config import tool_meta
from lazymcp.gateway.namespace import Namespace
from lazymcp.gateway.related import as_served
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.messages import DESCRIBE, DESCRIBE_BATCH, Mode, Tool
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.codemode import Code, python_name
from lazymcp.surfaces.hosts import Session, choose
from lazymcp.surfaces.metacalls import error, unknown_tool
from lazymcp.surfaces.metatools import DESCRIBE_TOOLS, SEARCH_TOOLS
from lazymcp.surfaces.methods import Answer, Caller, Run, dispatch, enveloped
from lazymcp.surfaces.options import Options
from lazymcp.tools.metadata import Metadata, ToolMeta
from lazymcp.tools.packed import Packed, pack

GATEWAY_META = "io.lazymcp/gateway"
"""The ``_meta`` key under which a described tool of a failed server carries ``{"unavailable": reason}``."""
DEFAULT_BUDGET = 20_000
"""Tokens ``auto`` lets a stock client's describe listing cost before it serves the proxy surface."""


def merged_catalog(
    servers: Iterable[tuple[ServerEntry, Sequence[Tool]]],
    options: Options,
    names: Namespace,
    *,
    auto: bool = False,
    budget: int = DEFAULT_BUDGET,
    grant: Grant | None = None,
) -> Catalog:
    """One catalog of every server's tools, registering each name in ``names``.

    A server's tools fall in its category (``lazymcp.category``, else its name), described by its
    ``lazymcp.description``; ``defer: false`` makes that category a core one. The catalog is packed:
    each tool is renamed and encoded one at a time, so a manifest's tools are never all decoded at once,
    and a manifest then reads its tools from the catalog's JSON.

    ``grant`` (``lazymcp.access.policy``): only the tools it allows are in the catalog and in ``names``, and
    only they are named as related tools; None: every tool.

    Raises:
        ConfigError: two tools get one gateway name.
    """
    declared: dict[str, ToolMeta] = {}
    categories: dict[str, str] = {}
    core: list[str] = []
    renamed: list[tuple[str, Sequence[Tool], list[str]]] = []
    for entry, server_tools in servers:
        server = entry.name
        category = entry.category or server
        categories[category] = entry.description or f"The tools of the {server} server."
        if not entry.defer:
            core.append(category)
        originals = server_tools.names if isinstance(server_tools, Packed) else [tool["name"] for tool in server_tools]
        if grant is not None:
            originals = [original for original in originals if grant(names.name(server, original))]
        gateway_names = names.add(server, originals)
        renamed.append((server, server_tools, gateway_names))
        meta = ToolMeta(category=category)
        declared.update(dict.fromkeys(gateway_names, meta))
        declared.update(_granted(tool_meta(entry, lambda original, server=server: names.name(server, original)), grant))
    metadata = Metadata(declared, categories, source="gateway configuration")
    options = replace(options, metadata=metadata, core_tools=tuple(core) or options.core_tools)
    blobs: list[bytes] = []
    for server, server_tools, gateway_names in renamed:
        related = _related(server, names, grant)
        if grant is not None:  # the session's own subset: the manifest keeps its own tools
            kept = set(gateway_names)
            chosen = [(tool, names.name(server, tool["name"])) for tool in server_tools]
            blobs.extend(pack(as_served(tool, name, related)[0]) for tool, name in chosen if name in kept)
            continue
        served = [as_served(tool, name, related) for tool, name in zip(server_tools, gateway_names, strict=True)]
        server_blobs = [pack(tool) for tool, _ in served]
        if isinstance(server_tools, Packed) and not any(changed for _, changed in served):
            server_tools.share(server_blobs)  # a manifest's: it and the catalog keep one copy, and what the
        blobs.extend(server_blobs)  # manifest held goes now, for the next server's to reuse
    tools = Packed(blobs, [name for _, _, gateway_names in renamed for name in gateway_names])
    chosen = replace(options, mode="describe") if auto else options
    catalog = Catalog.build(tools, chosen, packed=True, separator=names.separator)
    if not auto:
        return catalog
    mode = auto_mode(catalog, budget, core=bool(core))
    return catalog if mode == "describe" else catalog.with_mode(mode)


def _related(server: str, names: Namespace, grant: Grant | None) -> Callable[[str], str | None]:
    """The gateway name of a tool of ``server`` another of its tools declares related; None: refused."""

    def named(original: str) -> str | None:
        name = names.name(server, original)
        return name if grant is None or grant(name) else None

    return named


def _granted(metas: Mapping[str, ToolMeta], grant: Grant | None) -> Mapping[str, ToolMeta]:
    """Declared metadata of the tools ``grant`` allows, naming only those as related tools."""
    if grant is None:
        return metas
    return {
        name: replace(meta, related=tuple(filter(grant, meta.related))) for name, meta in metas.items() if grant(name)
    }


def auto_mode(catalog: Catalog, budget: int, *, core: bool) -> Mode:
    """``describe`` while a stock client's stub listing fits ``budget`` tokens; else ``core`` (when some
    server is not deferred) or ``proxy``."""
    from lazymcp.tools.tokens import Size

    if Size.of(catalog.listing("stock", "summary")).tokens <= budget:
        return "describe"
    return "core" if core else "proxy"


def mark_unavailable(result: dict[str, Any], down: Mapping[str, str], names: Namespace) -> dict[str, Any]:
    """A ``tools/describe(_batch)`` result whose tools of a failed server (``down``: reason by server) say so."""
    if not down:
        return result

    def mark(tool: dict[str, Any]) -> dict[str, Any]:
        owner = names.owner(tool["name"])
        if owner is None or owner[0] not in down:
            return tool
        return {**tool, "_meta": {**(tool.get("_meta") or {}), GATEWAY_META: {"unavailable": down[owner[0]]}}}

    if "tool" in result:
        return {**result, "tool": mark(result["tool"])}
    return {**result, "tools": [mark(tool) for tool in result["tools"]]}


def mark_described(
    result: dict[str, Any], down: Mapping[str, str], names: Namespace, unlisted: Mapping[str, str]
) -> dict[str, Any]:
    """A ``describe_tools`` (or ``search_tools``) meta-tool result whose payload names the tools it shows of
    a failed server under ``unavailable`` (tool name -> reason), as ``tools/describe`` marks them in
    ``_meta``, and the servers no listing shows yet under ``unlisted`` (server -> reason)."""
    content = result.get("content")
    if not (down or unlisted) or not isinstance(content, list) or not content:
        return result
    first = cast(list[Any], content)[0]
    text = jsonrpc.field(first, "text")
    try:
        payload = orjson.loads(text) if isinstance(text, str) else None
    except orjson.JSONDecodeError:
        return result
    if not isinstance(payload, dict) or not isinstance(cast(dict[str, Any], payload).get("tools"), list):
        return result
    payload = cast(dict[str, Any], payload)
    unavailable: dict[str, str] = {}
    for tool in cast(list[Any], payload["tools"]):
        name = jsonrpc.field(tool, "name")
        owner = names.owner(name) if isinstance(name, str) else None
        if isinstance(name, str) and owner is not None and owner[0] in down:
            unavailable[name] = down[owner[0]]
    if not unavailable and not unlisted:
        return result
    marks = {"unavailable": unavailable} if unavailable else {}
    marks |= {"unlisted": dict(unlisted)} if unlisted else {}
    marked = orjson.dumps({**payload, **marks}).decode()
    return {**result, "content": [{**first, "text": marked}, *cast(list[Any], content)[1:]]}


@dataclass(frozen=True, slots=True)
class Seed:
    """A merged catalog and its names, built from the manifests ``key`` names (server, fetched, version)."""

    key: tuple[tuple[object, ...], ...]
    catalog: Catalog
    names: Namespace
    grant: Grant | None = None
    """The grant its tools were chosen by (``lazymcp.access.policy``); None: every tool."""


@dataclass(slots=True)
class Routed:
    """A call the catalog leaves to a server: ``server`` (None: no server has a tool of that name), the
    tool's own ``name`` there, and the ``arguments`` to send (None: as they came)."""

    server: str | None
    name: object
    arguments: dict[str, Any] | None = None


@dataclass
class Merged:
    """The catalog of one gateway session, and its door."""

    options: Options
    separator: str
    mode: str | None = None
    """``auto``: the describe listing while its stubs fit ``budget`` tokens, the proxy surface beyond."""
    budget: int = DEFAULT_BUDGET
    catalog: Catalog = field(init=False)
    names: Namespace = field(init=False)
    seed: Seed | None = None
    grant: Grant | None = None
    """Only the tools it allows are in the catalog (``lazymcp.access.policy``); None: every tool."""

    def build(self, servers: Sequence[tuple[ServerEntry, Sequence[Tool]]], key: tuple[tuple[object, ...], ...]) -> None:
        """The catalog of ``servers``; ``seed``'s when it was built from the same manifests (``key``).

        Raises:
            ConfigError: two tools get one name.
        """
        if self.seed is not None and self.seed.key == key and self.seed.grant == self.grant:
            self.catalog, self.names = self.seed.catalog, self.seed.names  # neither is changed in place
        else:
            self.rebuild(servers)
        self.seed = Seed(key, self.catalog, self.names, self.grant)

    def rebuild(self, servers: Sequence[tuple[ServerEntry, Sequence[Tool]]]) -> None:
        """The catalog, built again.

        Raises:
            ConfigError: two tools get one name (the catalog is left as it was).
        """
        names = Namespace(self.separator, prefixed=True)
        auto = self.mode == "auto"
        catalog = merged_catalog(servers, self.options, names, auto=auto, budget=self.budget, grant=self.grant)
        self.catalog, self.names = catalog, names

    def tools_by_server(self) -> dict[str, list[str]]:
        """Each server's tools in the catalog, by gateway name, in catalog order."""
        found: dict[str, list[str]] = {}
        for name in self.catalog.index:
            owner = self.names.owner(name)
            if owner is not None:
                found.setdefault(owner[0], []).append(name)
        return found

    def code_tools(self, session: ClientSession) -> dict[str, list[str]] | None:
        """Each server's tools by the Python names code mode's code calls them (``namespace.function``), when
        ``session``'s client is served code mode (``lazymcp.surfaces.hosts.choose``); else None."""
        info = (session.record.initialize or {}).get("clientInfo")
        if choose(self.catalog, Session(info, session.record.mode, session.environ)).mode != "code":
            return None
        return {
            server: [python_name(self.catalog, tool) or tool for tool in tools]
            for server, tools in self.tools_by_server().items()
        }

    def answer(
        self,
        method: str,
        params: object,
        caller: Caller,
        down: Callable[[], Mapping[str, str]],
        unlisted: Callable[[], Mapping[str, str]] = dict,
    ) -> Answer | Routed:
        """A ``tools/*`` request through the one door: answered here (a failed server's tools marked so,
        ``down()``: the reason of each failed server; ``unlisted()``: the servers whose tools are not
        listed yet), or the call a server runs.

        Raises:
            LazyMCPError: the request is malformed.
        """
        outcome = dispatch(method, self.catalog, params, caller)
        if isinstance(outcome, Code):  # run_code: the driver runs it (lazymcp.run.sandbox)
            return outcome
        if isinstance(outcome, Answer):
            result = outcome.result
            name = jsonrpc.field(params, "name")
            if method in (DESCRIBE, DESCRIBE_BATCH):
                result = mark_unavailable(result, down(), self.names)
            elif method == "tools/call" and self.catalog.canonical_meta_name(str(name)) in (
                DESCRIBE_TOOLS,
                SEARCH_TOOLS,
            ):
                result = mark_described(result, down(), self.names, unlisted())
            return Answer(result, outcome.changed)
        if isinstance(outcome, Run):
            name, arguments = outcome.name, outcome.arguments
        else:
            name, arguments = jsonrpc.field(params, "name"), None
        owner = self.names.owner(name) if isinstance(name, str) else None
        if owner is None and isinstance(name, str):  # no server has it: the closest names, for the model
            failed = down()
            waited = next((why for server, why in failed.items() if name.startswith(server + self.names.separator)), "")
            if waited and name.split(self.names.separator)[0] in unlisted():  # failed before it listed a tool
                answer = error("server_unlisted", f"No tool {name!r} is known yet: {waited}", name=name)
                return cast(Answer, enveloped(method, answer, caller))
            return cast(Answer, enveloped(method, unknown_tool(self.catalog, name), caller))
        if owner is None:
            return Routed(None, name)
        return Routed(owner[0], owner[1], arguments)
