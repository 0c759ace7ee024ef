"""Reading a gateway configuration: the ``mcpServers`` (Claude Desktop, Cursor, ``.mcp.json``) and
``servers`` (VS Code) files people already have, plus lazymcp's own per-server and per-tool settings.

Every error is one line naming the file, the server and the field (``ConfigError``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from lazymcp.access.policy import Policy, parse_policy
from lazymcp.access.ratelimit import parse_rate
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.env_file import read_env_file
from lazymcp.gateway.variables import Variables, workspace_of
from lazymcp.local.files import read_json
from lazymcp.protocol.errors import CatalogError, ConfigError
from lazymcp.protocol.messages import MODES, SEPARATOR
from lazymcp.protocol.names import one_edit_away
from lazymcp.tools.metadata import ToolMeta, parse_metadata

STDIO_KEYS = frozenset({"command", "args", "env", "cwd", "envFile", "share"})
REMOTE_KEYS = frozenset({"url", "headers"})
COMMON_KEYS = frozenset({"type", "transport", "lazymcp", "disabled", "description", "name", "timeout", "rateLimit"})
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
    """One file's servers, read with the file's name in every error."""

    def __init__(self, source: str, variables: Variables) -> None:
        self.source = source
        self.variables = variables
        self.unknown: list[str] = []

    def fail(self, server: str | None, message: str) -> ConfigError:
        where = self.source if server is None else f"{self.source}: server {server!r}"
        return ConfigError(f"{where}: {message}")

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
        return {k: self.expanded(server, key, v) for k, v in cast(Mapping[str, str], value).items()}

    def server(self, name: str, data: object, settings: object) -> ServerEntry:
        data = self.obj(name, data, "expected an object with 'command' or 'url'")
        for key in data:
            if key in ENTRY_KEYS:
                continue
            meant = one_edit_away(key, ENTRY_KEYS)
            if meant is not None:
                raise self.fail(name, f"unknown field {key!r}; did you mean {meant!r}?")
            self.unknown.append(f"server {name!r}, field {key!r}")
        kind = data.get("type", data.get("transport"))
        command, url = data.get("command"), data.get("url")
        if command is not None and url is not None:
            raise self.fail(name, "give 'command' or 'url', not both")
        if command is None and url is None:
            raise self.fail(name, "missing field 'command' (or 'url' for a remote server)")
        if url is not None:
            if isinstance(url, str):
                url = self.expanded(name, "url", url)
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise self.fail(name, "field 'url' must be an http:// or https:// URL")
            if kind is not None and kind not in ("http", "streamable-http", "streamableHttp"):
                raise self.fail(name, f"field 'type' {kind!r} is not supported; the gateway reaches 'http' servers")
            entry = ServerEntry(name, url=url, headers=self.mapping(name, "headers", data.get("headers", {})))
        else:
            if not isinstance(command, str) or not command:
                raise self.fail(name, "field 'command' must be a non-empty string")
            command = self.expanded(name, "command", command)
            if kind is not None and kind != "stdio":
                raise self.fail(name, f"field 'type' {kind!r} does not go with 'command' (use 'stdio')")
            args = [self.expanded(name, "args", arg) for arg in self.strings(name, "args", data.get("args", []))]
            cwd = data.get("cwd")
            if cwd is not None and not isinstance(cwd, str):
                raise self.fail(name, "field 'cwd' must be a string")
            cwd = None if cwd is None else self.expanded(name, "cwd", cwd)
            env = self.mapping(name, "env", data.get("env", {}))
            env_file = data.get("envFile")
            if env_file is not None:
                if not isinstance(env_file, str) or not env_file:
                    raise self.fail(name, "field 'envFile' must be a path")
                where = f"{self.source}: server {name!r}"
                path = self.expanded(name, "envFile", env_file)
                env = {**read_env_file(path, self.variables.workspace, where), **env}  # its own env wins
            entry = ServerEntry(name, command=(command, *args), env=env, cwd=cwd)
        disabled = data.get("disabled", False)
        if not isinstance(disabled, bool):
            raise self.fail(name, "field 'disabled' must be true or false")
        if "rateLimit" in data:
            entry = replace(
                entry, rate_limit=parse_rate(data["rateLimit"], f"{self.source}: server {name!r}, field 'rateLimit'")
            )
        share = data.get("share", SHARES[0])
        if share not in SHARES:
            raise self.fail(name, f"field 'share' must be {SHARES[0]!r} or {SHARES[1]!r}, not {share!r}")
        if share != SHARES[0]:
            entry = replace(entry, share=cast(str, share))
        return self.settings(entry, settings, data.get("lazymcp"), enabled=not disabled)

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


def parse_config(
    data: object,
    *,
    source: str = "config",
    environ: Mapping[str, str] | None = None,
    workspace: str | Path | None = None,
) -> GatewayConfig:
    """A configuration from its JSON value; ``source`` names it in errors, ``workspace`` is what
    ``${workspaceFolder}`` expands to (the current directory when not given).

    Raises:
        ConfigError: the value is not a configuration of MCP servers, or a server entry is invalid.
    """
    reader = _Reader(source, Variables.of(os.environ if environ is None else environ, workspace))
    data = reader.obj(None, data, "expected a JSON object with 'mcpServers' (or 'servers')")
    key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if key is None:
        raise reader.fail(None, "no 'mcpServers' (or VS Code's 'servers') object of servers")
    servers = reader.obj(None, data[key], f"field {key!r} must be an object of servers by name")
    top = reader.obj(None, data.get("lazymcp", {}), "field 'lazymcp' must be an object")
    unknown_top = [k for k in top if k not in TOP_KEYS]
    if unknown_top:
        raise reader.fail(
            None, f"unknown field 'lazymcp.{unknown_top[0]}'; expected any of {', '.join(sorted(TOP_KEYS))}"
        )
    per_server = reader.obj(
        None, top.get("servers", {}), "field 'lazymcp.servers' must be an object of settings by server name"
    )
    missing = [name for name in per_server if name not in servers]
    if missing:
        raise reader.fail(None, f"'lazymcp.servers' names {missing[0]!r}, which is not a server of {key!r}")
    entries = [reader.server(name, value, per_server.get(name)) for name, value in servers.items()]
    separator = _checked(top, "separator", str, reader) or SEPARATOR
    mode = _checked(top, "mode", str, reader)
    budget = _checked(top, "budget", int, reader)
    warnings = tuple(f"{source}: ignoring unknown {where}" for where in reader.unknown)
    access = parse_policy(top.get("access"), source)
    hosts = reader.obj(None, top.get("hosts", {}), "field 'lazymcp.hosts' must be an object of modes by host name")
    for host, value in hosts.items():
        if value not in MODES:
            raise reader.fail(None, f"field 'lazymcp.hosts.{host}' must be one of {', '.join(MODES)}, not {value!r}")
    modes = tuple((host, cast(str, value)) for host, value in hosts.items())
    return GatewayConfig(tuple(entries), separator, mode, budget, source, warnings, access, modes)


def _checked(top: Mapping[str, object], key: str, kind: type, reader: _Reader) -> Any:
    value = top.get(key)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise reader.fail(None, f"field 'lazymcp.{key}' must be a {kind.__name__}")
    return value


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """Read a configuration file (JSON).

    Raises:
        ConfigError: the file is missing, not JSON, or not a valid configuration.
    """
    try:
        data = read_json(path, "configuration file")
    except CatalogError as exc:
        raise ConfigError(exc.message) from None
    return parse_config(data, source=str(path), environ=environ, workspace=workspace_of(path))


def tool_meta(entry: ServerEntry, rename: Callable[[str], str]) -> dict[str, ToolMeta]:
    """The entry's per-tool metadata under the gateway's names (related tools renamed too)."""
    renamed: dict[str, ToolMeta] = {}
    for name, meta in entry.tools.tools.items():
        related = tuple(rename(other) for other in meta.related)
        renamed[rename(name)] = ToolMeta(meta.category, meta.summary, meta.examples, related, meta.deprecated)
    return renamed


def runs_gateway_on(entry: ServerEntry, config: Path) -> bool:
    """Does ``entry`` start lazymcp's gateway on the configuration file ``config`` (``lazymcp gateway``,
    or ``python -m lazymcp gateway``, with ``--config`` naming that same file)?"""
    if not entry.command:
        return False
    program, args = Path(entry.command[0]).name, list(entry.command[1:])
    if program.startswith("python") and args[:2] == ["-m", "lazymcp"]:
        args = args[2:]
    elif program != "lazymcp":
        return False
    if "gateway" not in args:
        return False
    named = [after for before, after in zip(args, args[1:], strict=False) if before == "--config"]
    named += [arg.removeprefix("--config=") for arg in args if arg.startswith("--config=")]
    base = Path(entry.cwd) if entry.cwd else Path.cwd()
    return any((base / path).resolve() == config.resolve() for path in named)
