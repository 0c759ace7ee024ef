"""The host matrix: what each real host measured against lazymcp in each mode, and the README table of it.

``MEASURED[(variant, mode)]`` is what the suite measured (``test_hosts.py`` checks every run against it and
writes what it saw to ``.cache/hosts/results``); ``python -m tests.hosts.matrix`` writes the README's copy
of the table from it (``--check`` only compares), so the README says what the suite found.
"""

from __future__ import annotations

import sys

from .support import HOSTS, MODES, VARIANTS, Cell

TOKEN_SLACK = 0.02
"""How far a run's token counts may drift from ``MEASURED`` (a host's own prompt text changes with the date
and the working directory) before the table must be measured again."""

_ARGS = '{"issue_id":"ISS-42"}'
MEASURED: dict[tuple[str, str], Cell] = {
    ("claude-search", "describe"): Cell(0, 133, 1014, 12394, 4, _ARGS),
    ("claude-search", "eager"): Cell(0, 130, 993, 12374, 2, _ARGS),
    ("claude-search", "proxy"): Cell(0, 4, 29, 11274, 5, _ARGS),
    ("claude-nosearch", "describe"): Cell(133, 0, 5303, 23436, 2, _ARGS),
    ("claude-nosearch", "eager"): Cell(130, 0, 21533, 39668, 1, _ARGS),
    ("claude-nosearch", "proxy"): Cell(4, 0, 420, 18557, 3, _ARGS),
    ("claude-auto", "describe"): Cell(133, 0, 6317, 24656, 2, _ARGS),
    ("claude-auto", "eager"): Cell(130, 0, 22526, 40866, 1, _ARGS),
    ("claude-auto", "proxy"): Cell(4, 0, 449, 18659, 3, _ARGS),
    ("codex", "describe"): Cell(0, 1, 5, 8912, 4, _ARGS),
    ("codex", "eager"): Cell(0, 1, 5, 8910, 2, _ARGS),
    ("codex", "proxy"): Cell(0, 1, 5, 8904, 6, _ARGS),
    ("gemini", "describe"): Cell(133, 0, 12237, 22089, 2, _ARGS),
    ("gemini", "eager"): Cell(130, 0, 28435, 38418, 1, _ARGS),
    ("gemini", "proxy"): Cell(4, 0, 632, 10610, 3, _ARGS),
}

UNREACHABLE: dict[str, str] = {}
"""Hosts whose pinned version cannot be pointed at a local model API, each with the reason."""


def differences(expected: Cell, seen: Cell) -> list[str]:
    """What a run saw that the table does not say (token counts within ``TOKEN_SLACK``)."""
    found = [
        f"{name}: {getattr(seen, name)!r}, the table says {getattr(expected, name)!r}"
        for name in ("defined", "named", "turns", "arguments")
        if getattr(expected, name) != getattr(seen, name)
    ]
    for name in ("tokens", "total"):
        want, got = getattr(expected, name), getattr(seen, name)
        if abs(got - want) > max(2, want * TOKEN_SLACK):
            found.append(f"{name}: {got}, the table says {want}")
    return found


def _column(variant: str) -> str:
    host, setting = VARIANTS[variant]
    return HOSTS[host].title + (f", {setting}" if setting else "")


def _tools(cell: Cell) -> str:
    parts = [f"{cell.defined} defined"] if cell.defined else []
    parts += [f"{cell.named} named only"] if cell.named else []
    return " + ".join(parts) or "none"


def render() -> str:
    """The README's host table."""
    lines = [
        "| host | mode | lazymcp's tools in the first request | lazymcp's tokens (of the request's) | turns"
        " | arguments received |",
        "|---|---|---|---|---|---|",
    ]
    for variant in VARIANTS:
        for mode in MODES:
            cell = MEASURED[(variant, mode)]
            share = f"{cell.tokens:,} ({cell.tokens / cell.total:.1%} of {cell.total:,})"
            lines.append(
                f"| {_column(variant)} | `{mode}` | {_tools(cell)} | {share} | {cell.turns} | `{cell.arguments}` |"
            )
    for host, reason in UNREACHABLE.items():
        lines.append(f"| {host} | — | not measured: {reason} | | | |")
    return "\n".join(lines) + "\n"


BEGIN = "<!-- host table: written by python -m tests.hosts.matrix -->\n"
END = "<!-- end of the host table -->\n"


def readme_table(readme: str) -> str:
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    return readme[start:end]


def main() -> int:
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "README.md"
    readme = path.read_text()
    current = readme_table(readme)
    if "--check" in sys.argv[1:]:
        return 0 if current == render() else 1
    path.write_text(readme.replace(BEGIN + current + END, BEGIN + render() + END))
    return 0


if __name__ == "__main__":
    sys.exit(main())
