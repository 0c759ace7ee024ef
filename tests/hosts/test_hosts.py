"""The host matrix: real hosts (Claude Code, Codex CLI, Gemini CLI), run headless against a scripted model
API, with lazymcp serving the sample catalog in each mode over stdio.

Each run: the scripted model (``agent.py``) finds ``issues_get`` and calls it with its required arguments,
through whatever the host and the mode offer. The test checks that the arguments reached lazymcp intact
and that what was measured (the tools and tokens of the first request, the turns) is what
``matrix.MEASURED`` says, from which the table of docs/hosts.md is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import ROOT
from .agent import VALUES
from .matrix import FAILING, MEASURED, differences
from .support import HOSTS, MODES, REFUSED, RUN_TIMEOUT, VARIANTS, compact, measure, run, target_arguments

RESULTS = ROOT / ".cache" / "hosts" / "results"
"""What each cell saw, in the checkout (git-ignored)."""


@pytest.mark.timeout(RUN_TIMEOUT + 600)  # the first run of a host installs it
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_host_calls_a_tool_through_lazymcp(variant: str, mode: str, tmp_path: Path) -> None:
    outcome = run(variant, mode, tmp_path / "home")
    if (variant, mode) in FAILING:
        if outcome.problems or not any(map(target_arguments, outcome.received)):
            pytest.xfail(FAILING[(variant, mode)])
        pytest.fail(f"{variant} {mode} reaches the tool now: measure it and take it out of matrix.FAILING")
    assert not outcome.problems, f"the scripted model could not go on: {outcome.problems}\n{outcome.output}"
    if variant in REFUSED:  # refused once, the host asks again with every definition in full
        assert outcome.refused, f"the host deferred no tool, so nothing was refused\n{outcome.output}"
        assert not any("defer_loading" in json.dumps(body) for body in outcome.requests)
    called = [args for args in map(target_arguments, outcome.received) if args is not None]
    assert called and called[-1] == VALUES, f"lazymcp received {outcome.received}\n{outcome.output}"
    cell = measure(outcome, HOSTS[VARIANTS[variant][0]].marker)
    RESULTS.mkdir(parents=True, exist_ok=True)  # what was seen, for whoever updates matrix.MEASURED
    (RESULTS / f"{variant}-{mode}.json").write_text(json.dumps(cell.__dict__))
    assert cell.arguments == compact(VALUES)
    found = differences(MEASURED[(variant, mode)], cell)
    assert not found, f"{variant} {mode}: " + "; ".join(found) + " (see .cache/hosts/results, then matrix.MEASURED)"
