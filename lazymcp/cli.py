"""The ``lazymcp`` command: argparse in, one library call per subcommand, text out."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import orjson

from lazymcp.errors import CatalogError, LazyMCPError
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


def _options(args: argparse.Namespace) -> Options:
    """Options from the flags given, then the environment (``LAZYMCP_*``, then the aliases), then defaults."""
    given = {setting.field: getattr(args, setting.field, None) for setting in SETTINGS}
    try:
        return Options.from_env(os.environ, **given)
    except ValueError as exc:
        raise CatalogError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lazymcp", description="Lazy tool loading for MCP servers.")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve a tool catalog lazily (stdio, or streamable HTTP)")
    serve.add_argument(
        "--catalog",
        metavar="FILE",
        help="JSON list of MCP tools, or an object with a 'tools' list (default: the built-in sample catalog)",
    )
    serve.add_argument("--http", metavar="HOST:PORT", type=_host_port, help="serve streamable HTTP at /mcp")
    serve.add_argument("--stateless", action="store_true", help="with --http: no sessions, one POST per request")
    _add_listing_options(serve)

    proxy = commands.add_parser(
        "proxy",
        help="make any MCP server lazy: lazymcp proxy [options] (-- COMMAND ARGS... | --url URL)",
        usage="lazymcp proxy [options] (-- COMMAND ARGS... | --url URL)",
    )
    proxy.add_argument("--url", help="a streamable-HTTP upstream server, instead of a command after --")
    proxy.add_argument("--http", metavar="HOST:PORT", type=_host_port, help="serve clients streamable HTTP at /mcp")
    proxy.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds the upstream may take to answer before it counts as hung (0: never; default: 300)",
    )
    _add_listing_options(proxy)

    from lazymcp.gateway.cli import add_gateway_parser

    add_gateway_parser(commands, lambda parser: _add_listing_options(parser, skip=("mode",)), _host_port)

    stats = commands.add_parser(
        "stats",
        help="bytes and tokens of every listing mode of a server",
        usage="lazymcp stats [--catalog FILE | --url URL | -- COMMAND ARGS...] [--json]",
    )
    source = stats.add_mutually_exclusive_group()
    source.add_argument("--catalog", metavar="FILE", help="serve this catalog in-process and measure it")
    source.add_argument("--url", help="a streamable-HTTP MCP server")
    source.add_argument("--config", metavar="FILE", help="every server of a client configuration, as the gateway")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1 :]
    args = _parser().parse_args(argv)
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
        print(f"lazymcp: error: {exc.message}", file=sys.stderr)
        return 2


def _catalog_tools(path: str | None) -> list[Any]:
    from lazymcp.sample import sample_tools
    from lazymcp.serve import load_tools

    return sample_tools() if path is None else load_tools(path)


def _serve(args: argparse.Namespace) -> int:
    from lazymcp.serve import build_server, run

    lazy = build_server(_catalog_tools(args.catalog), _options(args))
    try:
        run(lazy, args.http, stateless=args.stateless)
    except KeyboardInterrupt:
        pass
    return 0


def _proxy(args: argparse.Namespace, command: list[str]) -> int:
    from lazymcp.proxy import run_proxy

    if bool(command) == bool(args.url):
        print("lazymcp: error: give the upstream as a command after -- or as --url URL (one of them)", file=sys.stderr)
        return 2
    try:
        return run_proxy(command or args.url, _options(args), timeout=args.timeout, http=args.http)
    except KeyboardInterrupt:
        return 130


def _stats(args: argparse.Namespace, command: list[str]) -> int:
    from mcp import StdioServerParameters

    from lazymcp.sdk_private import memory_transport
    from lazymcp.serve import build_server
    from lazymcp.stats import collect, render

    if args.config:
        from lazymcp.gateway.cli import stats

        return stats(args.config, _options(args))
    if command and (args.url or args.catalog):
        print("lazymcp: error: give one of --catalog, --url or -- COMMAND", file=sys.stderr)
        return 2
    target: Any
    stock_target: Any
    if args.url:
        target = stock_target = args.url
    elif command:
        target = stock_target = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    else:
        server = build_server(_catalog_tools(args.catalog)).server
        target, stock_target = memory_transport(server), memory_transport(server)
    report = anyio.run(lambda: collect(target, stock_target))
    if args.json:
        print(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        print(render(report))
    return 0
