"""The five real servers the gateway is shown and tested with: server-everything, server-memory and
server-filesystem from npm, mcp-server-time and mcp-server-git from PyPI, at pinned versions, installed
once in the tests' install cache (``conftest.TEST_CACHE``) by the fixtures of ``tests/gateway/test_gateway.py``.

``entries`` is their ``mcpServers`` block, each server given what fixes its tool text: the time server the
zone ``UTC`` (else its descriptions name the machine's), the filesystem server a directory, the git
server a repository. docs/gateway.md's ``stats`` example is written from it (``tests/docs/figures.py``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from .conftest import NPM_CACHE, TEST_CACHE

NPM_PACKAGES = ("@modelcontextprotocol/server-memory@2026.8.31", "@modelcontextprotocol/server-filesystem@2026.8.31")
PYPI_PACKAGES = ("mcp-server-time==2026.10.19", "mcp-server-git==2026.10.19")
PY_SERVERS = Path(os.environ.get("LAZYMCP_PY_SERVERS_DIR", TEST_CACHE / "py-servers"))
NODE_SERVERS = ("everything", "memory", "filesystem")


def node_entry(name: str) -> Path:
    """The script of the npm server ``name`` (one of ``NODE_SERVERS``) in the install cache."""
    return NPM_CACHE / "node_modules" / "@modelcontextprotocol" / f"server-{name}" / "dist" / "index.js"


def python_command(name: str) -> Path:
    """The command of the PyPI server ``mcp-server-NAME`` in its virtual environment."""
    return PY_SERVERS / "bin" / f"mcp-server-{name}"


def missing() -> str | None:
    """What of the five servers is not installed here, in one line (None: all of them are)."""
    absent = [] if shutil.which("node") else ["node (Debian package nodejs)"]
    absent += [str(node_entry(name)) for name in NODE_SERVERS if not node_entry(name).exists()]
    absent += [str(python_command(name)) for name in ("time", "git") if not python_command(name).exists()]
    if not absent:
        return None
    return f"the five servers are not all installed ({', '.join(absent)}); tests/gateway/test_gateway.py installs them"


def entries(files: Path, memory_file: Path, repository: Path) -> dict[str, dict[str, Any]]:
    """The ``mcpServers`` entries of the five servers: the filesystem server serves ``files``, the memory
    server keeps its graph in ``memory_file``, the git server reads ``repository``."""
    node = shutil.which("node") or "node"
    return {
        "everything": {"command": node, "args": [str(node_entry("everything")), "stdio"]},
        "memory": {"command": node, "args": [str(node_entry("memory"))], "env": {"MEMORY_FILE_PATH": str(memory_file)}},
        "filesystem": {"command": node, "args": [str(node_entry("filesystem")), str(files)]},
        "time": {"command": str(python_command("time")), "args": ["--local-timezone", "UTC"]},
        "git": {"command": str(python_command("git")), "args": ["--repository", str(repository)]},
    }
