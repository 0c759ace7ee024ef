"""What the skipped tests need: the skip reasons of tests that want a program or an extra name what
enables them (``(Debian package redis-server)``, ``lazymcp[semantic]``), and the end of the run sums them
up once, as the commands that install them (``tests/conftest.py``'s ``pytest_terminal_summary``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_DEBIAN = re.compile(r"Debian package (\S+?)\)")
_EXTRA = re.compile(r"lazymcp\[([\w-]+)\]|the ([\w-]+) extra")
_MODULES = {"numpy": "semantic", "onnxruntime": "semantic", "opentelemetry": "otel"}
"""Modules an ``importorskip`` names, and the extra that brings each."""
_IMPORT = re.compile(r"could not import '([\w.]+)'")


def needs(reason: str) -> tuple[set[str], set[str]]:
    """The Debian packages and the extras one skip reason names."""
    packages = set(_DEBIAN.findall(reason))
    extras = {a or b for a, b in _EXTRA.findall(reason)}
    for module in _IMPORT.findall(reason):
        extra = _MODULES.get(module.split(".")[0])
        if extra is not None:
            extras.add(extra)
    return packages, extras


def summary(reasons: Iterable[str]) -> list[str]:
    """The lines that say how to run the tests skipped for ``reasons``: none when no reason names a
    package or an extra."""
    count, packages, extras = 0, set[str](), set[str]()
    for reason in reasons:
        wanted, extra = needs(reason)
        if wanted or extra:
            count += 1
            packages |= wanted
            extras |= extra
    if not count:
        return []
    lines = [f"{count} test{'' if count == 1 else 's'} skipped for what this machine lacks; to run them:"]
    if packages:
        lines.append(f"  apt-get install {' '.join(sorted(packages))}")
    if extras:
        lines.append(f'  .venv/bin/pip install -e ".[{",".join(["dev", *sorted(extras - {"dev"})])}]"')
    return lines
