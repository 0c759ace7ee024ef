"""The spec and the tests agree: every requirement the spec defines is checked by some test."""

from __future__ import annotations

import re

import pytest

from ..conftest import ROOT, SPEC

SPEC_TEXT = (SPEC / "lazy-tools.md").read_text()


def requirement_ids() -> set[str]:
    return set(re.findall(r"^\| (LT-\d\d) \|", SPEC_TEXT, re.MULTILINE))


def cited_ids() -> set[str]:
    cited: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        cited |= set(re.findall(r'requirement\("(LT-\d\d)"\)', path.read_text()))
    return cited


def test_the_spec_defines_requirements_lt01_to_lt36() -> None:
    assert requirement_ids() == {f"LT-{n:02d}" for n in range(1, 37)}


@pytest.mark.requirement("LT-01")
def test_every_requirement_is_cited_by_a_test() -> None:
    assert requirement_ids() - cited_ids() == set()
    assert cited_ids() - requirement_ids() == set()  # no test cites a requirement the spec lacks
