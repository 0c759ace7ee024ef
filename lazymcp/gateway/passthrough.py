"""What the gateway routes besides tools: prompts by their server's prefix, resources by URI, and the
list requests (``prompts/list``, ``resources/list``, ``resources/templates/list``) that every server
answers a part of.

A list request is sent to each enabled server under the gateway's own id (or answered from its
manifest when it is not running); the parts are joined in the configuration's order, prompts renamed
like tools. A server that fails or has no such method adds nothing. A prompt or a URI listed twice is
listed once, as the first server in the configuration listed it, and is that server's: a server added
later cannot take over another's reads (a URI two servers list is named to the operator once, in
``notes``). A prompt listed is got from the server that listed it; one not listed yet, from the one
server whose prefix begins its name (``namespace.check_prefixes`` leaves one at most). Each resource
listed remembers its server, so ``resources/read`` and ``subscribe`` reach it; a URI no list has shown
goes to the server whose URI templates' scheme matches it, else it is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from lazymcp.access.policy import Grant
from lazymcp.gateway.namespace import Namespace
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.jsonrpc import Message, RequestId

LISTS: Final = {
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
"""Each list method, and the member of its result that holds the entries."""
BY_URI: Final = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
ROUTED: Final = BY_URI | {"prompts/get", "completion/complete"}
"""Requests that go to one server: by the URI, the prompt or the reference they name."""
PREFIX: Final = "lazymcp-gateway-list-"


@dataclass
class Gather:
    """One client list request, waiting for each server's part."""

    request_id: RequestId
    method: str
    waiting: set[str]
    parts: dict[str, list[Any]] = field(default_factory=lambda: {})


