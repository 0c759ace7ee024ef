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
from typing import cast

from lazymcp.access.policy import policy_problems
from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.config import GatewayConfig
from lazymcp.gateway.namespace import Namespace
from lazymcp.gateway.reading import read_config
from lazymcp.local.files import cache_dir
from lazymcp.protocol.errors import ConfigError
from lazymcp.run.manifests import ManifestStore
from lazymcp.tools.manifest import Manifest
from lazymcp.tools.packed import Packed


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
    manifests = {entry.name: store.load(entry.identity()) for entry in config.enabled}
    listed = sum(manifest is not None for manifest in manifests.values())
    if listed:
        problems += _tool_problems(config, manifests)
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


def _tool_problems(config: GatewayConfig, manifests: Mapping[str, Manifest | None]) -> list[str]:
    """Two tools of one gateway name, and policy patterns matching no tool, over the manifests' tools (the
    gateway's own naming, ``lazymcp.gateway.namespace``; a server without a manifest may have any tool)."""
    names = Namespace(config.separator)
    tools: dict[str, list[str] | None] = {}
    problems: list[str] = []
    for server, manifest in manifests.items():
        if manifest is None:
            tools[server] = None
            continue
        try:
            listed = manifest.tools
            own = listed.names if isinstance(listed, Packed) else [cast(str, tool["name"]) for tool in listed]
            tools[server] = names.add(server, own)
        except ConfigError as exc:
            problems.append(f"{config.source}: {exc.message}")
            tools[server] = None
    if config.access is not None:
        problems += policy_problems(config.access, tools, config.separator, config.source)
    return problems


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
