"""A manifest another version of lazymcp wrote in another format is no error: it is rebuilt, quietly, by a
real ``lazymcp gateway --refresh`` in front of a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lazymcp.gateway.config import load_config
from lazymcp.run.manifests import FORMAT, ManifestStore

from ..conftest import SERVERS


def test_a_manifest_of_another_format_is_rebuilt_quietly(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"plain": {"command": sys.executable, "args": [str(SERVERS / "plain_server.py")]}}})
    )
    store = ManifestStore(cache)
    path = store.path(load_config(config, {}).servers[0].identity())
    cache.mkdir(mode=0o700)
    later = {"format": FORMAT + 1, "tools": {"by-name": {}}, "fetched": "yesterday", "written-by": "lazymcp 9.0"}
    path.write_text(json.dumps(later))
    assert store.load(load_config(config, {}).servers[0].identity()) is None  # read as absent, not an error
    done = subprocess.run(
        [sys.executable, "-m", "lazymcp", "gateway", "--refresh", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "LAZYMCP_CACHE_DIR": str(cache)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "manifest" not in done.stderr and "error" not in done.stderr, done.stderr
    rebuilt = json.loads(path.read_text())
    assert rebuilt["format"] == FORMAT and [tool["name"] for tool in rebuilt["tools"]]
