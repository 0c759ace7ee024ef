"""``lazymcp check --config FILE``: everything about a configuration that can be told without starting a
server, every problem named, not the first only.

The file is read by the gateway's own reader (``lazymcp.run.gateway.read_config``: its keys, variables,
URLs, names and policy), which gathers its problems instead of stopping at one; then each enabled server's
program is looked for as its process would be started (on the ``PATH`` it would get), its ``cwd`` must be
a directory, and, when servers have manifests, the policy's patterns are matched against their tools and
two tools must not get one name. No process is started and nothing is written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lazymcp.access.policy import policy_problems
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.config import GatewayConfig
from lazymcp.gateway.reading import read_config
from lazymcp.local.files import cache_dir
from lazymcp.protocol.errors import ConfigError
from lazymcp.run.gateway import Launch, build_gateway, known_tools
from lazymcp.run.manifests import ManifestStore
from lazymcp.surfaces.options import Options


@dataclass(frozen=True, slots=True)
class Checked:
    """What ``check`` found: the problems (one line each), the warnings, and the configuration as read."""

    problems: list[str]
    config: GatewayConfig
    manifests: int
    """Enabled servers with a manifest, whose tools were checked too."""


def check(path: str, project: str | None = None, environ: Mapping[str, str] | None = None) -> Checked:
    """Every problem of the configuration at ``path`` that can be found without starting its servers."""
    environ = os.environ if environ is None else environ
    problems: list[str] = []
    config = read_config(path, environ, project=project, problems=problems)
    for entry in config.enabled:
        problems += entry_problems(entry, config.source, environ)
    store = ManifestStore(cache_dir(environ))
    listed = sum(store.load(entry.identity()) is not None for entry in config.enabled)
    if listed:
        problems += _tool_problems(config, store)
    return Checked(problems, config, listed)


def entry_problems(entry: ServerEntry, source: str, environ: Mapping[str, str]) -> list[str]:
    """What would stop a stdio server's process from starting: a program not found as it would be looked
    for (on the ``PATH`` of its environment), a ``cwd`` that is not a directory."""
    if entry.remote or not entry.command:
        return []
    where = f"{source}: server {entry.name!r}"
    found: list[str] = []
    cwd = Path(entry.cwd) if entry.cwd else Path.cwd()
    if entry.cwd is not None and not cwd.is_dir():
        found.append(f"{where}, field 'cwd': {entry.cwd!r} is not a directory")
    program = entry.command[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        file = cwd / program
        if not (file.is_file() and os.access(file, os.X_OK)):
            found.append(f"{where}, field 'command': {program!r} is not an executable file")
    elif shutil.which(program, path=entry.env.get("PATH", environ.get("PATH", os.defpath))) is None:
        found.append(f"{where}, field 'command': {program!r} is not on PATH")
    return found


def _tool_problems(config: GatewayConfig, store: ManifestStore) -> list[str]:
    """Two tools of one name, and policy patterns matching none, over the tools the manifests list."""
    try:
        gateway = build_gateway(Launch(config, Options()), store)
    except ConfigError as exc:
        return [exc.message]
    if config.access is None:
        return []
    return policy_problems(config.access, known_tools(gateway), config.separator, config.source)


def render(checked: Checked, path: str) -> str:
    """The problems, one a line, and the warnings; or one line saying all is well."""
    lines = [*checked.problems, *checked.config.warnings]
    if not checked.problems:
        config = checked.config
        enabled, count = len(config.enabled), len(config.servers)
        lines.append(
            f"{path}: ok: {count} servers ({enabled} enabled), {checked.manifests} with a manifest whose tools were"
            " checked too"
        )
    return "\n".join(lines)
