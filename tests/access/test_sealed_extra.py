"""A team gateway asked to seal sign-ins where the ``cryptography`` package (the ``team-sign-in`` extra) is not
installed stops at the start with one line naming how to install it, and no traceback: a real ``lazymcp
gateway`` process in which that package cannot be imported (a ``sitecustomize`` on ``PYTHONPATH`` refuses
it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..conftest import free_port

BLOCKER = """
import importlib.abc
import sys


class NoCryptography(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "cryptography" or name.startswith("cryptography."):
            raise ImportError(f"No module named {name!r}")
        return None


sys.meta_path.insert(0, NoCryptography())
"""


def test_without_the_cryptography_package_the_start_says_how_to_install_it_in_one_line(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(BLOCKER)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"people": {"url": "http://127.0.0.1:1/mcp"}}}))
    tokens, key = tmp_path / "tokens", tmp_path / "key"
    tokens.write_text("alice: tok-alice-0123456789\n")
    key.write_text("k" * 48)
    for path in (tokens, key):
        path.chmod(0o600)
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"127.0.0.1:{port}"]
    command += ["--token-file", str(tokens), "--public-url", f"http://127.0.0.1:{port}", "--secrets-key-file", str(key)]
    path = os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    env["LAZYMCP_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    said = done.stderr
    assert done.returncode != 0 and said.count("\n") == 1, said
    assert "Traceback" not in said and "needs the cryptography package" in said, said
    assert 'pip install -e ".[team-sign-in]"' in said, said
