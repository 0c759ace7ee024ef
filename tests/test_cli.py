"""The command line, run in-process the way a user runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lazymcp.cli import main

from .conftest import CATALOGS, shared_catalog


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main([argv[0], "--json", *argv[1:]]) == 0
    return json.loads(capsys.readouterr().out)


def rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["mode"]: row for row in report["rows"]}


def test_stats_measures_the_built_in_sample_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "stats")
    modes = rows(report)
    assert report["native"] is True
    assert list(modes) == ["full", "stock", "stubs:name", "stubs:summary", "stubs:description"]
    assert modes["full"]["tools"] == 130
    assert modes["stock"]["tools"] == 132  # plus describe_tools and search_tools
    assert modes["stubs:name"]["tokens"] < modes["stubs:summary"]["tokens"] < modes["full"]["tokens"]
    assert len(report["costliest"]) == 5


def test_stats_meets_the_token_targets_on_the_real_combined_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    shared_catalog("combined")  # skips where ../shared is absent
    modes = rows(run_json(capsys, "stats", "--catalog", str(CATALOGS / "combined.json")))
    assert modes["full"]["tokens"] == 410_638  # the figure the catalog's capture notes give
    assert modes["stubs:summary"]["tokens"] / modes["full"]["tokens"] <= 0.06
    assert modes["stock"]["tokens"] / modes["full"]["tokens"] <= 0.08


def test_stats_prints_a_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps([{"name": "a", "description": "Do a. More.", "inputSchema": {"type": "object"}}]))
    assert main(["stats", "--catalog", str(catalog)]) == 0
    out = capsys.readouterr().out
    assert "stubs:summary" in out and "costliest tools" in out


def test_stats_of_a_server_without_the_extension_computes_the_saving(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    script = Path(__file__).with_name("servers") / "plain_server.py"
    report = run_json(capsys, "stats", "--", sys.executable, str(script))
    modes = rows(report)
    assert report["native"] is False
    assert modes["full"]["tools"] == 3
    assert modes["stubs:name"]["tokens"] < modes["full"]["tokens"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [(None, "cannot read"), ("{not json", "not JSON"), ('{"tools": 3}', "must be a JSON list"), ('[{"x": 1}]', "name")],
)
def test_a_bad_catalog_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, needle: str
) -> None:
    path = tmp_path / "catalog.json"
    if content is not None:
        path.write_text(content)
    assert main(["stats", "--catalog", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lazymcp: error:") and needle in err


def test_serve_rejects_a_bad_http_address(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--http", "nowhere"])
    assert exit_info.value.code == 2
    assert "HOST:PORT" in capsys.readouterr().err


def test_stats_refuses_two_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--url", "http://127.0.0.1:9/mcp", "--", "server"]) == 2
    assert "one of" in capsys.readouterr().err
