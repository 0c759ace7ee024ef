"""Two gateways without Redis that would keep their principals' sign-ins in one sealed file (the same
``XDG_CONFIG_HOME``) would write over each other's: the second one does not start, and says why in one line.
Real gateway processes over real HTTP."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from ..conftest import free_port
from .test_signin_people import BOUND, Team


@pytest.mark.anyio
async def test_a_second_gateway_on_the_same_sealed_file_does_not_start(tmp_path: Path) -> None:
    team = Team(tmp_path, "http://127.0.0.1:1")
    with anyio.fail_after(BOUND):
        async with team.gateway():
            second = team.command()
            second[second.index("--http") + 1] = f"127.0.0.1:{free_port()}"
            with anyio.fail_after(60):  # a second that started would serve until stopped
                done = await anyio.run_process(
                    second, env={**os.environ, **team.env}, check=False, stdin=subprocess.DEVNULL
                )
    text = done.stderr.decode()
    assert done.returncode != 0 and text.count("\n") == 1, text
    assert "kept by another gateway already" in text and "--redis" in text, text
