"""The files of sign-ins (this user's ``tokens.json``, a team gateway's sealed file) are written so that a crash
leaves the old file or the new one: the new file is synced to disk before it is renamed into place, and the
directory after. Watched from outside, with ``strace``, on a real process that keeps a sign-in in each."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..forkserver import VARIABLE

STRACE = shutil.which("strace")
WRITER = """
import sys
from pathlib import Path
from lazymcp.access.sealed import Sealer, sealed_file
from lazymcp.access.tokens import TokenStore
where = Path(sys.argv[1])
TokenStore(where / "plain").put("key", {"tokens": {"access_token": "a"}})
sealed_file(Sealer(b"s" * 40), where / "sealed").put("key", {"tokens": {"access_token": "a"}})
"""


@pytest.mark.skipif(STRACE is None, reason="strace not installed (Debian package strace)")
@pytest.mark.parametrize(("folder", "name"), [("plain", "tokens.json"), ("sealed", "sign-ins.sealed")])
def test_a_file_of_sign_ins_is_synced_before_its_rename_and_its_directory_after(
    tmp_path: Path, folder: str, name: str
) -> None:
    assert STRACE is not None
    trace = tmp_path / "trace"
    command = [STRACE, "-f", "-y", "-o", str(trace), "-e", "trace=fsync,fdatasync,rename,renameat,renameat2"]
    env = {key: value for key, value in os.environ.items() if key != VARIABLE}  # traced here, not in a fork
    done = subprocess.run(
        [*command, sys.executable, "-c", WRITER, str(tmp_path)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    directory = str(tmp_path / folder)
    calls = [line for line in trace.read_text().splitlines() if directory in line]
    renamed = [n for n, line in enumerate(calls) if re.search(r"rename\w*\(", line) and f"{directory}/{name}" in line]
    assert len(renamed) == 1, calls
    before, after = calls[: renamed[0]], calls[renamed[0] + 1 :]
    assert any(re.search(rf"f(data)?sync\(\d+<{re.escape(directory)}/\.[^>]*\.tmp>", line) for line in before), calls
    assert any(re.search(rf"fsync\(\d+<{re.escape(directory)}>\)", line) for line in after), calls
