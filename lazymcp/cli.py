"""The ``lazymcp`` command: argparse in, one library call per subcommand, text out.

Every failure is one line on stderr naming what failed and a non-zero exit status (``--debug`` adds
the traceback); ``proxy`` and ``stats`` take the server's command after ``--`` or without it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson

from lazymcp.errors import CatalogError, LazyMCPError
from lazymcp.limits import DEFAULT_MAX_SESSIONS, Limits
from lazymcp.notices import LEVELS, configure, describe_command, expect_proxy, failure, proxy_done, startup
from lazymcp.options import SETTINGS, Options, Setting


def _host_port(value: str) -> tuple[str, int]:
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdigit() or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return int(value)


def _add_listing_options(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """The settings of ``SETTINGS`` as flags; each falls back to its environment variable, then its default."""

    def flag_type(setting: Setting) -> Callable[[str], Any]:
        if setting.whole_number:
            return _positive

        def parse(value: str) -> Any:
            try:
                return setting.parse(value, setting.flag)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        return parse

    group = parser.add_argument_group("listing and modes (each flag also reads its LAZYMCP_* variable)")
    for setting in SETTINGS:
        if setting.field in skip:
            continue
        group.add_argument(
            setting.flag,
            dest=setting.field,
            type=flag_type(setting),
            default=None,
            metavar=setting.metavar,
            help=f"{setting.help} (env {setting.env})",
        )


def _add_address_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="with --http: a Host a request may name (repeatable; loopback names are always allowed on loopback)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="with --http: an Origin a request may come from, e.g. https://app.example (repeatable)",
    )


def _add_session_options(parser: argparse.ArgumentParser) -> None:
    """The bounds of a proxy's or a gateway's sessions, and the HTTP addresses it accepts."""
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds a server may take to answer before it counts as hung (0: never; default: 300)",
    )
    parser.add_argument(
        "--client-timeout",
        type=float,
        default=600.0,
        help="seconds the client may take to answer a request of a server's (0: never; default: 600)",
    )
    parser.add_argument(
        "--max-sessions",
        type=_positive,
        default=None,
        help=(
            "with --http: client sessions (each with its own server processes) at once; past it the least"
            " recently used idle one is ended, and initialize gets 503 when all are busy (default: 32)"
        ),
    )
    _add_address_options(parser)
    from lazymcp.gateway.cli import add_access_options

    add_access_options(parser)


def limits_of(args: argparse.Namespace) -> Limits:
    """The session bounds the flags give."""
    return Limits(
        timeout=args.timeout or None,
        client_timeout=args.client_timeout or None,
        max_sessions=args.max_sessions or DEFAULT_MAX_SESSIONS,
    )


def _options(args: argparse.Namespace) -> Options:
    """Options from the flags given, then the environment (``LAZYMCP_*``, then the aliases), then defaults."""
    given = {setting.field: getattr(args, setting.field, None) for setting in SETTINGS}
    try:
        return Options.from_env(os.environ, **given)
    except ValueError as exc:
        raise CatalogError(str(exc)) from None


def _common() -> argparse.ArgumentParser:
    """The flags every subcommand takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--log-level",
        choices=LEVELS,
        default=None,
        help="what lazymcp says on stderr: info shows the start-up line (env LAZYMCP_LOG_LEVEL; default: info)",
    )
    common.add_argument("--debug", action="store_true", help="on a failure, show the traceback too")
    return common


def _upstream_command(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "upstream", nargs=argparse.REMAINDER, metavar="COMMAND ARGS...", help=f"{what} (after -- or without it)"
    )


