"""A test skipped because this machine lacks a program or an extra says so once, at the end of the run,
with the command that installs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..services import needs_haproxy, needs_redis
from ..skips import summary

ROOT = Path(__file__).resolve().parents[2]


def test_the_skip_reasons_sum_up_to_the_packages_and_extras_that_enable_them() -> None:
    reasons = [
        needs_redis.kwargs["reason"],
        needs_redis.kwargs["reason"],
        needs_haproxy.kwargs["reason"],
        "needs the semantic extra: pip install 'lazymcp[semantic]'",
        "could not import 'numpy': No module named 'numpy'",
        "traces need opentelemetry-sdk (lazymcp[otel])",
        "../shared/evals is not here (it sits beside the project in CI)",
    ]
    assert summary(reasons) == [
        "6 tests skipped for what this machine lacks; to run them:",
        "  apt-get install haproxy redis-server",
        '  .venv/bin/pip install -e ".[dev,otel,semantic]"',
    ]
    assert summary(["the parent-death signal is Linux's"]) == []


def test_a_run_without_redis_server_ends_naming_the_package_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", "tests/run/test_cluster_rates.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(Path(sys.executable).parent)},  # no redis-server on it
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("  apt-get install redis-server") == 1, done.stdout


def test_the_readme_names_what_the_whole_suite_needs_from_the_machine() -> None:
    """The README's ``apt-get install`` line holds every Debian package a skip reason of the suite names, and
    its ``pip install`` line every extra (but the multilingual model's, which its own tests' skip names)."""
    from ..skips import needs

    packages, extras = set[str](), set[str]()
    for source in (ROOT / "tests").rglob("*.py"):
        if source.name not in ("skips.py", "test_skips.py"):
            for line in source.read_text().splitlines():
                wanted, extra = needs(line)
                packages |= wanted
                extras |= extra
    assert {"redis-server", "haproxy", "chromium"} <= packages  # the reasons are found
    readme = (ROOT / "README.md").read_text()
    [apt] = [line for line in readme.splitlines() if line.startswith("apt-get install ")]
    [pip] = [line for line in readme.splitlines() if line.startswith(".venv/bin/pip install -e")]
    assert packages <= set(apt.split()[2:]), apt
    listed = set(pip.partition("[")[2].partition("]")[0].split(","))
    assert extras - {"semantic-multilingual"} <= listed, pip
