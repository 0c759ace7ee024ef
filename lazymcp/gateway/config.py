"""Reading a gateway configuration: the ``mcpServers`` (Claude Desktop, Cursor, ``.mcp.json``) and
``servers`` (VS Code) files people already have, plus lazymcp's own per-server and per-tool settings.

Every error is one line naming the file, the server and the field (``ConfigError``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from lazymcp.access.policy import Policy, parse_policy
from lazymcp.access.ratelimit import parse_rate
from lazymcp.access.signin import parse_sign_in
from lazymcp.core.entries import ServerEntry, transport_of
from lazymcp.gateway.env_file import read_env_file
from lazymcp.gateway.sources import claude_project, with_comments
from lazymcp.gateway.variables import Variables, workspace_of
from lazymcp.local.files import read_json
from lazymcp.protocol.errors import CatalogError, ConfigError
from lazymcp.protocol.messages import MODES, SEPARATOR
from lazymcp.protocol.names import one_edit_away
from lazymcp.tools.metadata import ToolMeta, parse_metadata

STDIO_KEYS = frozenset({"command", "args", "env", "cwd", "envFile", "share"})
REMOTE_KEYS = frozenset({"url", "headers", "oauth"})
COMMON_KEYS = frozenset(
    {"type", "transport", "lazymcp", "disabled", "enabled", "description", "name", "timeout", "rateLimit"}
)
ENTRY_KEYS = STDIO_KEYS | REMOTE_KEYS | COMMON_KEYS
"""Every key of a server's entry that lazymcp reads: the one list a misspelled key is checked against."""
SERVER_KEYS = frozenset({"defer", "enabled", "category", "description", "tools", "inherit_env"})
"""What a server's ``lazymcp`` key may hold."""
SHARES = ("principal", "session")
"""What a server's ``share`` may be: one process per principal (the default) or per session, over HTTP."""
TOP_KEYS = frozenset({"separator", "servers", "mode", "budget", "access", "hosts"})
"""What the top-level ``lazymcp`` block may hold (``servers``: per-server settings by server name)."""


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """Every server of one configuration file, in the file's order."""

    servers: tuple[ServerEntry, ...]
    separator: str = SEPARATOR
    mode: str | None = None
    budget: int | None = None
    source: str = "config"
    warnings: tuple[str, ...] = ()
    access: Policy | None = None
    """Which principal may use which tool (``lazymcp.access.policy``); None: everyone, every tool."""
    hosts: tuple[tuple[str, str], ...] = ()
    """A mode by host (``clientInfo.name``): ``lazymcp.hosts``."""

    @property
    def enabled(self) -> tuple[ServerEntry, ...]:
        return tuple(server for server in self.servers if server.enabled)


