"""The benchmark harness runs end to end (``python -m bench --quick``) and its exact figures are sane.

Timings are never asserted: the machine is shared and CI only proves the harness works. Token and
byte counts are exact and deterministic, so they are checked, across two runs too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conftest import CATALOGS, ROOT, SHARED

SECTIONS = ("tokens", "latency", "scale", "proxy", "gateway", "search", "manifest")
QUICK_SIZES = (10, 100, 1_000)
RUN_TIMEOUT = 280.0

# One worker runs the module: its tests share one run of the harness (``quick``), and two runs at once would
# install server-everything into the same directory at once.
pytestmark = pytest.mark.xdist_group("bench")


def run_bench(out: Path, *args: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench", "--json", str(out), *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Targets (reported, never asserted)" in done.stdout
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_bench(tmp_path_factory.mktemp("bench") / "quick.json", "--quick")


def token_figures(results: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in entry.items() if k != "seconds"} for entry in results["sections"]["tokens"]["catalogs"]]


@pytest.mark.timeout(300)
def test_quick_run_has_every_section(quick: dict[str, Any]) -> None:
    assert list(quick["sections"]) == list(SECTIONS)
    for name in ("tokens", "latency", "scale", "proxy"):  # proxy installs server-everything from npm
        assert quick["sections"][name]["status"] == "ok", name
    proxied = quick["sections"]["proxy"]["tools/call echo"]
    assert set(proxied) == {"direct", "byte relay", "lazymcp proxy"}
    if (CATALOGS / "combined.json").exists():
        gateway = quick["sections"]["gateway"]
        assert set(gateway["calls"]["median_us"]) == {*proxied, "lazymcp gateway, 5 servers"}
        assert (gateway["cold_start"]["servers"], gateway["cold_start"]["tools_listed"]) == (30, 954)
    if not (SHARED / "evals").is_dir():
        assert quick["sections"]["search"]["status"] == "skipped"
        return
    assert (
        quick["sections"]["search"]["methods"]["bm25f"]["recall@5"]
        >= quick["sections"]["search"]["methods"]["okapi"]["recall@5"]
    )
    assert quick["meta"]["quick"] is True
    assert {"date", "nproc", "cpu", "python", "seconds"} <= set(quick["meta"])
    assert {target["key"] for target in quick["targets"]} >= {"bare_tokens", "stock_tokens", "cache_memory"}


@pytest.mark.timeout(300)
def test_token_figures_are_sane(quick: dict[str, Any]) -> None:
    catalogs = quick["sections"]["tokens"]["catalogs"]
    synthetic = [entry["tools"] for entry in catalogs if entry["kind"] == "synthetic"]
    assert synthetic == list(QUICK_SIZES)
    for entry in catalogs:
        modes = entry["modes"]
        full, stock, bare, floor = (modes[m]["tokens"] for m in ("full", "stock", "bare:summary", "bare:name"))
        assert 0 < floor <= bare < stock, entry["catalog"]
        assert bare < full, entry["catalog"]
        if entry["kind"] == "synthetic" or entry["tools"] >= 100:  # (gitlab's 9 empty schemas: stock > full)
            assert stock < full, entry["catalog"]
        assert modes["full"]["of_full"] == 1.0
        assert modes["full"]["tools"] == entry["tools"]
        assert modes["stock"]["tools"] == entry["tools"] + 3  # + the describe_tools, search_tools and invoke_tool
        assert all(row["bytes"] > row["tokens"] > 0 for row in modes.values())
        assert 0 < entry["describe"]["median_tokens"] <= entry["describe"]["max_tokens"] < full + 10
        assert bare < entry["session"]["tokens"], entry["catalog"]
    for small, large in zip(catalogs[:2], catalogs[1:3], strict=True):  # synthetic: more tools, more tokens
        assert small["modes"]["full"]["tokens"] < large["modes"]["full"]["tokens"]


@pytest.mark.timeout(300)
def test_real_catalogs_are_measured_when_present(quick: dict[str, Any]) -> None:
    real = {entry["catalog"]: entry for entry in quick["sections"]["tokens"]["catalogs"] if entry["kind"] == "real"}
    if not CATALOGS.is_dir():
        assert real == {}
        return
    expected = {p.stem for p in CATALOGS.glob("*.json")} | {
        f"variants/{p.stem}" for p in (CATALOGS / "variants").glob("*.json")
    }
    assert set(real) == expected
    combined = real.get("combined")
    if combined is not None:  # what ../shared/catalogs/README.md measured for the same data
        assert combined["tools"] == 954
        assert combined["modes"]["full"]["tokens"] == 410_638
        assert combined["modes"]["bare:description"]["tokens"] == 119_714


@pytest.mark.timeout(300)
def test_latency_and_scale_shapes(quick: dict[str, Any]) -> None:
    latency = quick["sections"]["latency"]
    transports = {run["transport"] for run in latency["runs"]}
    assert transports == {"memory", "stdio"}
    for run in latency["runs"]:
        assert run["rounds"]["light"] >= 1 and run["rounds"]["heavy"] >= 1
        assert set(run["ops"]) == set(latency["ops"])
        for stats in run["ops"].values():
            assert 0 < stats["min_us"] <= stats["median_us"] <= stats["p95_us"]
        assert run["ratios"]["tools/describe"]["vs"] == "ping"
    assert {entry["tools"] for entry in latency["handler"] if entry["kind"] == "synthetic"} == set(QUICK_SIZES)
    scale = quick["sections"]["scale"]
    assert {entry["transport"] for entry in scale["flatness"]} >= {"memory", "handler"}
    for entry in scale["memory"]:
        assert entry["json_bytes"] > 0 and entry["cache_bytes"] > 0 and entry["tools_bytes"] > 0
    assert [entry["tools"] for entry in scale["build"] if entry["kind"] == "synthetic"] == list(QUICK_SIZES)


@pytest.mark.timeout(300)
def test_token_figures_are_deterministic(quick: dict[str, Any], tmp_path: Path) -> None:
    again = run_bench(tmp_path / "tokens.json", "--quick", "--only", "tokens")
    assert again["sections"]["latency"] == {"status": "not selected"}
    assert token_figures(again) == token_figures(quick)


@pytest.mark.timeout(300)
def test_a_second_session_describes_from_the_cache_and_the_manifest_stays_small(quick: dict[str, Any]) -> None:
    manifest = quick["sections"]["manifest"]
    if manifest["status"] == "skipped":
        pytest.skip(manifest["reason"])
    first, second = manifest["cache"]["sessions"]
    assert (first["describe_requests"], first["from_cache"]) == (manifest["cache"]["described"], 0)
    assert (second["describe_requests"], second["from_cache"]) == (0, manifest["cache"]["described"])
    assert first["manifest_requests"] == second["manifest_requests"] == 1
    sizes = manifest["sizes"]
    assert sizes["bytes"]["bare"] < sizes["bytes"]["manifest"] < sizes["bytes"]["full"]
    targets = {entry["key"]: entry for entry in quick["targets"]}
    assert targets["second_session"]["met"] is True
    assert targets["manifest_bytes"]["measured"] == sizes["manifest_over_bare"]


def test_the_docs_table_of_peers_is_the_one_bench_peers_wrote() -> None:
    from bench.peers import PEERS_DOC, PEERS_MD, marked_table

    written = marked_table(PEERS_MD.read_text())
    assert written is not None, f"{PEERS_MD.name} has no table between the peers markers"
    assert written.count("\n|") >= 8, written
    assert marked_table(PEERS_DOC.read_text()) == written, (
        f"run python -m bench.peers, or copy its table to {PEERS_DOC}"
    )
