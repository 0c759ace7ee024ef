"""The ``gateway`` subcommand's flags, and the one call each use of it makes."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from lazymcp.messages import MODES, Mode
from lazymcp.options import Options

if TYPE_CHECKING:
    from lazymcp.auth import Access

GATEWAY_MODES = ("auto", *MODES)


def add_gateway_parser(
    commands: Any,
    common: argparse.ArgumentParser,
    add_options: Callable[[argparse.ArgumentParser], None],
    host_port: Callable[[str], tuple[str, int]],
) -> None:
    """Add ``lazymcp gateway --config FILE`` to the command line's subcommands."""
    gateway = commands.add_parser(
        "gateway",
        parents=[common],
        help="every server of a client configuration behind one lazy endpoint",
        usage="lazymcp gateway --config FILE [--refresh] [--eager-start] [--mode auto --budget TOKENS] [options]",
    )
    gateway.add_argument("--config", metavar="FILE", required=True, help="mcpServers (or VS Code servers) JSON file")
    gateway.add_argument("--refresh", action="store_true", help="start every server, rebuild its manifest, exit")
    gateway.add_argument("--eager-start", action="store_true", help="start every server at launch")
    gateway.add_argument(
        "--mode",
        dest="gateway_mode",
        choices=GATEWAY_MODES,
        default=None,
        help="auto (default): the describe listing while its stubs fit --budget, the proxy surface beyond",
    )
    gateway.add_argument("--http", metavar="HOST:PORT", type=host_port, help="serve clients streamable HTTP at /mcp")
    gateway.add_argument("--budget", type=int, default=None, metavar="TOKENS", help="auto mode's budget (20000)")
    add_options(gateway)


def add_access_options(parser: argparse.ArgumentParser) -> None:
    """Who may use the HTTP front (``lazymcp.auth``): a bearer token or an OAuth issuer's tokens."""
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --http: the bearer token every request must carry (else env LAZYMCP_GATEWAY_TOKEN); "
        "the gateway requires this or --oauth-issuer off loopback",
    )
    parser.add_argument(
        "--oauth-issuer",
        metavar="URL",
        help="with --http: accept OAuth access tokens of this authorization server, checked by introspection",
    )
    parser.add_argument(
        "--oauth-resource",
        metavar="URL",
        help="this server's URL as clients reach it, which tokens must be issued for (default: from --http)",
    )
    parser.add_argument(
        "--oauth-scope", metavar="SCOPE", action="append", default=[], help="a scope every token must carry"
    )
    parser.add_argument(
        "--oauth-introspection", metavar="URL", help="the issuer's introspection endpoint, if its metadata has none"
    )


def run(args: argparse.Namespace, options: Options) -> int:
    """Run the gateway as the flags say; returns the exit status."""
    from lazymcp.cli import can_listen, limits_of
    from lazymcp.gateway.run import run_gateway

    mode = args.gateway_mode
    if mode is None and os.environ.get("LAZYMCP_MODE"):
        mode = options.mode
    if mode not in (None, "auto"):
        options = replace(options, mode=cast(Mode, mode))
    can_listen(args.http)
    try:
        return run_gateway(
            args.config,
            options,
            mode=mode,
            budget=args.budget,
            limits=limits_of(args),
            eager=args.eager_start,
            refresh=args.refresh,
            http=args.http,
            access=access_of(args),
            allow_hosts=tuple(args.allow_host),
            allow_origins=tuple(args.allow_origin),
        )
    except KeyboardInterrupt:
        return 130


def stats(path: str, options: Options) -> int:
    """``lazymcp stats --config FILE``: print the configuration's costs."""
    from lazymcp.gateway.run import Launch, read_config, say
    from lazymcp.gateway.stats import measure, render

    config = read_config(path)
    if config.warnings:
        say("; ".join(config.warnings))
    print(render(measure(Launch(config, options))))  # noqa: T201
    return 0


def access_of(args: argparse.Namespace, *, required: bool = True) -> Access | None:
    """With ``--http``: who may come in (``lazymcp.auth``); None on stdio, and, unless ``required``,
    when no flag names any (the proxy's front then lets everyone in, as it always did).

    Raises:
        ConfigError: conflicting flags, a non-loopback address without authentication, an issuer that
            cannot be read.
    """
    if args.http is None:
        return None
    host, port = args.http
    token = _token(args.token_file)
    given = token or args.oauth_issuer or args.oauth_resource or args.oauth_scope or args.oauth_introspection
    if not required and not given:
        return None
    from lazymcp.auth import access_from  # loads the SDK: only for a front that checks who comes in

    return access_from(
        token,
        args.oauth_issuer,
        args.oauth_resource,
        args.oauth_scope,
        host,
        port,
        introspection=args.oauth_introspection,
    )


def _token(path: str | None) -> str | None:
    """The bearer token from ``--token-file``, else ``LAZYMCP_GATEWAY_TOKEN``, else None.

    Raises:
        ConfigError: the file cannot be read or holds no token.
    """
    from lazymcp.gateway.config import ConfigError

    if path is None:
        return os.environ.get("LAZYMCP_GATEWAY_TOKEN") or None
    try:
        token = Path(path).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the token file {path!r}: {exc.strerror or exc}") from None
    if not token:
        raise ConfigError(f"the token file {path!r} is empty")
    return token
