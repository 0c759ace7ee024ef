"""The ``lazymcp`` command: argparse in, one library call per subcommand, text out.

The flags are ``lazymcp.cli.flags``'s, what each subcommand does with them ``lazymcp.cli.commands``'s
(``lazymcp.cli.upkeep``'s for ``check``, ``status``, ``login`` and ``logout``).
Every failure is one line on stderr naming what failed and a non-zero exit status (``--debug`` adds
the traceback); ``proxy`` and ``stats`` take the server's command after ``--`` or without it.

May import: anything in the package; nothing imports it but ``lazymcp.__main__``.
"""

from __future__ import annotations

import shlex
import sys
import traceback
from collections.abc import Sequence

from lazymcp.cli import commands, upkeep
from lazymcp.cli.flags import parser
from lazymcp.protocol.errors import LazyMCPError
from lazymcp.run.notices import LEVELS, configure, describe_command, failure

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # what the command can do, rather than argparse's "arguments are required"
        parser().print_help(sys.stderr)
        return 2
    command: list[str] = []
    split = "--" in argv
    if split:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1 :]
    args = parser().parse_args(argv)
    upstream: list[str] = list(getattr(args, "upstream", None) or [])
    if upstream:  # the command came without a leading --, so the -- that followed is the command's own
        command = [*upstream, "--", *command] if split else upstream
    if command and args.command == "serve":
        return _error(f"serve takes no command ({shlex.join(command)!r}); did you mean lazymcp proxy?")
    level = commands.chosen_level(args) or "info"
    if level not in LEVELS:
        return _error(f"LAZYMCP_LOG_LEVEL must be one of {', '.join(LEVELS)}, not {level!r}")
    configure(level)
    try:
        if args.command == "serve":
            return commands.serve(args)
        if args.command == "proxy":
            return commands.proxy(args, command)
        if args.command == "gateway":
            return commands.gateway(args)
        if args.command == "check":
            return upkeep.check(args)
        if args.command == "status":
            return upkeep.status(args)
        if args.command in ("login", "logout"):
            return upkeep.sign_in(args)
        return commands.stats(args, command)
    except LazyMCPError as exc:
        return _error(exc.message, exc if args.debug else None, status=exc.exit_status)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        target = getattr(args, "url", None) or (describe_command(command) if command else None) or args.command
        return _error(failure(exc, target), exc if args.debug else None, status=1)


def _error(message: str, exc: BaseException | None = None, *, status: int = 2) -> int:
    """Say ``message`` as one line on stderr (the traceback first, with ``--debug``); returns ``status``."""
    if exc is not None:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"lazymcp: error: {message}", file=sys.stderr)
    return status
