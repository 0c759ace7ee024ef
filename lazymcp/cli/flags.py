"""Every flag of the ``lazymcp`` command, in one place: the subcommands and the option groups they share.

Each option group is a function that adds its flags to a parser; ``parser()`` builds the whole command
line from them. What a flag's value means is read in ``lazymcp.cli.commands``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from lazymcp.access.sealed import FLAGS as PEOPLE_FLAGS
from lazymcp.cli.values import host_port, positive, rate
from lazymcp.protocol.limits import FIRST_LIST_WAIT
from lazymcp.protocol.messages import MODES
from lazymcp.run.notices import LEVELS
from lazymcp.run.sandbox import CodeLimits
from lazymcp.surfaces.options import SETTINGS, Setting

GATEWAY_MODES = ("auto", *MODES)
STATS_TIMEOUT = 60.0
"""Seconds ``stats --config`` waits for a server to list its tools, by default."""


def add_listing_options(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """The settings of ``SETTINGS`` as flags; each falls back to its environment variable, then its default."""

    def flag_type(setting: Setting) -> Callable[[str], Any]:
        if setting.whole_number:
            return positive

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


def add_http_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--http HOST:PORT``: where the HTTP front listens."""
    parser.add_argument("--http", metavar="HOST:PORT", type=host_port, help=what)


def add_address_options(parser: argparse.ArgumentParser) -> None:
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
        help="with --http: an Origin a request may come from, e.g. https://app.example, '*' for any (repeatable; "
        "loopback origins are always allowed on loopback; a request from any other gets 403)",
    )


def add_access_options(parser: argparse.ArgumentParser) -> None:
    """Who may use the HTTP front (``lazymcp.access.auth``): a bearer token or an OAuth issuer's tokens."""
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


def add_session_options(parser: argparse.ArgumentParser) -> None:
    """The bounds of a proxy's or a gateway's sessions, the HTTP addresses it accepts and who may come in."""
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
        type=positive,
        default=None,
        help=(
            "with --http: client sessions at once (a person's sharing one set of server processes); past it the least"
            " recently used idle one of the new session's principal is ended, and initialize gets 503 when it has"
            " none (default: 32)"
        ),
    )
    parser.add_argument(
        "--max-sessions-per-principal",
        type=positive,
        default=None,
        metavar="N",
        help=(
            "with --http: one principal's sessions at once; past it its own least recently used idle one is"
            " ended, never another principal's (default: --max-sessions)"
        ),
    )
    add_address_options(parser)
    add_access_options(parser)


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """Several gateway instances behind one load balancer, their sessions' owners kept in Redis."""
    parser.add_argument(
        "--redis",
        metavar="URL",
        default=None,
        help="with --http: share sessions with the other instances of this Redis, e.g. redis://host:6379/0; "
        "with --refresh: send the manifests there for the running instances "
        "(env LAZYMCP_REDIS_URL; needs the redis extra)",
    )
    parser.add_argument(
        "--advertise",
        metavar="URL",
        default=None,
        help="with --redis: the URL other instances reach this one at, e.g. http://10.0.0.5:8080 "
        "(default: from --http, unless it listens on every address)",
    )


