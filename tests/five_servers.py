"""The five real servers the gateway is shown, tested and benchmarked with: server-everything,
server-memory and server-filesystem from npm, mcp-server-time and mcp-server-git from PyPI, at pinned
versions.

``Installs.entries`` is their ``mcpServers`` block, each server given what fixes its tool text: the time
server the zone ``UTC`` (else its descriptions name the machine's), the filesystem server a directory,
the git server a repository. The tests install them once in their install cache (``conftest.FIVE_SERVERS``,
by the fixtures of ``tests/gateway/test_gateway.py``); docs/gateway.md's ``stats`` example is written from
there (``tests/docs/figures.py``). ``python -m bench.peers`` installs them in the checkout's ``.cache`` and
gives them the same entries: this module imports nothing of the tests' own (no pytest, no conftest), so the
bench runs in any clone.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything@2026.8.31"
NPM_PACKAGES = ("@modelcontextprotocol/server-memory@2026.8.31", "@modelcontextprotocol/server-filesystem@2026.8.31")
"""The other two npm servers (server-everything is installed on its own, for the tests that need only it)."""
PYPI_PACKAGES = ("mcp-server-time==2026.10.19", "mcp-server-git==2026.10.19")
NODE_SERVERS = ("everything", "memory", "filesystem")
PYPI_IMPORTS = ("mcp.client.stdio", "mcp.server.mcpserver", "pydantic", "mcp_server_time", "mcp_server_git", "git")
"""What the two PyPI servers import before they serve: a fork server of their environment imports it once."""


@dataclass(frozen=True, slots=True)
class Installs:
    """Where the five servers are installed."""

    npm: Path
    """npm's prefix, holding the three ``NODE_SERVERS``."""
    python: Path
    """The virtual environment of the two ``PYPI_PACKAGES``."""

    def node_entry(self, name: str) -> Path:
        """The script of the npm server ``name`` (one of ``NODE_SERVERS``)."""
        return self.npm / "node_modules" / "@modelcontextprotocol" / f"server-{name}" / "dist" / "index.js"

    def python_command(self, name: str) -> Path:
        """The command of the PyPI server ``mcp-server-NAME``."""
        return self.python / "bin" / f"mcp-server-{name}"

    def missing(self) -> str | None:
        """What of the five servers is not installed here, in one line (None: all of them are)."""
        absent = [] if shutil.which("node") else ["node (Debian package nodejs)"]
        absent += [str(self.node_entry(name)) for name in NODE_SERVERS if not self.node_entry(name).exists()]
        absent += [str(self.python_command(name)) for name in ("time", "git") if not self.python_command(name).exists()]
        return f"the five servers are not all installed ({', '.join(absent)})" if absent else None

    def entries(self, files: Path, memory_file: Path, repository: Path) -> dict[str, dict[str, Any]]:
        """The ``mcpServers`` entries of the five servers: the filesystem server serves ``files``, the memory
        server keeps its graph in ``memory_file``, the git server reads ``repository``."""
        node = shutil.which("node") or "node"
        memory = self.node_entry("memory")
        return {
            "everything": {"command": node, "args": [str(self.node_entry("everything")), "stdio"]},
            "memory": {"command": node, "args": [str(memory)], "env": {"MEMORY_FILE_PATH": str(memory_file)}},
            "filesystem": {"command": node, "args": [str(self.node_entry("filesystem")), str(files)]},
            "time": {"command": str(self.python_command("time")), "args": ["--local-timezone", "UTC"]},
            "git": {"command": str(self.python_command("git")), "args": ["--repository", str(repository)]},
        }
