"""The host matrix: what each real host measured against lazymcp in each mode, and the table of docs/hosts.md.

``MEASURED[(variant, mode)]`` is what the suite measured (``test_hosts.py`` checks every run against it and
writes what it saw to ``.cache/hosts/results``); ``python -m tests.hosts.matrix --update`` rewrites it from
those results, and ``python -m tests.hosts.matrix`` writes docs/hosts.md's copy of the table from it (``--check``
only compares), so the docs say what the suite found.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..doc_tables import DOCS, DocTable
from .support import HOSTS, MODES, VARIANTS, Cell

TOKEN_SLACK = 0.02
"""How far a run's token counts may drift from ``MEASURED`` (a host's own prompt text changes with the date
and the working directory) before the table must be measured again."""

_ARGS = '{"issue_id":"ISS-42"}'
MEASURED: dict[tuple[str, str], Cell] = {
    ("claude-search", "default"): Cell(0, 130, 1355, 12818, 2, _ARGS),
    ("claude-search", "describe"): Cell(3, 130, 1716, 13173, 3, _ARGS),
    ("claude-search", "eager"): Cell(0, 130, 1355, 12817, 2, _ARGS),
    ("claude-search", "proxy"): Cell(4, 0, 781, 12113, 4, _ARGS),
    ("claude-nosearch", "default"): Cell(133, 0, 5664, 23880, 2, _ARGS),
    ("claude-nosearch", "describe"): Cell(133, 0, 5664, 23879, 2, _ARGS),
    ("claude-nosearch", "eager"): Cell(130, 0, 21895, 40110, 1, _ARGS),
    ("claude-nosearch", "proxy"): Cell(4, 0, 781, 19000, 3, _ARGS),
    ("claude-auto", "default"): Cell(133, 0, 6657, 25089, 2, _ARGS),
    ("claude-auto", "describe"): Cell(133, 0, 6657, 25087, 2, _ARGS),
    ("claude-auto", "eager"): Cell(130, 0, 22888, 41320, 1, _ARGS),
    ("claude-auto", "proxy"): Cell(4, 0, 781, 19087, 3, _ARGS),
    ("claude-auto2", "default"): Cell(0, 130, 1355, 12812, 2, _ARGS),
    ("claude-auto2", "describe"): Cell(133, 0, 6657, 25087, 2, _ARGS),
    ("claude-auto2", "eager"): Cell(0, 130, 1355, 12818, 2, _ARGS),
    ("claude-auto2", "proxy"): Cell(4, 0, 781, 19084, 3, _ARGS),
    ("claude-force", "default"): Cell(0, 130, 1355, 12811, 2, _ARGS),
    ("claude-force", "describe"): Cell(3, 130, 1716, 13177, 3, _ARGS),
    ("claude-force", "eager"): Cell(0, 130, 1355, 12822, 2, _ARGS),
    ("claude-force", "proxy"): Cell(4, 0, 781, 12108, 4, _ARGS),
    ("claude-unset", "default"): Cell(0, 130, 1355, 12812, 2, _ARGS),
    ("claude-unset", "describe"): Cell(3, 130, 1716, 13173, 3, _ARGS),
    ("claude-unset", "eager"): Cell(0, 130, 1355, 12817, 2, _ARGS),
    ("claude-unset", "proxy"): Cell(4, 0, 781, 12110, 4, _ARGS),
    ("claude-nobetas", "default"): Cell(133, 0, 5664, 23822, 2, _ARGS),
    ("claude-nobetas", "describe"): Cell(133, 0, 5664, 23825, 2, _ARGS),
    ("claude-nobetas", "eager"): Cell(130, 0, 21895, 40048, 1, _ARGS),
    ("claude-nobetas", "proxy"): Cell(4, 0, 781, 18937, 3, _ARGS),
    ("claude-refused", "default"): Cell(130, 0, 22888, 41348, 1, _ARGS),
    ("claude-refused", "describe"): Cell(133, 0, 6657, 25113, 2, _ARGS),
    ("claude-refused", "eager"): Cell(130, 0, 22888, 41350, 1, _ARGS),
    ("claude-refused", "proxy"): Cell(4, 0, 781, 19111, 3, _ARGS),
    ("codex", "default"): Cell(0, 1, 32, 9029, 2, _ARGS),
    ("codex", "describe"): Cell(0, 1, 32, 8974, 4, _ARGS),
    ("codex", "eager"): Cell(0, 1, 32, 9007, 2, _ARGS),
    ("codex", "proxy"): Cell(0, 1, 32, 8977, 5, _ARGS),
    ("gemini", "default"): Cell(133, 0, 12598, 22572, 2, _ARGS),
    ("gemini", "describe"): Cell(133, 0, 12598, 22572, 2, _ARGS),
    ("gemini", "eager"): Cell(130, 0, 28797, 38902, 1, _ARGS),
    ("gemini", "proxy"): Cell(4, 0, 993, 11097, 3, _ARGS),
}

FAILING: dict[tuple[str, str], str] = {}
"""Cells where the host does not reach the tool, each with the reason (the test expects the failure)."""

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
    """The host table of docs/hosts.md."""
    lines = [
        "| host | mode | lazymcp's tools in the first request | lazymcp's tokens (of the request's) | turns"
        " | arguments received |",
        "|---|---|---|---|---|---|",
    ]
    for variant in VARIANTS:
        for mode in MODES:
            if (variant, mode) in FAILING:
                reason = FAILING[(variant, mode)]
                lines.append(f"| {_column(variant)} | `{mode}` | fails: {reason} | | | |")
                continue
            cell = MEASURED[(variant, mode)]
            share = f"{cell.tokens:,} ({cell.tokens / cell.total:.1%} of {cell.total:,})"
            lines.append(
                f"| {_column(variant)} | `{mode}` | {_tools(cell)} | {share} | {cell.turns} | `{cell.arguments}` |"
            )
    for host, reason in UNREACHABLE.items():
        lines.append(f"| {host} | — | not measured: {reason} | | | |")
    return "\n".join(lines) + "\n"


TABLE = DocTable(
    DOCS / "hosts.md",
    "<!-- host table: written by python -m tests.hosts.matrix -->\n",
    "<!-- end of the host table -->\n",
)
doc_table = TABLE.of


RESULTS = Path(__file__).resolve().parents[2] / ".cache" / "hosts" / "results"
"""What each cell saw in the last run (``test_hosts.py`` writes it; git-ignored)."""


def _order(variant: str, mode: str) -> tuple[int, int]:
    variants, modes = list(VARIANTS), list(MODES)
    first = variants.index(variant) if variant in variants else len(variants)
    return first, modes.index(mode) if mode in modes else 0


def update(results: Path = RESULTS) -> list[str]:
    """Rewrite ``MEASURED`` in this file from ``results`` (cells with no result keep their row, cells in
    ``FAILING`` have none); the cells rewritten."""
    rows = {key: cell for key, cell in MEASURED.items() if key not in FAILING}
    changed = []
    for variant in VARIANTS:
        for mode in MODES:
            path = results / f"{variant}-{mode}.json"
            if (variant, mode) in FAILING or not path.exists():
                continue
            cell = Cell(**json.loads(path.read_text()))
            if rows.get((variant, mode)) != cell:
                changed.append(f"{variant}-{mode}")
            rows[(variant, mode)] = cell
    body = "".join(
        f"    ({json.dumps(variant)}, {json.dumps(mode)}): Cell({cell.defined}, {cell.named}, {cell.tokens},"
        f" {cell.total}, {cell.turns}, {'_ARGS' if cell.arguments == _ARGS else json.dumps(cell.arguments)}),\n"
        for (variant, mode), cell in sorted(rows.items(), key=lambda item: _order(*item[0]))
    )
    source = Path(__file__).read_text()
    head = "MEASURED: dict[tuple[str, str], Cell] = {\n"
    start = source.index(head) + len(head)
    end = source.index("}\n", start)
    Path(__file__).write_text(source[:start] + body + source[end:])
    return changed


def main() -> int:
    if "--update" in sys.argv[1:]:
        sys.stdout.write(f"measured again: {', '.join(update()) or 'nothing'}\n")
        return 0
    return TABLE.main(render, sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