class _Reader:
    """One file's servers, read with the file's name in every error; every problem is kept (``problems``),
    and reading goes on past it, so that all of a file's problems can be named at once."""

    def __init__(self, source: str, variables: Variables) -> None:
        self.source = source
        self.variables = variables
        self.unknown: list[str] = []
        self.problems: list[str] = []

    def fail(self, server: str | None, message: str) -> ConfigError:
        where = self.source if server is None else f"{self.source}: server {server!r}"
        return ConfigError(f"{where}: {message}")

    def tried(self, default: _T, read: Callable[[], _T]) -> _T:
        """What ``read`` gives, else ``default`` with its problem kept."""
        try:
            return read()
        except ConfigError as exc:
            self.problems.append(exc.message)
            return default

    def obj(self, server: str | None, value: object, message: str) -> Mapping[str, object]:
        """``value`` as a JSON object, else the error ``message`` (naming ``server`` when given)."""
        if not isinstance(value, Mapping):
            raise self.fail(server, message)
        return cast(Mapping[str, object], value)

    def strings(self, server: str, key: str, value: object) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in cast(list[object], value)):
            raise self.fail(server, f"field {key!r} must be a list of strings")
        return cast(list[str], value)

    def expanded(self, server: str, key: str, value: str) -> str:
        """A field's value with the clients' variables expanded (``lazymcp.gateway.variables``)."""
        return self.variables.expand(value, f"{self.source}: server {server!r}, field {key!r}")

    def mapping(self, server: str, key: str, value: object) -> dict[str, str]:
        if not isinstance(value, Mapping) or not all(
            isinstance(v, str) for v in cast(Mapping[str, object], value).values()
        ):
            raise self.fail(server, f"field {key!r} must be an object of strings")
        where = f"{self.source}: server {server!r}, field {key!r}"
        items = cast(Mapping[str, str], value).items()
        return {k: self.tried("", lambda v=v: self.variables.expand(v, where, personal=True)) for k, v in items}

    def server(self, name: str, data: object, settings: object) -> ServerEntry | None:
        """The entry of server ``name``; None when it cannot be read at all (its problems are kept)."""
        data = self.tried(None, lambda: self.obj(name, data, "expected an object with 'command' or 'url'"))
        if data is None:
            return None
        for key in data:
            if key in ENTRY_KEYS:
                continue
            meant = one_edit_away(key, ENTRY_KEYS)
            if meant is not None:
                self.problems.append(self.fail(name, f"unknown field {key!r}; did you mean {meant!r}?").message)
            else:
                self.unknown.append(f"server {name!r}, field {key!r}")
        kind = data.get("type", data.get("transport"))
        command, url = data.get("command"), data.get("url")
        if command is not None and url is not None:
            self.problems.append(self.fail(name, "give 'command' or 'url', not both").message)
            return None
        if command is None and url is None:
            self.problems.append(self.fail(name, "missing field 'command' (or 'url' for a remote server)").message)
            return None
        entry = self.tried(
            None, lambda: self.remote(name, data, kind) if url is not None else self.stdio(name, data, kind)
        )
        disabled = data.get("disabled", False)
        if not isinstance(disabled, bool):
            self.problems.append(self.fail(name, "field 'disabled' must be true or false").message)
        enabled = data.get("enabled", True)
        if not isinstance(enabled, bool):
            self.problems.append(self.fail(name, "field 'enabled' must be true or false").message)
        if entry is None:
            return None
        if "rateLimit" in data:
            where = f"{self.source}: server {name!r}, field 'rateLimit'"
            entry = replace(entry, rate_limit=self.tried(None, lambda: parse_rate(data["rateLimit"], where)))
        share = data.get("share", SHARES[0])
        if share not in SHARES:
            self.problems.append(
                self.fail(name, f"field 'share' must be {SHARES[0]!r} or {SHARES[1]!r}, not {share!r}").message
            )
        elif share != SHARES[0]:
            entry = replace(entry, share=cast(str, share))
        on = enabled is not False and disabled is not True
        read = entry
        entry = self.tried(read, lambda: self.settings(read, settings, data.get("lazymcp"), enabled=on))
        refused = _refused_transport(kind, url)
        if refused is not None and entry.enabled:  # a transport lazymcp does not speak: refused only if in use
            self.problems.append(self.fail(name, refused).message)
            return None
        return entry

    def remote(self, name: str, data: Mapping[str, object], kind: object) -> ServerEntry:
        url = data["url"]
        headers = self.tried({}, lambda: self.mapping(name, "headers", data.get("headers", {})))
        if isinstance(url, str):
            url = self.expanded(name, "url", url)
        if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not _has_host(url):
            raise self.fail(name, "field 'url' must be an http:// or https:// URL")
        oauth, where = data.get("oauth"), f"{self.source}: server {name!r}"
        expand: Callable[[str], str] = lambda text: self.expanded(name, "oauth", text)  # noqa: E731
        sign_in = None if oauth is None else parse_sign_in(oauth, where, expand)
        return ServerEntry(name, url=url, headers=headers, transport=transport_of(kind, url) or "http", sign_in=sign_in)

    def stdio(self, name: str, data: Mapping[str, object], kind: object) -> ServerEntry:
        given_command = data["command"]
        if not isinstance(given_command, str) or not given_command:
            raise self.fail(name, "field 'command' must be a non-empty string")
        command = self.tried("", lambda: self.expanded(name, "command", given_command))
        given = self.tried([], lambda: self.strings(name, "args", data.get("args", [])))
        args = [self.tried("", lambda arg=arg: self.expanded(name, "args", arg)) for arg in given]
        given_cwd, cwd = data.get("cwd"), None
        if isinstance(given_cwd, str):
            cwd = self.tried(None, lambda: self.expanded(name, "cwd", given_cwd))
        elif given_cwd is not None:
            self.problems.append(self.fail(name, "field 'cwd' must be a string").message)
        env = self.tried({}, lambda: self.mapping(name, "env", data.get("env", {})))
        env_file = data.get("envFile")
        if env_file is not None:
            if not isinstance(env_file, str) or not env_file:
                raise self.fail(name, "field 'envFile' must be a path")
            where = f"{self.source}: server {name!r}"
            path = self.expanded(name, "envFile", env_file)
            env = {**self.tried({}, lambda: read_env_file(path, self.variables.workspace, where)), **env}
        return ServerEntry(name, command=(command, *args), env=env, cwd=cwd)

    def settings(self, entry: ServerEntry, *layers: object, enabled: bool) -> ServerEntry:
        """The entry with its ``lazymcp`` settings: the top-level block's first, then the entry's own."""
        values: dict[str, Any] = {"enabled": enabled}
        for layer in layers:
            if layer is None:
                continue
            if not isinstance(layer, Mapping):
                raise self.fail(entry.name, "field 'lazymcp' must be an object")
            layer = cast(Mapping[str, object], layer)
            for key, value in layer.items():
                if key not in SERVER_KEYS:
                    raise self.fail(
                        entry.name, f"unknown field 'lazymcp.{key}'; expected any of {', '.join(sorted(SERVER_KEYS))}"
                    )
                values[key] = value
        for key in ("defer", "enabled"):
            if not isinstance(values.get(key, True), bool):
                raise self.fail(entry.name, f"field 'lazymcp.{key}' must be true or false")
        for key in ("category", "description"):
            if not isinstance(values.get(key, ""), str):
                raise self.fail(entry.name, f"field 'lazymcp.{key}' must be a string")
        inherit: object = values.pop("inherit_env", False)
        if isinstance(inherit, list):
            inherit = tuple(self.strings(entry.name, "lazymcp.inherit_env", cast(object, inherit)))
        elif not isinstance(inherit, bool):
            raise self.fail(entry.name, "field 'lazymcp.inherit_env' must be true, false or a list of variable names")
        tools = values.pop("tools", None)
        metadata = entry.tools
        if tools is not None:
            metadata = parse_metadata({"tools": tools}, source=f"{self.source}: server {entry.name!r}", limit=None)
        fields: dict[str, Any] = {k: values[k] for k in ("defer", "enabled", "category", "description") if k in values}
        return replace(entry, **fields, tools=metadata, inherit_env=inherit or ())

    def config(self, data: object, project: str | Path | None) -> GatewayConfig:
        """The whole file's configuration.

        Raises:
            ConfigError: the file holds no servers to read at all.
        """
        data = self.obj(None, data, "expected a JSON object with 'mcpServers' (or 'servers')")
        key, servers = self.servers_of(data, project)
        top = self.tried({}, lambda: self.obj(None, data.get("lazymcp", {}), "field 'lazymcp' must be an object"))
        for unknown in (k for k in top if k not in TOP_KEYS):
            message = f"unknown field 'lazymcp.{unknown}'; expected any of {', '.join(sorted(TOP_KEYS))}"
            self.problems.append(self.fail(None, message).message)
        per_server = self.tried(
            {},
            lambda: self.obj(
                None, top.get("servers", {}), "field 'lazymcp.servers' must be an object of settings by server name"
            ),
        )
        for missing in (name for name in per_server if name not in servers):
            message = f"'lazymcp.servers' names {missing!r}, which is not a server of {key!r}"
            self.problems.append(self.fail(None, message).message)
        read = [self.server(name, value, per_server.get(name)) for name, value in servers.items()]
        separator = self.tried(None, lambda: _checked(top, "separator", str, self)) or SEPARATOR
        mode = self.tried(None, lambda: _checked(top, "mode", str, self))
        budget = self.tried(None, lambda: _checked(top, "budget", int, self))
        warnings = tuple(f"{self.source}: ignoring unknown {where}" for where in self.unknown)
        access = self.tried(None, lambda: parse_policy(top["access"], self.source)) if "access" in top else None
        inputs = self.variables.missing_inputs(self.source)
        if inputs is not None:
            self.problems.append(inputs)
        entries = tuple(entry for entry in read if entry is not None)
        hosts = self.tried((), lambda: _host_modes(top, self))
        return GatewayConfig(entries, separator, mode, budget, self.source, warnings, access, hosts)

    def servers_of(self, data: Mapping[str, object], project: str | Path | None) -> tuple[str, Mapping[str, object]]:
        """Which key holds the servers, and the servers: ``mcpServers`` (Claude Desktop and Code, Cursor),
        ``servers`` (VS Code), or in Claude Code's ``~/.claude.json`` the user's ``mcpServers`` and one
        project's (``projects.<dir>.mcpServers``: ``project``'s, else the current directory's if it has
        any), the project's winning over the user's of the same name, as in Claude Code.

        Raises:
            ConfigError: there are none to read.
        """
        key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
        servers: Mapping[str, object] = {}
        if key is not None:
            servers = self.obj(None, data[key], f"field {key!r} must be an object of servers by name")
        chosen = claude_project(data, project, self.source)
        if chosen is not None:
            folder, block = chosen
            key = f"projects.{folder}.mcpServers"
            own = self.obj(None, block.get("mcpServers", {}), f"field {key!r} must be an object of servers by name")
            self.variables = replace(self.variables, workspace=folder)
            servers = {**servers, **own}
        if key is None:
            raise self.fail(None, "no 'mcpServers' (or VS Code's 'servers') object of servers")
        return key, servers


