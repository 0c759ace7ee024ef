"""The figures the README and docs/how-it-works.md show, written from the command that measures them:
``lazymcp stats`` on the built-in sample (the README's "What you will see"), ``lazymcp stats --catalog``
on the 954 captured tools of ``../shared/catalogs/combined.json`` (the README's headline, the table of
docs/how-it-works.md), and ``lazymcp stats --config`` over the five real servers (``tests/five_servers.py``,
docs/gateway.md's example). ``python -m tests.docs.figures`` writes them; ``--check`` only compares (exit 1
where a copy differs). The captured catalogs sit beside the project, the five servers in the tests' install
cache; where they are absent their figures are left as they are, and the test that checks them is skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..conftest import CATALOGS, FIVE_SERVERS, warm_environment
from ..doc_tables import DOCS, README, ROOT, DocTable
from ..five_servers import PYPI_IMPORTS

COMBINED = CATALOGS / "combined.json"
HEADLINE = DocTable(
    README, "<!-- headline: written by python -m tests.docs.figures -->\n", "<!-- end of the headline -->\n"
)
STATS = DocTable(README, "<!-- stats: written by python -m tests.docs.figures -->\n", "<!-- end of the stats -->\n")
LISTINGS = DocTable(
    DOCS / "how-it-works.md",
    "<!-- listings: written by python -m tests.docs.figures -->\n",
    "<!-- end of the listings -->\n",
)
GATEWAY = DocTable(
    DOCS / "gateway.md",
    "<!-- five servers: written by python -m tests.docs.figures -->\n",
    "<!-- end of the five servers -->\n",
)
FILES = Path("/tmp/lazymcp-figures-files")
"""The filesystem server's directory: one path wherever the figures are made, should its tool text name it."""


def stats(*args: str, cache: Path | None = None) -> str:
    """``lazymcp stats ARGS``'s output, in an environment that sets no mode (``cache``: its manifests' cache,
    else the default one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYMCP_") and k != "LAZY_MODE"}
    if cache is not None:
        env["LAZYMCP_CACHE_DIR"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-m", "lazymcp", "stats", *args], capture_output=True, text=True, env=env, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"lazymcp stats {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def sample_stats() -> str:
    """The table ``lazymcp stats`` prints for the built-in sample, as a code block."""
    lines = stats().splitlines()
    start = next(i for i, line in enumerate(lines) if "on the wire" in line)
    end = next(i for i, line in enumerate(lines) if i > start and not line.strip())
    return "```\n$ lazymcp stats\n" + "\n".join(lines[start:end]) + "\n```\n"


def gateway_stats() -> str:
    """What ``lazymcp stats --config`` prints over the five servers, every one started (an empty manifest
    cache), as a code block."""
    FILES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lazymcp-figures-") as scratch:
        config = Path(scratch) / "mcp.json"
        servers = FIVE_SERVERS.entries(FILES, Path(scratch) / "memory.jsonl", ROOT)
        warm_environment(FIVE_SERVERS.python / "bin" / "python", *PYPI_IMPORTS)
        config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"mode": "describe"}}))
        printed = stats("--config", str(config), cache=Path(scratch) / "cache")
    return "```\n$ lazymcp stats --config mcp.json\n" + printed.strip("\n") + "\n```\n"


def combined() -> tuple[int, dict[str, dict[str, Any]]]:
    """The captured catalogs' server count, and ``lazymcp stats --json``'s rows for their 954 tools, by mode."""
    servers = len(json.loads(COMBINED.read_text())["sources"])
    rows = json.loads(stats("--catalog", str(COMBINED), "--json"))["rows"]
    return servers, {row["mode"]: row for row in rows}


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}"


def headline(servers: int, rows: dict[str, dict[str, Any]]) -> str:
    full, stock, ext = rows["full"], rows["stock"], rows["stubs:summary"]
    seen = full["visible_tokens"]
    return (
        f"On the {full['tools']} tools of {servers} popular public MCP servers, the tool definitions put\n"
        f"**{seen:,} tokens** in the model's prompt (cl100k_base); through lazymcp, **{stock['visible_tokens']:,}**"
        f" ({_share(stock['visible_tokens'], seen)})\nfor any client, and **{ext['visible_tokens']:,}**"
        f" ({_share(ext['visible_tokens'], seen)}) for a client that speaks its extension\n"
        "([how](docs/how-it-works.md)).\n"
    )


def listings(servers: int, rows: dict[str, dict[str, Any]]) -> str:
    full = rows["full"]
    seen = full["visible_tokens"]
    table = [
        ("full `tools/list` (today)", "full"),
        ("`{name, description}` stubs", "stubs:description"),
        ("lazymcp stubs, for a client that speaks the extension", "stubs:summary"),
        (
            "lazymcp stubs, for a stock client (valid MCP + the `describe_tools`, `search_tools` and "
            "`invoke_tool` meta-tools)",
            "stock",
        ),
        ("names only (the floor)", "stubs:name"),
    ]
    lines = [
        f"The {full['tools']} tools of {servers} popular public MCP servers cost **{full['tokens']:,} tokens** on the"
        f" wire\n(cl100k_base), of which **{seen:,}** reach the model's prompt. Listed by lazymcp:\n",
        "| listing | on the wire | what the model sees | of full (model) |",
        "|---|---:|---:|---:|",
    ]
    for label, mode in table:
        row = rows[mode]
        share = _share(row["visible_tokens"], seen)
        share = f"**{share}**" if mode in ("stubs:summary", "stock") else share
        lines.append(f"| {label} | {row['tokens']:,} | {row['visible_tokens']:,} | {share} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parts = [(STATS, sample_stats())]
    if COMBINED.exists():
        servers, rows = combined()
        parts += [(HEADLINE, headline(servers, rows)), (LISTINGS, listings(servers, rows))]
    else:
        sys.stderr.write(f"{COMBINED} is not here: the figures of the 954 tools are left as they are\n")
    lacking = FIVE_SERVERS.missing()
    if lacking is None:
        parts.append((GATEWAY, gateway_stats()))
    else:
        sys.stderr.write(f"{lacking}: docs/gateway.md's example is left as it is\n")
    if "--check" in argv:
        differ = [f"{part.file.name} ({part.begin.strip()})" for part, text in parts if part.of() != text]
        for name in differ:
            sys.stderr.write(f"differs: {name}\n")
        return 1 if differ else 0
    for part, text in parts:
        part.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
