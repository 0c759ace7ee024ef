"""The docs' generated parts: each between two HTML comments in one Markdown file (the README or a page of
``docs/``), written by the module that computes it (``python -m tests.<suite>.matrix``,
``python -m tests.docs.figures``; ``--check`` only compares) and checked by a test of ``tests/docs/``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


@dataclass(frozen=True)
class DocTable:
    """A generated part of ``file``, between the comments ``begin`` and ``end``."""

    file: Path
    begin: str
    end: str

    def of(self, text: str | None = None) -> str:
        """The file's copy of the part (of ``text``, else of the file as it is on disk)."""
        text = self.file.read_text() if text is None else text
        start = text.index(self.begin) + len(self.begin)
        return text[start : text.index(self.end)]

    def write(self, rendered: str) -> bool:
        """Put ``rendered`` in the file; whether it changed anything."""
        text = self.file.read_text()
        current = self.of(text)
        if current == rendered:
            return False
        self.file.write_text(text.replace(self.begin + current + self.end, self.begin + rendered + self.end))
        return True

    def main(self, render: Callable[[], str], argv: Sequence[str]) -> int:
        """Write ``render()`` into the file (``--check``: exit 1 where the copy differs, writing nothing)."""
        if "--check" in argv:
            return 0 if self.of() == render() else 1
        self.write(render())
        return 0
