"""The variables of the clients' configuration files, expanded as the clients themselves expand them.

Claude Code's ``.mcp.json``: ``${VAR}`` and ``${VAR:-default}``. VS Code's ``mcp.json``: ``${env:VAR}``,
``${workspaceFolder}``, ``${userHome}`` and ``${input:ID}`` (an entry of its ``inputs``, which VS Code
prompts for). Cursor's ``mcp.json``: ``${env:VAR}``, ``${userHome}``, ``${workspaceFolder}``. Every form is
understood in every file, in each field a client expands them in (``command``, ``args``, ``env``, ``cwd``,
``url``, ``headers``), so a file moved between clients reads the same.

What cannot be honoured is a one-line error, never a literal ``${...}`` passed to a server: an unset
variable without a default, a form no client has, and ``${input:ID}``, which VS Code asks the person for
and the gateway cannot: its value comes from the environment variable ``LAZYMCP_INPUT_<ID>`` (the ID in
capitals, anything but letters and digits as ``_``). The inputs missing are gathered while the file is
read and named together, in one line (``missing_inputs``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from lazymcp.protocol.errors import ConfigError

INPUT_PREFIX: Final = "LAZYMCP_INPUT_"
"""``${input:ID}`` is read from the environment variable of this prefix and the ID."""
WORKSPACE_DIRS: Final = frozenset({".vscode", ".cursor"})
"""A file in one of these is a workspace's: ``${workspaceFolder}`` is the directory above it."""
FORMS: Final = "${VAR}, ${VAR:-default}, ${env:VAR}, ${input:ID}, ${userHome}, ${workspaceFolder}"
_REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def input_variable(input_id: str) -> str:
    """The environment variable that gives ``${input:ID}`` its value."""
    return INPUT_PREFIX + re.sub(r"[^A-Z0-9]", "_", input_id.upper())


def workspace_of(path: str | Path) -> Path:
    """The workspace folder of a configuration file: the project above ``.vscode/`` or ``.cursor/``, else
    the file's own directory (where Claude Code's ``.mcp.json`` lives)."""
    folder = Path(path).resolve().parent
    return folder.parent if folder.name in WORKSPACE_DIRS else folder


@dataclass(frozen=True, slots=True)
class Variables:
    """What the variables of one file expand to."""

    environ: Mapping[str, str]
    workspace: str
    home: str
    missing: dict[str, str] = field(default_factory=lambda: {})
    """Each ``${input:ID}`` with no value, and where it was first met (file, server, field)."""

    @classmethod
    def of(cls, environ: Mapping[str, str], workspace: str | Path | None = None) -> Variables:
        home = environ.get("HOME") or str(Path.home())
        return cls(environ, str(workspace if workspace is not None else Path.cwd()), home)

    def expand(self, value: str, where: str, *, personal: bool = False) -> str:
        """``value`` with each variable replaced; ``where`` (file, server, field) starts every error.
        ``personal``: a field that may hold a principal's own values (``env``, ``headers``), whose
        ``${principal:NAME}`` stays as written until a principal's server is started
        (``lazymcp.access.secrets``).

        Raises:
            ConfigError: a variable has no value here, or a ``${`` is not a variable of any client.
        """
        parts: list[str] = []
        end = 0
        for match in _REFERENCE.finditer(value):
            inner = match.group(1)
            kind, _, rest = inner.partition(":")
            if kind == "principal" and _NAME.fullmatch(rest):
                if not personal:
                    raise ConfigError(f"{where}: ${{{inner}}} is for a server's 'env' and 'headers' only")
                parts += [self._literal(value[end : match.start()], where), match.group(0)]
                end = match.end()
                continue
            parts += [self._literal(value[end : match.start()], where), self._value(inner, where)]
            end = match.end()
        parts.append(self._literal(value[end:], where))
        return "".join(parts)

    def _literal(self, text: str, where: str) -> str:
        if "${" in text:
            raise ConfigError(f"{where}: {_shown(text)} opens a variable that does not close; expected {FORMS}")
        return text

    def _value(self, inner: str, where: str) -> str:
        kind, colon, rest = inner.partition(":")
        if _NAME.fullmatch(inner):
            if inner == "workspaceFolder":
                return self.workspace
            if inner == "userHome":
                return self.home
            return self._variable(inner, where)
        if colon and _NAME.fullmatch(kind) and rest.startswith("-"):
            return self.environ.get(kind, rest[1:])
        if colon and kind == "env" and _NAME.fullmatch(rest):
            return self._variable(rest, where)
        if colon and kind == "input" and rest:
            variable = input_variable(rest)
            if variable not in self.environ:
                self.missing.setdefault(rest, where)
                return ""
            return self.environ[variable]
        raise ConfigError(f"{where}: ${{{inner}}} is not a variable lazymcp can expand; expected {FORMS}")

    def missing_inputs(self, source: str) -> str | None:
        """The one line naming every ``${input:ID}`` met without a value, and what to set; None: none."""
        if not self.missing:
            return None
        if len(self.missing) == 1:
            [(name, where)] = self.missing.items()
            return (
                f"{where}: ${{input:{name}}} is asked of the user by VS Code; set the environment variable "
                f"{input_variable(name)} to give it to the gateway"
            )
        inputs = ", ".join(
            f"${{input:{name}}} ({where.removeprefix(source + ': ')})" for name, where in self.missing.items()
        )
        variables = ", ".join(input_variable(name) for name in self.missing)
        return (
            f"{source}: {inputs} are asked of the user by VS Code; set the environment variables {variables}"
            " to give them to the gateway"
        )

    def _variable(self, name: str, where: str) -> str:
        if name not in self.environ:
            raise ConfigError(
                f"{where}: environment variable {name!r} is not set; set it, or give a default as ${{{name}:-default}}"
            )
        return self.environ[name]


def _shown(text: str) -> str:
    start = text.index("${")
    return repr(text[start : start + 40])