def add_code_options(parser: argparse.ArgumentParser) -> None:
    """Code mode's bounds on one run_code (docs/code-mode.md)."""
    given = CodeLimits()
    for flag, kind, default, what in (
        ("--code-timeout", float, given.seconds, "SECONDS: a run's wall time, its tool calls included"),
        ("--code-memory", positive, given.memory_mb, "MB: the sandbox's heap"),
        ("--code-calls", positive, given.calls, "tool calls one run may make"),
        ("--code-output", positive, given.output_chars, "characters of a run's answer (what it printed, its value)"),
    ):
        unit, _, text = what.rpartition(": ")
        hint = f"code mode: {text} ({default})"
        parser.add_argument(flag, type=kind, default=default, metavar=unit or "N", help=hint)


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


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` (required) and ``--project DIR``: the client configuration a command reads."""
    parser.add_argument("--config", metavar="FILE", required=True, help="mcpServers (or VS Code servers) JSON file")
    add_project_option(parser)


def add_project_option(parser: argparse.ArgumentParser) -> None:
    """``--project DIR``: which project's servers of Claude Code's ``~/.claude.json`` are read."""
    parser.add_argument(
        "--project",
        metavar="DIR",
        default=None,
        help="with Claude Code's ~/.claude.json: read this project's servers too (projects.DIR.mcpServers; "
        "default: the current directory's, if it has any)",
    )


def _upstream_command(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "upstream", nargs=argparse.REMAINDER, metavar="COMMAND ARGS...", help=f"{what} (after -- or without it)"
    )


def _subcommand(
    commands: Any, common: argparse.ArgumentParser, name: str, help_text: str, usage: str | None = None
) -> argparse.ArgumentParser:
    """The parser of subcommand ``name``: every subcommand takes the common flags."""
    return commands.add_parser(name, parents=[common], help=help_text, usage=usage)


def _serve(commands: Any, common: argparse.ArgumentParser) -> None:
    serve = _subcommand(commands, common, "serve", "serve a tool catalog lazily (stdio, or streamable HTTP)")
    serve.add_argument(
        "--catalog",
        metavar="FILE",
        help="JSON list of MCP tools, or an object with a 'tools' list (default: the built-in sample catalog)",
    )
    add_http_option(serve, "serve streamable HTTP at /mcp")
    serve.add_argument("--stateless", action="store_true", help="with --http: no sessions, one POST per request")
    add_address_options(serve)
    add_listing_options(serve)


def _proxy(commands: Any, common: argparse.ArgumentParser) -> None:
    usage = "lazymcp proxy [options] ([--] COMMAND ARGS... | --url URL)"
    proxy = _subcommand(commands, common, "proxy", f"make any MCP server lazy: {usage}", usage)
    proxy.add_argument("--url", help="a streamable-HTTP upstream server, instead of a command")
    add_http_option(proxy, "serve clients streamable HTTP at /mcp")
    add_session_options(proxy)
    add_listing_options(proxy)
    _upstream_command(proxy, "the upstream server's command")


def _gateway(commands: Any, common: argparse.ArgumentParser) -> None:
    usage = "lazymcp gateway --config FILE [--refresh] [--eager-start] [--mode auto --budget TOKENS] [options]"
    what = "every server of a client configuration behind one lazy endpoint"
    gateway = _subcommand(commands, common, "gateway", what, usage)
    add_config_option(gateway)
    gateway.add_argument("--refresh", action="store_true", help="start every server, rebuild its manifest, exit")
    gateway.add_argument("--eager-start", action="store_true", help="start every server at launch")
    gateway.add_argument(
        "--principal-secrets",
        metavar="FILE",
        help="each principal's own values for ${principal:NAME} in a server's env or headers: a '[principal]' "
        "block of NAME=value lines each, or JSON {principal: {NAME: value}} (mode 0600)",
    )
    gateway.add_argument(
        "--first-list-wait",
        type=float,
        default=os.environ.get("LAZYMCP_FIRST_LIST_WAIT", FIRST_LIST_WAIT),
        metavar="SECONDS",
        help="how long a tools/* request waits for servers without a manifest to list their tools; past it the"
        f" answer goes out without them, their tools announced when they come (0: until --timeout; env"
        f" LAZYMCP_FIRST_LIST_WAIT; default: {FIRST_LIST_WAIT:g})",
    )
    gateway.add_argument(
        "--mode",
        dest="gateway_mode",
        choices=GATEWAY_MODES,
        default=None,
        help="auto (default): the describe listing while its stubs fit --budget, the proxy surface beyond",
    )
    add_http_option(gateway, "serve clients streamable HTTP at /mcp")
    gateway.add_argument("--budget", type=int, default=None, metavar="TOKENS", help="auto mode's budget (20000)")
    gateway.add_argument(
        "--rate-limit",
        type=rate,
        default=None,
        metavar="N/s|N/min",
        help="each principal's tools/call requests (meta-tools included) at most at this rate, in bursts of up"
        " to N; past it a call gets 429 with Retry-After over HTTP, a JSON-RPC error saying when to retry on stdio",
    )
    gateway.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        type=host_port,
        default=None,
        help="serve /metrics (Prometheus text) at this address of its own, without authentication (a stdio gateway"
        " too); with --http it is otherwise served beside /mcp, behind the same checks",
    )
    gateway.add_argument(
        "--audit-file",
        metavar="PATH",
        default=None,
        help="append each call's audit line (one JSON object a line) to this file, apart from the log, whatever"
        " the log level",
    )
    for flag, metavar, what in PEOPLE_FLAGS:
        gateway.add_argument(flag, metavar=metavar, default=None, help=what)
    add_session_options(gateway)
    add_code_options(gateway)
    add_cluster_options(gateway)
    add_listing_options(gateway, skip=("mode",))


def _stats(commands: Any, common: argparse.ArgumentParser) -> None:
    usage = "lazymcp stats [--catalog FILE | --url URL | --config FILE | [--] COMMAND ARGS...] [--mode MODE] [--json]"
    what = "bytes and tokens of every listing mode of a server, on the wire and as the model sees them"
    stats = _subcommand(commands, common, "stats", what, usage)
    source = stats.add_mutually_exclusive_group()
    source.add_argument("--catalog", metavar="FILE", help="serve this catalog in-process and measure it")
    source.add_argument("--url", help="a streamable-HTTP MCP server")
    source.add_argument("--config", metavar="FILE", help="every server of a client configuration, as the gateway")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_project_option(stats)
    stats.add_argument(
        "--timeout",
        type=float,
        default=STATS_TIMEOUT,
        metavar="SECONDS",
        help="with --config: seconds a server may take to list its tools before it is left out (0: no bound; "
        f"default: {STATS_TIMEOUT:g}); the servers still awaited are named every few seconds",
    )
    add_listing_options(stats)
    _upstream_command(stats, "a stdio MCP server's command")


def _check(commands: Any, common: argparse.ArgumentParser) -> None:
    usage = "lazymcp check --config FILE [--project DIR]"
    what = "check a client configuration without starting any server: every problem, one line each"
    check = _subcommand(commands, common, "check", what, usage)
    add_config_option(check)


def _status(commands: Any, common: argparse.ArgumentParser) -> None:
    usage = "lazymcp status (--url URL [--token-file FILE] | --config FILE [--project DIR]) [--json]"
    what = (
        "what a running HTTP gateway is doing (its servers, calls, listing and sessions), or what a configuration's"
        " manifests and sign-ins say, without starting anything"
    )
    status = _subcommand(commands, common, "status", what, usage)
    where = status.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="the gateway's address (http://HOST:PORT, or its /mcp)")
    where.add_argument("--config", metavar="FILE", help="a client configuration, as the gateway would read it")
    add_project_option(status)
    status.add_argument(
        "--token-file", metavar="FILE", default=None, help="the bearer token's file (default: LAZYMCP_GATEWAY_TOKEN)"
    )
    status.add_argument(
        "--json", action="store_true", help="print the status as JSON (a gateway's /status.json as it is)"
    )
    status.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="seconds the gateway has to answer (default: 10)"
    )


def _login(commands: Any, common: argparse.ArgumentParser) -> None:
    usage = "lazymcp login SERVER --config FILE [--no-browser] [--wait SECONDS]"
    login = _subcommand(commands, common, "login", "sign in to a remote server (OAuth) and keep the tokens", usage)
    login.add_argument("server", metavar="SERVER", help="the server's name in the configuration")
    add_config_option(login)
    login.add_argument(
        "--no-browser", action="store_true", help="print the sign-in URL only: open it in a browser yourself"
    )
    login.add_argument(
        "--wait", type=float, default=300.0, metavar="SECONDS", help="how long to wait for the sign-in (default: 300)"
    )
    usage = "lazymcp logout SERVER --config FILE"
    logout = _subcommand(commands, common, "logout", "forget the tokens of a remote server's sign-in", usage)
    logout.add_argument("server", metavar="SERVER", help="the server's name in the configuration")
    add_config_option(logout)


def parser() -> argparse.ArgumentParser:
    """The whole command line."""
    from lazymcp.version import __version__

    top = argparse.ArgumentParser(prog="lazymcp", description="Lazy tool loading for MCP servers.")
    top.add_argument("--version", action="version", version=f"lazymcp {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    common = _common()
    for add in (_serve, _proxy, _gateway, _stats, _check, _status, _login):
        add(commands, common)
    return top
