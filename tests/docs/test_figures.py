"""Every figure of the README's first screen (and the table of docs/how-it-works.md) is the one the command
that measures it prints today: ``python -m tests.docs.figures`` writes them, and these tests fail when a copy
drifts from the code."""

from __future__ import annotations

import pytest

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