@dataclass
class Passthrough:
    """Prompt and resource routing of one gateway connection."""

    servers: Sequence[str]
    """Enabled servers, in the configuration's order."""
    names: Namespace
    resources: dict[str, str] = field(default_factory=lambda: {})
    schemes: dict[str, str] = field(default_factory=lambda: {})
    gathers: dict[str, Gather] = field(default_factory=lambda: {})
    count: int = 0
    notes: list[str] = field(default_factory=lambda: [])
    """What the operator should read on stderr, taken by ``take_notes``."""
    shadowed: set[str] = field(default_factory=lambda: set())
    """The URIs two servers list that a note has named (once each)."""
    grant: Grant | None = None
    """What the session's principal may use (``lazymcp.access.policy``): prompts by their gateway names, a
    server's resources and templates by ``<server><separator>resources``; None: everything."""

    def sees(self, server: str, method: str) -> bool:
        """May the principal see anything of ``server``'s in the list ``method`` (else it is not asked)?"""
        grant, separator = self.grant, self.names.separator
        if grant is None:
            return True
        return grant.touches(server, separator) if method == "prompts/list" else grant.resources(server, separator)

    def begin(self, request_id: RequestId, method: str, params: Mapping[str, Any]) -> list[tuple[str, Message]]:
        """The request each server gets for a client's list request: (server, request)."""
        servers = [server for server in self.servers if self.sees(server, method)]
        if not servers:
            return []
        self.count += 1
        key = f"{PREFIX}{self.count}-"
        self.gathers[key] = Gather(request_id, method, set(servers))
        plain = {k: v for k, v in params.items() if k != "cursor"}  # one page of each server
        return [(s, {"jsonrpc": "2.0", "id": f"{key}{s}", "method": method, "params": plain}) for s in servers]

    def method_of(self, server: str, request_id: object) -> str | None:
        """The list method of a part still awaited from ``server`` (None: no such part)."""
        gather = self.gathers.get(str(request_id).removesuffix(server))
        return gather.method if gather is not None and server in gather.waiting else None

    def listed(self, server: str, message: Message) -> tuple[str, list[Any]] | None:
        """The list method and entries of a server's answer to its part of a list (a server without that
        method lists nothing); None when the answer is no part's, or an error."""
        method = self.method_of(server, message.get("id"))
        error_code = jsonrpc.field(message.get("error"), "code")
        if method is None or ("result" not in message and error_code != ErrorCode.METHOD_NOT_FOUND):
            return None
        entries = jsonrpc.field(message.get("result"), LISTS[method])
        return method, cast(list[Any], entries) if isinstance(entries, list) else []

    def part(self, server: str, message: Message) -> Message | None:
        """Take a server's part (or failure); the client's answer once every part is in."""
        own = str(message.get("id"))
        gather = self.gathers.get(own.removesuffix(server))
        if gather is None or server not in gather.waiting:
            return None
        gather.waiting.discard(server)
        result = message.get("result")
        entries = jsonrpc.field(result, LISTS[gather.method])
        gather.parts[server] = cast(list[Any], entries) if isinstance(entries, list) else []
        if gather.waiting:
            return None
        del self.gathers[own.removesuffix(server)]
        return {"jsonrpc": "2.0", "id": gather.request_id, "result": {LISTS[gather.method]: self._joined(gather)}}

    def take_notes(self) -> list[str]:
        """What the operator should read since the last call: each URI two servers list, once."""
        notes, self.notes = self.notes, []
        return notes

    def _joined(self, gather: Gather) -> list[Any]:
        """The parts in the configuration's order; an entry whose prompt name or URI an earlier entry
        listed is left out, so each has one owner: the first server to list it."""
        joined: list[Any] = []
        listers: dict[str, list[str]] = {}  # each gateway prompt name or URI listed: its servers, first first
        for server in self.servers:
            for entry in gather.parts.get(server, []):
                if not isinstance(entry, dict):
                    continue
                entry = cast(dict[str, Any], entry)
                if gather.method == "prompts/list" and isinstance(entry.get("name"), str):
                    name = self.names.name(server, entry["name"])
                    if (self.grant is not None and not self.grant(name)) or not _first(listers, name, server):
                        continue
                    self.names.owners[name] = (server, entry["name"])
                    entry = {**entry, "name": name}
                elif gather.method == "resources/list" and isinstance(entry.get("uri"), str):
                    if not _first(listers, entry["uri"], server):
                        continue
                    self.resources[entry["uri"]] = server
                elif gather.method == "resources/templates/list" and isinstance(entry.get("uriTemplate"), str):
                    scheme = entry["uriTemplate"].partition(":")[0]
                    self.schemes.setdefault(scheme, server)
                joined.append(entry)
        if gather.method == "resources/list":
            self._note_shadowed(listers)
        return joined

    def _note_shadowed(self, listers: Mapping[str, list[str]]) -> None:
        """Name each URI that more than one server lists, once a session: one of them is not read."""
        for uri, servers in listers.items():
            if len(servers) > 1 and uri not in self.shadowed:
                self.shadowed.add(uri)
                named = ", ".join(map(repr, servers[:-1])) + f" and {servers[-1]!r}"
                self.notes.append(
                    f"resource {uri!r} is listed by servers {named}: it is read from {servers[0]!r}, "
                    "the first in the configuration"
                )

    def route(self, method: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | str:
        """The server a prompt, resource or completion request goes to, with its params; else why not."""
        if method in BY_URI:
            return self._by_uri(params.get("uri"), dict(params))
        if method == "prompts/get":
            owner = self._prompt(params.get("name"))
            if owner is None or not self._granted(params.get("name")):
                return f"Unknown prompt: {params.get('name')!r}"
            return owner[0], {**params, "name": owner[1]}
        ref = params.get("ref")
        ref = cast(dict[str, Any], ref) if isinstance(ref, dict) else {}
        if ref.get("type") == "ref/prompt":
            owner = self._prompt(ref.get("name"))
            if owner is None or not self._granted(ref.get("name")):
                return f"Unknown prompt: {ref.get('name')!r}"
            return owner[0], {**params, "ref": {**ref, "name": owner[1]}}
        return self._by_uri(ref.get("uri"), dict(params))

    def _prompt(self, name: object) -> tuple[str, str] | None:
        """(server, its prompt name) of a gateway prompt name: the listed one's, else the one server whose
        prefix begins the name (a 2026 client need not list before it gets). Two such servers are refused
        with the configuration; should they meet here, the name is unknown rather than either's."""
        if not isinstance(name, str):
            return None
        listed = self.names.owner(name)
        if listed is not None:
            return listed
        owners = [server for server in self.servers if name.startswith(f"{server}{self.names.separator}")]
        if len(owners) != 1:
            return None
        original = name.removeprefix(f"{owners[0]}{self.names.separator}")
        return (owners[0], original) if original else None

    def _granted(self, name: object) -> bool:
        """May the principal use the prompt of this gateway name (the same rule as its tools)?"""
        return self.grant is None or (isinstance(name, str) and self.grant(name))

    def _by_uri(self, uri: object, params: dict[str, Any]) -> tuple[str, dict[str, Any]] | str:
        if not isinstance(uri, str):
            return "Invalid params: 'uri' must be a string"
        server = self.resources.get(uri) or self.schemes.get(uri.partition(":")[0])
        if server is None or (self.grant is not None and not self.grant.resources(server, self.names.separator)):
            return f"Unknown resource: {uri!r} (list resources first)"
        return server, params


def _first(listers: dict[str, list[str]], key: str, server: str) -> bool:
    """Note that ``server`` lists ``key``; whether this entry is the first to (the rest are left out)."""
    servers = listers.get(key)
    if servers is None:
        listers[key] = [server]
        return True
    if server not in servers:
        servers.append(server)
    return False
