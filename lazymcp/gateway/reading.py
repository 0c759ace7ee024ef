"""A configuration file read and checked whole, before any server starts: the file's servers and settings
(``lazymcp.gateway.config``), their names against the tool-name rules (``lazymcp.gateway.namespace``), and
no server that runs this very gateway on this very file. ``lazymcp check`` asks it for every problem at
once; the gateway and ``stats`` for the first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.config import GatewayConfig, load_config
from lazymcp.gateway.namespace import check_prefixes, check_separator, check_server_name
from lazymcp.protocol.errors import ConfigError


def read_config(
    path: str,
    environ: Mapping[str, str] | None = None,
    *,
    project: str | None = None,
    problems: list[str] | None = None,
) -> GatewayConfig:
    """Load and check a configuration: names fit the tool-name rules, and each gateway name names one server.
    With a ``problems`` list, every problem found is added to it, one line each, instead of raised.

    Raises:
        ConfigError: the file is invalid (without ``problems``).
    """
    found: list[str] = []
    config = load_config(path, environ, project=project, problems=problems)
    checks: list[Callable[[], None]] = [lambda: check_separator(config.separator, config.source)]
    for entry in config.servers:
        checks.append(lambda entry=entry: check_server_name(entry.name, config.separator, config.source))
        if entry.enabled and runs_gateway_on(entry, Path(path)):
            found.append(f"{config.source}: server {entry.name!r} runs this gateway on its own configuration")
    checks.append(lambda: check_prefixes([e.name for e in config.enabled], config.separator, config.source))
    for check in checks:
        try:
            check()
        except ConfigError as exc:
            found.append(exc.message)
    if problems is not None:
        problems += found
    elif found:
        raise ConfigError(found[0])
    return config


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