_T = TypeVar("_T")


def _has_host(url: str) -> bool:
    """Does ``url`` name a host (and a port, if any, that is a number)?"""
    try:
        parts = urlsplit(url)
        return bool(parts.hostname) and parts.port != 0  # .port raises on a port that is not a number
    except ValueError:
        return False


def _refused_transport(kind: object, url: object) -> str | None:
    """Why an entry's transport cannot be used (None: it can): a ``type`` lazymcp does not speak."""
    if url is None:
        return None if kind in (None, "stdio") else f"field 'type' {kind!r} does not go with 'command' (use 'stdio')"
    if transport_of(kind, url if isinstance(url, str) else "") is not None:
        return None
    return f"field 'type' {kind!r} is not supported; the gateway reaches 'http' and 'sse' servers"


def parse_config(
    data: object,
    *,
    source: str = "config",
    environ: Mapping[str, str] | None = None,
    workspace: str | Path | None = None,
    project: str | Path | None = None,
    problems: list[str] | None = None,
) -> GatewayConfig:
    """A configuration from its JSON value; ``source`` names it in errors, ``workspace`` is what
    ``${workspaceFolder}`` expands to (the current directory when not given), ``project`` the folder of a
    Claude Code project whose servers are read too (``claude_project``).

    With a ``problems`` list, each problem found is added to it as one line and the configuration holds
    the servers that could be read; without, the first problem is raised.

    Raises:
        ConfigError: the value is not a configuration of MCP servers, or a server entry is invalid.
    """
    reader = _Reader(source, Variables.of(os.environ if environ is None else environ, workspace))
    try:
        config = reader.config(data, project)
    except ConfigError as exc:
        reader.problems.append(exc.message)
        config = GatewayConfig((), source=source)
    if problems is not None:
        problems += reader.problems
    elif reader.problems:
        more = len(reader.problems) - 1
        also = f" (and {more} more: lazymcp check --config names them all)" if more else ""
        raise ConfigError(reader.problems[0] + also)
    return config


