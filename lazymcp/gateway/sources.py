"""Where the servers are in the files clients write, and how each client reads its file.

- Claude Desktop, Claude Code's ``.mcp.json`` and Cursor: ``mcpServers``; VS Code: ``servers``.
- Claude Code's ``~/.claude.json``: the user's servers in ``mcpServers``, and each project's in
  ``projects.<folder>.mcpServers``; the gateway reads the user's and one project's (``claude_project``).
- VS Code's and Cursor's ``mcp.json`` are JSON with comments (``//``, ``/* */``) and trailing commas,
  as those editors read them; Claude's files are plain JSON (``with_comments``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

from lazymcp.protocol.errors import ConfigError


def claude_project(
    data: Mapping[str, object], project: str | Path | None, source: str
) -> tuple[str, Mapping[str, object]] | None:
    """In Claude Code's ``~/.claude.json``, the block of project ``project`` (its folder and its block), else
    the current directory's when it has servers there; None when neither applies.

    Raises:
        ConfigError: ``project`` is given but the file has no block for it.
    """
    projects = data.get("projects")
    if not isinstance(projects, Mapping):
        if project is not None:
            raise ConfigError(
                f"{source}: --project applies to Claude Code's ~/.claude.json, and this file has no 'projects'"
            )
        return None
    projects = cast(Mapping[str, object], projects)
    wanted = Path(project if project is not None else Path.cwd()).resolve()
    for folder, block in projects.items():
        if isinstance(block, Mapping) and Path(folder).resolve() == wanted:
            block = cast(Mapping[str, object], block)
            if project is not None or block.get("mcpServers"):
                return folder, block
    if project is not None:
        raise ConfigError(f"{source}: no project {str(wanted)!r} under 'projects'")
    return None


def with_comments(path: str | Path) -> bool:
    """Is the file read with comments and trailing commas, as its client reads it? VS Code's and Cursor's
    ``mcp.json`` are (and a ``.jsonc`` file); Claude's files are plain JSON."""
    return Path(path).name == "mcp.json" or Path(path).suffix == ".jsonc"
