"""Gateway tool and prompt names: ``<server><separator><tool>``, kept within the MCP tool-name rules.

The MCP specification (2025-11-25, "Tool names") asks for 1 to 128 characters of ASCII letters,
digits, ``_``, ``-`` and ``.``. A server name that breaks these, two servers whose prefixes
(``<server><separator>``) begin one another, or two tools that end up with one name, is a start-up
error naming both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from lazymcp.protocol.errors import ConfigError
from lazymcp.protocol.messages import SEPARATOR

MAX_TOOL_NAME = 128
_ALLOWED = re.compile(r"[A-Za-z0-9_.\-]+")


def check_server_name(name: str, separator: str, source: str) -> None:
    """A server name may prefix tool names: allowed characters only, and no separator inside.

    Raises:
        ConfigError: the name has a character the MCP tool-name rules forbid, or holds the separator.
    """
    if not _ALLOWED.fullmatch(name):
        raise ConfigError(
            f"{source}: server {name!r}: the name may hold only ASCII letters, digits, '_', '-' and '.' "
            "(it prefixes the server's tool names)"
        )
    if separator in name:
        raise ConfigError(f"{source}: server {name!r}: the name holds the separator {separator!r}")


def check_prefixes(names: Iterable[str], separator: str, source: str) -> None:
    """No server's prefix (``name + separator``) may begin another's: with ``a`` and ``a_`` under ``__``,
    ``a___x`` is both ``a``'s ``_x`` and ``a_``'s ``x``, so a name could not tell its server, and a prompt
    asked for before any listing could reach the wrong one.

    Raises:
        ConfigError: two such servers, both named.
    """
    prefixes = sorted(f"{name}{separator}" for name in names)
    for shorter, longer in pairwise(prefixes):  # a prefix sorts just before the first name it begins
        if longer.startswith(shorter):
            first, second, example = shorter.removesuffix(separator), longer.removesuffix(separator), f"{longer}x"
            raise ConfigError(
                f"{source}: servers {first!r} and {second!r} make names ambiguous under the separator "
                f"{separator!r}: {example!r} would name both {example.removeprefix(shorter)!r} of server {first!r} "
                f"and 'x' of server {second!r}; rename one"
            )


def check_separator(separator: str, source: str) -> None:
    """Raises ``ConfigError`` for a separator the tool-name rules forbid."""
    if not _ALLOWED.fullmatch(separator):
        raise ConfigError(f"{source}: 'lazymcp.separator' {separator!r} may hold only letters, digits, '_', '-', '.'")


def unusable(server: str, names: Sequence[str], separator: str) -> str | None:
    """Why a server's tool names (as its manifest keeps them) cannot be served under gateway names: a name
    given twice, or one that breaks the tool-name rules once prefixed; None when they can."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return f"it lists the tool {name[:80]!r} twice"
        seen.add(name)
    try:
        Namespace(separator).add(server, names)
    except ConfigError as exc:
        return exc.message
    return None


@dataclass
class Namespace:
    """Which server and which original name each gateway name stands for."""

    separator: str = SEPARATOR
    prefixed: bool = True
    """False: one server, names unchanged (the single-server proxy)."""
    owners: dict[str, tuple[str, str]] = field(default_factory=lambda: {})

    def name(self, server: str, original: str) -> str:
        return f"{server}{self.separator}{original}" if self.prefixed else original

    def add(self, server: str, originals: Iterable[str]) -> list[str]:
        """Register a server's names; returns the gateway names in order.

        Raises:
            ConfigError: a gateway name breaks the length rule or is taken by another tool.
        """
        names: list[str] = []
        for original in originals:
            name = self.name(server, original)
            if len(name) > MAX_TOOL_NAME:
                raise ConfigError(f"server {server!r}: tool {original!r} becomes {name!r}, longer than {MAX_TOOL_NAME}")
            owner = self.owners.get(name)
            if owner is not None and owner != (server, original):
                raise ConfigError(
                    f"server {server!r}: tool {original!r} becomes {name!r}, "
                    f"the name of server {owner[0]!r}'s tool {owner[1]!r}"
                )
            self.owners[name] = (server, original)
            names.append(name)
        return names

    def owner(self, name: str) -> tuple[str, str] | None:
        """(server, original name) of a gateway name, or None."""
        return self.owners.get(name)