def _host_modes(top: Mapping[str, object], reader: _Reader) -> tuple[tuple[str, str], ...]:
    """``lazymcp.hosts``: a mode by host (``clientInfo.name``)."""
    hosts = reader.obj(None, top.get("hosts", {}), "field 'lazymcp.hosts' must be an object of modes by host name")
    for host, value in hosts.items():
        if value not in MODES:
            raise reader.fail(None, f"field 'lazymcp.hosts.{host}' must be one of {', '.join(MODES)}, not {value!r}")
    return tuple((host, cast(str, value)) for host, value in hosts.items())


def _checked(top: Mapping[str, object], key: str, kind: type, reader: _Reader) -> Any:
    value = top.get(key)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise reader.fail(None, f"field 'lazymcp.{key}' must be a {kind.__name__}")
    return value


def load_config(
    path: str | Path,
    environ: Mapping[str, str] | None = None,
    *,
    project: str | Path | None = None,
    problems: list[str] | None = None,
) -> GatewayConfig:
    """Read a configuration file (JSON; with comments where its client allows them: ``with_comments``).

    Raises:
        ConfigError: the file is missing, not JSON, or not a valid configuration (without ``problems``).
    """
    try:
        data = read_json(path, "configuration file", comments=with_comments(path))
    except CatalogError as exc:
        if problems is None:
            raise ConfigError(exc.message) from None
        problems.append(exc.message)
        return GatewayConfig((), source=str(path))
    return parse_config(
        data, source=str(path), environ=environ, workspace=workspace_of(path), project=project, problems=problems
    )


def tool_meta(entry: ServerEntry, rename: Callable[[str], str]) -> dict[str, ToolMeta]:
    """The entry's per-tool metadata under the gateway's names (related tools renamed too)."""
    renamed: dict[str, ToolMeta] = {}
    for name, meta in entry.tools.tools.items():
        related = tuple(rename(other) for other in meta.related)
        renamed[rename(name)] = ToolMeta(meta.category, meta.summary, meta.examples, related, meta.deprecated)
    return renamed
