"""A running session's gateway, changed under it: the configuration was read again (``lazymcp.run.reload``).

Theory of operation. ``reconfigure`` compares the session's server entries with the new ones. An entry
that is new joins at once (started when it has no manifest, so that its tools are listed); an entry that
is gone or changed is *retiring*: it stays as it is while it owes the client an answer (a call in flight,
a request queued for it), and once it owes nothing (``settle``, called again until none is left) it is
stopped and removed, or replaced by its new entry, which the next call starts; a new entry without a
manifest of its own starts at once, listed meanwhile with the tools it had, so that a call of one of them
reaches it (it answers, or says the tool is unknown, once it has listed its own). A changed ``grant``
(``lazymcp.access.policy``) applies at once. Whenever the merged catalog's listing changes, the client
gets ``notifications/tools/list_changed``; when servers came or went, its prompt and resource lists are
announced changed too. Nothing here runs a process: the actions say what the driver does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from lazymcp.access.policy import Grant
from lazymcp.core.actions import Action, Say, Start, Stop, ToClient
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.servers import Server
from lazymcp.gateway.tool_requests import LIST_CHANGED_TOOLS
from lazymcp.protocol.errors import ConfigError
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.tools.manifest import Manifest

if TYPE_CHECKING:
    from lazymcp.gateway.front import Gateway

CHANGED_LISTS = ("notifications/prompts/list_changed", "notifications/resources/list_changed")


def reconfigure(
    gateway: Gateway,
    entries: Sequence[ServerEntry],
    grant: Grant | None,
    manifests: Mapping[str, Manifest | None],
    now: float,
) -> list[Action]:
    """Change ``gateway`` to serve ``entries`` with ``grant`` (None: every tool); ``manifests``: the known
    manifests of the entries that are new or changed. Returns what to do now.
    """
    old = {server.name: server.entry for server in gateway.servers}
    new = {entry.name: entry for entry in entries}
    waiting = gateway.servers.retiring
    waiting.clear()  # a later configuration decides alone
    for name, entry in old.items():
        if new.get(name) != entry:
            waiting[name] = None if name not in new else (new[name], manifests.get(name))
    added = [entry for entry in entries if entry.name not in old]
    for entry in added:
        gateway.servers.table[entry.name] = _server(entry, manifests.get(entry.name))
    _order(gateway, [entry.name for entry in entries])
    _grant(gateway, grant)
    actions = _settled(gateway, now)
    return actions + _relisted(gateway, now, servers_changed=bool(added))


def regrant(gateway: Gateway, grant: Grant | None, now: float) -> list[Action]:
    """Serve ``gateway``'s session with ``grant`` from now on (its principal's token changed, and with it
    what the policy grants); its servers stay as they are. Returns what to do now: the client is told the
    tool list changed when it did, and the prompt and resource lists too when their servers' grant did."""
    before = gateway.grant
    if grant == before:
        return []
    _grant(gateway, grant)
    lists = any(
        _reach(before, name, gateway.separator) != _reach(grant, name, gateway.separator)
        for name in gateway.servers.table
    )
    return _relisted(gateway, now, servers_changed=lists)


def _reach(grant: Grant | None, server: str, separator: str) -> tuple[bool, bool]:
    """What ``grant`` gives of ``server`` beyond its tools: its prompts (could any be named), its resources."""
    if grant is None:
        return True, True
    return grant.touches(server, separator), grant.resources(server, separator)


def _grant(gateway: Gateway, grant: Grant | None) -> None:
    """Every part of the session that asks what its principal may use, told ``grant``."""
    gateway.grant = gateway.merged.grant = grant
    gateway.handshakes = replace(gateway.handshakes, grant=grant)
    gateway.passthrough.grant = grant


def settle(gateway: Gateway, now: float) -> list[Action]:
    """Stop, remove or replace the retiring servers that owe nothing now; what to do."""
    if not gateway.servers.retiring:
        return []
    actions = _settled(gateway, now)
    return actions + _relisted(gateway, now, servers_changed=bool(actions)) if actions else []


def _settled(gateway: Gateway, now: float) -> list[Action]:
    waiting = gateway.servers.retiring
    actions: list[Action] = []
    for name, replacement in list(waiting.items()):
        server = gateway.servers.table.get(name)
        if server is None:
            del waiting[name]
            continue
        if server.queued or (server.upstream is not None and server.upstream.owed):
            continue  # its calls in flight are answered first
        del waiting[name]
        gateway.session.asked.forget(name)
        if server.life.running:
            why = "is no longer in the configuration" if replacement is None else "changed in the configuration"
            actions.append(Stop(f"server {name!r} {why}: stopped", name))
        if replacement is None:
            del gateway.servers.table[name]
            continue
        fresh = gateway.servers.table[name] = _server(*replacement)
        if fresh.tools is None and server.tools is not None:
            # no manifest of its own yet: it keeps the tools it had until its new process lists them, so
            # that a client calling them meanwhile reaches it rather than hearing they are unknown
            fresh.tools = server.tools
            gateway.servers.start(name)
            actions.append(Start(name))
    if actions or not waiting:
        _order(gateway, list(gateway.servers.table))
    return actions


def _server(entry: ServerEntry, manifest: Manifest | None) -> Server:
    server = Server(entry)
    if manifest is not None:
        server.tools, server.version, server.lists = manifest.tools, manifest.version, dict(manifest.lists)
    return server


def _order(gateway: Gateway, names: list[str]) -> None:
    """The session's servers in ``names``' order (those not named, retiring, last), told to each part."""
    table = gateway.servers.table
    ordered = {name: table[name] for name in names if name in table}
    ordered |= {name: server for name, server in table.items() if name not in ordered}
    gateway.servers.table = ordered
    entries = [server.entry for server in ordered.values()]
    gateway.entries = entries
    gateway.servers.entries = entries
    gateway.handshakes = replace(gateway.handshakes, entries=entries)
    gateway.passthrough.servers = list(ordered)


def _relisted(gateway: Gateway, now: float, *, servers_changed: bool) -> list[Action]:
    """The catalog built again: the client told what changed, and the servers without a tool list started."""
    before = gateway.catalog.version
    try:
        gateway.merged.rebuild(gateway.servers.tool_lists())
    except ConfigError as exc:  # checked before any session is changed: a collision here is a bug
        return [Say(f"the listing is left as it was: {exc.message}")]
    actions: list[Action] = []
    for server in gateway.servers:
        if server.tools is None and server.life.stopped and not server.life.refused(now):
            gateway.servers.start(server.name)  # its life: spawning, with a new upstream
            actions.append(Start(server.name))
    if not gateway.session.known:
        return actions
    if gateway.catalog.version != before:
        method = LIST_CHANGED_TOOLS.message["method"]
        frames = gateway.session.listeners(method) if gateway.session.modern else [LIST_CHANGED_TOOLS]
        actions += [ToClient(frame) for frame in frames]
    if servers_changed:
        for notification in CHANGED_LISTS:
            actions += gateway.relay.announce(Frame({"jsonrpc": "2.0", "method": notification}))
    return actions
