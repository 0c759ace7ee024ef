"""Every figure of the README's first screen (and the table of docs/how-it-works.md) is the one the command
that measures it prints today: ``python -m tests.docs.figures`` writes them, and these tests fail when a copy
drifts from the code. The table of peers (``python -m bench.peers``, a dated run) counts the same five servers as
docs/gateway.md's example, and must come to the same tokens."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..doc_tables import DOCS, README
from . import figures


def test_what_you_will_see_is_what_lazymcp_stats_prints() -> None:
    shown = figures.STATS.of()
    assert shown == figures.sample_stats(), "run: python -m tests.docs.figures"
    assert "stubs:summary" in shown and "130" in shown


def test_the_gateway_example_is_what_stats_prints_over_the_five_servers() -> None:
    lacking = figures.FIVE_SERVERS.missing()
    if lacking is not None:
        pytest.skip(f"{lacking}; tests/gateway/test_gateway.py installs them")
    assert figures.GATEWAY.of() == figures.gateway_stats(), "run: python -m tests.docs.figures"


def test_the_headline_and_the_listings_table_are_what_stats_measures_on_the_captured_catalogs() -> None:
    if not figures.COMBINED.exists():
        pytest.skip(f"{figures.COMBINED} is not here (it sits beside the project in CI)")
    servers, rows = figures.combined()
    assert figures.HEADLINE.of() == figures.headline(servers, rows), "run: python -m tests.docs.figures"
    assert figures.LISTINGS.of() == figures.listings(servers, rows), "run: python -m tests.docs.figures"


FIVE_SERVERS_ROW = "tokens a stock client's model sees (tools listed), 5 servers"
"""The row of ``bench.peers``' table that counts the five servers of docs/gateway.md's example."""


def peers_tokens(page: Path) -> dict[str, tuple[int, int]]:
    """The five servers' row of the peers table on ``page``: column -> (tokens, tools listed)."""
    from bench.peers import marked_table

    table = marked_table(page.read_text())
    assert table is not None, f"{page.name} has no table between the peers markers"
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.splitlines()]
    row = next((row for row in rows if row[0] == FIVE_SERVERS_ROW), None)
    assert row is not None, f"{page.name}: no row {FIVE_SERVERS_ROW!r}"
    figures: dict[str, tuple[int, int]] = {}
    for column, cell in zip(rows[0][1:], row[1:], strict=True):
        found = re.fullmatch(r"([\d,]+) \(([\d,]+)\)", cell)
        if found:
            figures[column] = (int(found[1].replace(",", "")), int(found[2].replace(",", "")))
    return figures


def gateway_totals() -> tuple[int, int, int]:
    """docs/gateway.md's ``stats`` example: (tools, tokens in full, tokens through one gateway)."""
    line = next(line for line in figures.GATEWAY.of().splitlines() if line.startswith("total, one gateway"))
    tools, full, gateway = (int(word.replace(",", "")) for word in line.split()[-4:-1])
    return tools, full, gateway


def test_the_peers_table_counts_the_five_servers_as_stats_does() -> None:
    from bench.peers import PEERS_DOC, PEERS_MD

    tools, full, gateway = gateway_totals()
    for page in (PEERS_MD, PEERS_DOC):
        shown = peers_tokens(page)
        ours = [tokens for column, (tokens, _) in shown.items() if column.startswith("lazymcp")]
        assert shown.get("direct") == (full, tools), f"{page.name}: direct, against docs/gateway.md's full total"
        assert ours == [gateway], f"{page.name}: lazymcp, against docs/gateway.md's total through one gateway"
    for page in (README, *sorted(DOCS.glob("*.md"))):
        for said in re.findall(r"([\d,]+) tokens for five servers", page.read_text()):
            assert int(said.replace(",", "")) == gateway, f"{page.name} says {said} tokens for five servers"
