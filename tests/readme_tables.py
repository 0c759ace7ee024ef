"""The README's generated tables: each between two HTML comments, written by its suite's ``matrix`` module
(``python -m tests.<suite>.matrix``; ``--check`` only compares) and checked by ``tests/docs/test_readme.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


@dataclass(frozen=True)
class ReadmeTable:
    """A table of the README, between the comments ``begin`` and ``end``."""

    begin: str
    end: str

    def of(self, readme: str) -> str:
        """The README's copy of the table."""
        start = readme.index(self.begin) + len(self.begin)
        return readme[start : readme.index(self.end)]

    def main(self, render: Callable[[], str], argv: Sequence[str]) -> int:
        """Write ``render()`` into the README (``--check``: exit 1 where the copy differs, writing nothing)."""
        readme = README.read_text()
        current = self.of(readme)
        if "--check" in argv:
            return 0 if current == render() else 1
        README.write_text(readme.replace(self.begin + current + self.end, self.begin + render() + self.end))
        return 0
