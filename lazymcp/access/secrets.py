"""Each principal's own values for its servers: ``${principal:NAME}`` in a stdio server's ``env`` or a remote
server's ``headers``, filled from the principals' secrets file (``--principal-secrets FILE``), so that
alice's server runs with alice's token and bob's with bob's.

The file holds one block per principal, headed by its name in brackets (a token's name in the token file,
or an OAuth subject), then ``NAME=value`` lines; blank lines and ``#`` comments are skipped::

    [alice]
    GITHUB_TOKEN=ghp_alice...

or, when it starts with ``{``, the same as JSON: ``{"alice": {"GITHUB_TOKEN": "ghp_alice..."}}``.

No error or log line ever shows a value: a line that cannot be read is named by its number.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from lazymcp.protocol.errors import ConfigError

PRINCIPAL_VALUE = re.compile(r"\$\{principal:([A-Za-z_][A-Za-z0-9_]*)\}")
"""A principal's value in an entry: ``${principal:NAME}``."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PRINCIPAL = re.compile(r"[A-Za-z0-9_.@+:|\-]+")
NAME_RULE = "a principal's name may hold only letters, digits and . _ - @ + : |"


def wanted(values: Mapping[str, str]) -> set[str]:
    """The names of the principal values ``values`` (an ``env`` or ``headers``) ask for."""
    return {name for value in values.values() for name in PRINCIPAL_VALUE.findall(value)}


def lacking(names: set[str], given: Mapping[str, str]) -> list[str]:
    """The names of ``names`` that ``given`` has no value for (an empty value is none: a server is never
    started with an empty token)."""
    return sorted(name for name in names if not given.get(name))


def filled(values: Mapping[str, str], given: Mapping[str, str]) -> dict[str, str]:
    """``values`` with every ``${principal:NAME}`` replaced by ``given[NAME]`` (each one is there: see
    ``wanted``)."""
    return {key: PRINCIPAL_VALUE.sub(lambda match: given[match.group(1)], value) for key, value in values.items()}


@dataclass(frozen=True, slots=True)
class PrincipalSecrets:
    """The values of each principal, by its name."""

    blocks: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: {})
    source: str = "--principal-secrets"

    def of(self, principal: str) -> Mapping[str, str]:
        """The values of ``principal`` (none when it has no block)."""
        return self.blocks.get(principal, {})

    @classmethod
    def parse(cls, text: str, source: str) -> PrincipalSecrets:
        """Read a principals' secrets file.

        Raises:
            ConfigError: a line is neither ``[principal]`` nor ``NAME=value``, a value comes before any
                block, or a block or a name is given twice.
        """
        if text.lstrip().startswith("{"):
            return cls(_json_blocks(text, source), source)
        blocks: dict[str, dict[str, str]] = {}
        block: dict[str, str] | None = None
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            where = f"{source}, line {number}"
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                name = line[1:-1].strip()
                if not _PRINCIPAL.fullmatch(name):
                    raise ConfigError(f"{where}: {NAME_RULE}")
                if name in blocks:
                    raise ConfigError(f"{where}: principal {name!r} has a block already")
                block = blocks[name] = {}
                continue
            key, equals, value = line.partition("=")
            key = key.strip()
            if not equals or not _NAME.fullmatch(key):
                raise ConfigError(f"{where}: expected '[principal]' or 'NAME=value'")
            if block is None:
                raise ConfigError(f"{where}: a value before any '[principal]' block")
            if key in block:
                raise ConfigError(f"{where}: {key} is given twice in this block")
            block[key] = value.strip()
        return cls(blocks, source)


def _once(pairs: list[tuple[str, object]], source: str) -> dict[str, object]:
    """A JSON object whose keys are each given once (a principal, or a name in its block).

    Raises:
        ConfigError: a key is given twice.
    """
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            shown = repr(key) if _PRINCIPAL.fullmatch(key) else "a key"
            raise ConfigError(f"{source}: {shown} is given twice in one object")
        found[key] = value
    return found


def _json_blocks(text: str, source: str) -> dict[str, dict[str, str]]:
    """The blocks of a secrets file written as JSON: an object of principals, each an object of strings.

    Raises:
        ConfigError: not JSON, or not of that shape (named by principal and name, never by value).
    """
    try:
        data = cast(dict[str, object], json.loads(text, object_pairs_hook=lambda pairs: _once(pairs, source)))
    except json.JSONDecodeError as exc:  # its message says where, not what
        raise ConfigError(f"{source}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    blocks: dict[str, dict[str, str]] = {}
    for name, block in data.items():
        if not _PRINCIPAL.fullmatch(name):
            raise ConfigError(f"{source}: {NAME_RULE}")
        if not isinstance(block, dict):
            raise ConfigError(f"{source}: principal {name!r} must be an object of NAME: value")
        values = cast(dict[str, object], block)
        for key, value in values.items():
            if not _NAME.fullmatch(key) or not isinstance(value, str):
                raise ConfigError(f"{source}: principal {name!r}: each value must be a string under a NAME")
        blocks[name] = cast(dict[str, str], values)
    return blocks
