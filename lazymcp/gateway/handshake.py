"""The gateway's two handshakes: as the client's one server (its ``initialize`` result: the lazy-tools
extension advertised, every capability a server may bring, the servers' prefixes in its instructions),
and as each server's client (its ``initialize`` params, made from the client's: its protocol version,
its capabilities without the extension, and who it is). ``Handshakes`` holds both for one gateway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from lazymcp.access.policy import Grant
from lazymcp.core.entries import ServerEntry
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.surfaces.instructions import Group, written
from lazymcp.surfaces.methods import advertise
from lazymcp.surfaces.options import Options
from lazymcp.surfaces.signatures import identifier

LATEST: Final = "2025-11-25"
SUPPORTED: Final = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", LATEST})
"""Protocol versions the gateway's handshakes take; others are answered with the latest."""


def negotiated(version: object) -> str:
    """The protocol version a handshake settles on for the one asked."""
    return version if isinstance(version, str) and version in SUPPORTED else LATEST


def instructions(
    entries: Iterable[ServerEntry],
    separator: str,
    tools: Mapping[str, Sequence[str]],
    grant: Grant | None = None,
    code: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The gateway's ``initialize`` instructions, within 4 KiB: each server's prefix, what it is for, how many
    tools it has and a few of their names (``tools``: each server's, by gateway name). With a ``grant``
    (``lazymcp.access.policy``), only the servers the principal has something of: a tool, their resources,
    or a pattern naming the server itself (its tools not known yet). In code mode (``code``: each server's
    tools by Python name), each server is named as its namespace in the code, and its tools as the code
    calls them; servers whose names make one identifier (``a-b``, ``a_b``) share its namespace, as their
    tools do (``lazymcp.surfaces.codemode.python_names``): one line, saying what each is for."""
    lead = "One endpoint for these MCP servers; each tool's name starts with its server's:"
    if code is not None:
        lead = "One endpoint for these MCP servers: run_code runs Python calling a tool as `await namespace.tool()`:"

    def shown(name: str) -> bool:
        if grant is None or tools.get(name):
            return True
        return grant.resources(name, separator) or grant.names_server(name, separator)

    granted = [entry for entry in entries if shown(entry.name)]
    if code is None:
        prefixed = [Group(f"{e.name}{separator}", e.description or e.category, tools.get(e.name, ())) for e in granted]
        return written(lead, prefixed)
    spaces: dict[str, list[ServerEntry]] = {}
    for entry in granted:
        spaces.setdefault(identifier(entry.name), []).append(entry)
    groups: list[Group] = []
    for space, sharing in spaces.items():
        described = dict.fromkeys(text for e in sharing if (text := (e.description or e.category or "").strip()))
        names = [name for e in sharing for name in code.get(e.name, ())]
        groups.append(Group(space, " ".join(described) or None, names))
    return written(lead, groups)


def server_result(version: object, described: str, options: Options, server_info: Mapping[str, Any]) -> dict[str, Any]:
    """The gateway's ``initialize`` result for a client that asked for protocol ``version``, its servers
    ``described`` in its instructions."""
    result = {
        "protocolVersion": negotiated(version),
        "capabilities": {
            "tools": {"listChanged": True},
            "prompts": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "completions": {},
            "logging": {},
        },
        "serverInfo": dict(server_info),
        "instructions": described,
    }
    return advertise(result, options)


def client_params(client: Mapping[str, Any], client_info: Mapping[str, Any]) -> dict[str, Any]:
    """The gateway's ``initialize`` params to a server, from the client's (``{}``: no client's)."""
    capabilities = cast(dict[str, Any], client.get("capabilities") or {})
    return {
        "protocolVersion": negotiated(client.get("protocolVersion")),
        "capabilities": {k: v for k, v in capabilities.items() if k != "extensions"},
        "clientInfo": client.get("clientInfo") or dict(client_info),
    }


@dataclass(frozen=True, slots=True)
class Handshakes:
    """The two handshakes of one gateway, whose servers are ``entries``."""

    entries: Sequence[ServerEntry]
    separator: str
    options: Options
    info: Mapping[str, Any]
    """Who the gateway is: its ``serverInfo``, and its ``clientInfo`` when the client names none."""
    tools: Callable[[], Mapping[str, Sequence[str]]] = dict
    """Each server's tools in the session's catalog, by gateway name (its instructions name a few)."""
    grant: Grant | None = None
    """What the session's principal may use: only the servers it has something of are described; None: all."""

    def result(self, version: object, code: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
        """The gateway's ``initialize`` result for a client that asked for protocol ``version`` (``code``: in
        code mode, each server's tools by Python name)."""
        described = instructions(self.entries, self.separator, self.tools(), self.grant, code)
        return server_result(version, described, self.options, self.info)

    def params(self, client: Mapping[str, Any] | None, *, wait: bool) -> dict[str, Any] | None:
        """The params of the gateway's ``initialize`` to a server, from the client's (None: not known yet,
        and the server's handshake ``wait``s for it)."""
        if client is None and wait:
            return None
        params = client_params(client or {}, self.info)
        if not Frame({"params": params}).fits():  # what the client said of itself cannot be passed on
            params = client_params({"protocolVersion": params["protocolVersion"]}, self.info)
        return params
