"""How a message tells a user to add an optional extra: lazymcp is installed from its checkout (as a tool with
pipx or uv, or into a virtual environment), never from the package index, so every hint names a line that
works there."""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """``the EXTRA extra (pipx install ".[EXTRA]" from the checkout, or pip install -e ".[EXTRA]")``."""
    return f'the {extra} extra (pipx install ".[{extra}]" from the checkout, or pip install -e ".[{extra}]")'
