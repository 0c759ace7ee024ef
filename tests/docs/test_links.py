"""Every relative link of the README, CONTRIBUTING.md and the pages of docs/ reaches a file that exists, and
every ``#anchor`` a heading of the page it names (as GitHub makes anchors of headings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!\!)\[[^\]\n]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def prose(text: str) -> str:
    """The text without its code blocks, whose brackets are no links (inline code keeps its link text)."""
    return FENCE.sub("", text)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped but hyphens, spaces made hyphens."""
    text = heading.strip().replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in prose(page.read_text()).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            base = anchor(match.group(1))
            slug, n = base, 1
            while slug in found:  # GitHub numbers a repeated heading's anchor
                slug, n = f"{base}-{n}", n + 1
            found.add(slug)
    return found


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(prose(page.read_text())) if not re.match(r"[a-z]+:", target)]


def test_the_anchor_rule_matches_githubs() -> None:
    assert anchor("Compatibility with the clients agents are built on") == (
        "compatibility-with-the-clients-agents-are-built-on"
    )
    assert anchor("10. Limits") == "10-limits"
    assert anchor("`lazymcp gateway`: one endpoint, §7") == "lazymcp-gateway-one-endpoint-7"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading with that anchor in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_pages_are_reached_from_the_readme() -> None:
    """Each page of docs/ is linked from the README or from a page the README links."""
    reached = {ROOT / "README.md"}
    frontier = [ROOT / "README.md"]
    while frontier:
        page = frontier.pop()
        for target in links(page):
            path = target.partition("#")[0]
            file = (page.parent / path).resolve() if path else page
            if file.suffix == ".md" and file.exists() and file not in reached:
                reached.add(file)
                frontier.append(file)
    unreached = [str(p.relative_to(ROOT)) for p in PAGES if p not in reached]
    assert not unreached, unreached