def _parser() -> argparse.ArgumentParser:
    from lazymcp.version import __version__

    parser = argparse.ArgumentParser(prog="lazymcp", description="Lazy tool loading for MCP servers.")
    parser.add_argument("--version", action="version", version=f"lazymcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    common = _common()

    serve = commands.add_parser(
        "serve", parents=[common], help="serve a tool catalog lazily (stdio, or streamable HTTP)"
    )
    serve.add_argument(
        "--catalog",
        metavar="FILE",
        help="JSON list of MCP tools, or an object with a 'tools' list (default: the built-in sample catalog)",
    )
    serve.add_argument("--http", metavar="HOST:PORT", type=_host_port, help="serve streamable HTTP at /mcp")
    serve.add_argument("--stateless", action="store_true", help="with --http: no sessions, one POST per request")
    _add_address_options(serve)
    _add_listing_options(serve)

    proxy = commands.add_parser(
        "proxy",
        parents=[common],
        help="make any MCP server lazy: lazymcp proxy [options] ([--] COMMAND ARGS... | --url URL)",
        usage="lazymcp proxy [options] ([--] COMMAND ARGS... | --url URL)",
    )
    proxy.add_argument("--url", help="a streamable-HTTP upstream server, instead of a command")
    proxy.add_argument("--http", metavar="HOST:PORT", type=_host_port, help="serve clients streamable HTTP at /mcp")
    _add_session_options(proxy)
    _add_listing_options(proxy)
    _upstream_command(proxy, "the upstream server's command")

    from lazymcp.gateway.cli import add_gateway_parser

    def gateway_options(parser: argparse.ArgumentParser) -> None:
        _add_session_options(parser)
        _add_listing_options(parser, skip=("mode",))

    add_gateway_parser(commands, common, gateway_options, _host_port)

    stats = commands.add_parser(
        "stats",
        parents=[common],
        help="bytes and tokens of every listing mode of a server, on the wire and as the model sees them",
        usage="lazymcp stats [--catalog FILE | --url URL | [--] COMMAND ARGS...] [--mode MODE] [--json]",
    )
    source = stats.add_mutually_exclusive_group()
    source.add_argument("--catalog", metavar="FILE", help="serve this catalog in-process and measure it")
    source.add_argument("--url", help="a streamable-HTTP MCP server")
    source.add_argument("--config", metavar="FILE", help="every server of a client configuration, as the gateway")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_listing_options(stats)
    _upstream_command(stats, "a stdio MCP server's command")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    split = "--" in argv
    if split:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1 :]
    args = _parser().parse_args(argv)
    upstream: list[str] = list(getattr(args, "upstream", None) or [])
    if upstream:  # the command came without a leading --, so the -- that followed is the command's own
        command = [*upstream, "--", *command] if split else upstream
    if command and args.command == "serve":
        return _error(f"serve takes no command ({shlex.join(command)!r}); did you mean lazymcp proxy?")
    level = args.log_level or os.environ.get("LAZYMCP_LOG_LEVEL", "").strip().lower() or "info"
    if level not in LEVELS:
        return _error(f"LAZYMCP_LOG_LEVEL must be one of {', '.join(LEVELS)}, not {level!r}")
    configure(level)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "proxy":
            return _proxy(args, command)
        if args.command == "gateway":
            from lazymcp.gateway.cli import run

            return run(args, _options(args))
        return _stats(args, command)
    except LazyMCPError as exc:
        return _error(exc.message, exc if args.debug else None)
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


def _catalog_tools(path: str | None) -> list[Any]:
    from lazymcp.sample import sample_tools
    from lazymcp.serve import load_tools

    return sample_tools() if path is None else load_tools(path)


def can_listen(address: tuple[str, int] | None) -> None:
    """Fail with one line, before anything starts, when ``--http``'s address cannot be listened on.

    Raises:
        CatalogError: the address is taken, or not this machine's.
    """
    if address is None:
        return
    import socket

    host, port = address
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise CatalogError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _serve(args: argparse.Namespace) -> int:
    from lazymcp.serve import build_server, run

    can_listen(args.http)
    lazy = build_server(_catalog_tools(args.catalog), _options(args))
    source = f"catalog {args.catalog}" if args.catalog else "the built-in sample catalog"
    clients = f"clients on http://{args.http[0]}:{args.http[1]}/mcp" if args.http else "clients on stdio"
    startup("serve", lazy.static_catalog(), f"{source}, {clients}{' (stateless)' if args.stateless else ''}")
    try:
        run(lazy, args.http, stateless=args.stateless, allow_hosts=args.allow_host, allow_origins=args.allow_origin)
    except KeyboardInterrupt:
        pass
    return 0


def _proxy(args: argparse.Namespace, command: list[str]) -> int:
    from lazymcp.gateway.cli import access_of
    from lazymcp.proxy import run_proxy

    if bool(command) == bool(args.url):
        return _error("give the upstream as a command (lazymcp proxy [--] COMMAND ARGS...) or as --url URL, once")
    options = _options(args)
    can_listen(args.http)
    expect_proxy(command or args.url, args.http)
    try:
        return run_proxy(
            command or args.url,
            options,
            http=args.http,
            limits=limits_of(args),
            access=access_of(args, required=False),
            allow_hosts=args.allow_host,
            allow_origins=args.allow_origin,
        )
    except KeyboardInterrupt:
        return 130
    finally:
        proxy_done()


def _stats(args: argparse.Namespace, command: list[str]) -> int:
    from mcp import StdioServerParameters

    from lazymcp.sdk_private import memory_transport
    from lazymcp.serve import build_server
    from lazymcp.stats import collect, render

    if args.config:
        from lazymcp.gateway.cli import stats

        return stats(args.config, _options(args))
    if command and (args.url or args.catalog):
        return _error("give one of --catalog, --url or a COMMAND")
    options = _options(args)
    target: Any
    stock_target: Any
    status: Path | None = None
    if args.url:
        target = stock_target = args.url
    elif command:
        status = Path(tempfile.mkdtemp(prefix="lazymcp-stats-")) / "status"
        wrapped = ["-m", "lazymcp.notices", str(status), *command]  # reports the server's exit status
        target = stock_target = StdioServerParameters(command=sys.executable, args=wrapped, env=dict(os.environ))
    else:
        server = build_server(_catalog_tools(args.catalog), options).server
        target, stock_target = memory_transport(server), memory_transport(server)
    asked = options != Options()  # a mode or listing setting given: the stock row is computed in it
    try:
        report = anyio.run(lambda: collect(target, stock_target, options=options if asked else None))
    except Exception as exc:
        ended = status.read_text() if status is not None and status.exists() else None
        if ended is None:
            raise
        raise CatalogError(ended) from exc
    finally:
        if status is not None:
            shutil.rmtree(status.parent, ignore_errors=True)
    if args.json:
        print(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        print(render(report))
    return 0
