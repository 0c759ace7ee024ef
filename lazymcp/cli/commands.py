"""What each subcommand of ``lazymcp`` does with its flags: one library call each, and the readings of
flags several subcommands share (the listing options, the session bounds, who may come in over HTTP).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from lazymcp.local.environment import TOKEN
from lazymcp.protocol.errors import CatalogError, ConfigError
from lazymcp.protocol.limits import DEFAULT_MAX_SESSIONS, Limits
from lazymcp.protocol.messages import Mode
from lazymcp.run.notices import expect_proxy, proxy_done, say, startup
from lazymcp.surfaces.options import SETTINGS, Options

if TYPE_CHECKING:
    from lazymcp.access.bearer import Access
    from lazymcp.access.secrets import PrincipalSecrets


def options_of(args: argparse.Namespace) -> Options:
    """Options from the flags given, then the environment (``LAZYMCP_*``, then the aliases), then defaults."""
    given = {setting.field: getattr(args, setting.field, None) for setting in SETTINGS}
    try:
        return Options.from_env(os.environ, **given)
    except ValueError as exc:
        raise CatalogError(str(exc)) from None


def chosen_level(args: argparse.Namespace) -> str | None:
    """The ``--log-level`` given, else ``LAZYMCP_LOG_LEVEL``'s; None when neither says one."""
    return args.log_level or os.environ.get("LAZYMCP_LOG_LEVEL", "").strip().lower() or None


def limits_of(args: argparse.Namespace) -> Limits:
    """The session bounds the flags give."""
    return Limits(
        timeout=args.timeout or None,
        client_timeout=args.client_timeout or None,
        max_sessions=args.max_sessions or DEFAULT_MAX_SESSIONS,
        max_principal_sessions=args.max_sessions_per_principal,
    )


def can_listen(address: tuple[str, int] | None) -> None:
    """Fail with one line, before anything starts, when ``--http``'s address cannot be listened on.

    Each of the address's sockets is bound as the server will bind it (``SO_REUSEADDR``, IPv6 only on IPv6),
    and closed, never listened on: a socket that listened would take connections for a moment, and a
    client that came then (a readiness probe, a first request) would be reset when it closed.

    Raises:
        CatalogError: the address is taken, or not this machine's.
    """
    if address is None:
        return
    import socket

    host, port = address
    try:
        for family, kind, proto, _, where in socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        ):
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(where)
    except OSError as exc:
        raise CatalogError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def access_of(args: argparse.Namespace, *, required: bool = True) -> Access | None:
    """With ``--http``: who may come in (``lazymcp.access.auth``); None on stdio, and, unless ``required``,
    when no flag names any (the proxy's front then lets everyone in, as it always did).

    Raises:
        ConfigError: conflicting flags, a non-loopback address without authentication, an issuer that
            cannot be read.
    """
    if args.http is None:
        given = [flag for flag, value in _access_flags(args) if value]
        if given:
            raise ConfigError(f"{given[0]} applies to --http only; on stdio the client that starts lazymcp is its user")
        return None
    host, port = args.http
    token = bearer_tokens(args.token_file, args.command)
    given = token or args.oauth_issuer or args.oauth_resource or args.oauth_scope or args.oauth_introspection
    if not required and not given:
        return None
    from lazymcp.access.auth import access_from  # starlette (and with OAuth the SDK): only for a front that checks

    return access_from(
        token,
        args.oauth_issuer,
        args.oauth_resource,
        args.oauth_scope,
        host,
        port,
        introspection=args.oauth_introspection,
    )


def _access_flags(args: argparse.Namespace) -> list[tuple[str, object]]:
    return [
        ("--token-file", args.token_file),
        ("--oauth-issuer", args.oauth_issuer),
        ("--oauth-resource", args.oauth_resource),
        ("--oauth-scope", args.oauth_scope),
        ("--oauth-introspection", args.oauth_introspection),
    ]


def bearer_tokens(path: str | None, command: str) -> list[tuple[str, str]] | None:
    """The bearer tokens, with their principals' names, from ``--token-file`` (``name: token`` a line, or
    bare tokens, named ``default``; a file others can read is warned about, as ssh does with a key), else
    ``LAZYMCP_GATEWAY_TOKEN``, else None.

    Raises:
        ConfigError: the file cannot be read, holds no token, or a line is malformed; the variable is set
            but blank.
    """
    from lazymcp.access.policy import read_token_file

    if path is None:
        if TOKEN not in os.environ:
            return None
        token = os.environ[TOKEN].strip()
        if not token:  # set but blank: refused like an empty token file, never an open front
            raise ConfigError(f"{TOKEN} is set but empty")
        return read_token_file(token, TOKEN)
    from lazymcp.access.files import read_tokens

    pairs, warning = read_tokens(path)
    if warning is not None:
        say(command, warning)
    return pairs


def _catalog_tools(path: str | None) -> list[Any]:
    from lazymcp.run.serve import load_tools
    from lazymcp.tools.sample import sample_tools

    return sample_tools() if path is None else load_tools(path)


def no_code_mode(options: Options, command: str) -> Options:
    """``options``, when they do not ask for code mode, which only the gateway carries out.

    Raises:
        ConfigError: ``--mode code`` (or ``LAZYMCP_MODE``), or a ``--host-mode`` of ``code``.
    """
    if options.mode == "code" or any(mode == "code" for _, mode in options.hosts):
        raise ConfigError(
            f"code mode is a gateway mode: lazymcp {command} runs no code; use lazymcp gateway --mode code "
            "(a configuration of one server will do)"
        )
    return options


def serve(args: argparse.Namespace) -> int:
    """``lazymcp serve``: a lazy server over a catalog, on stdio or streamable HTTP."""
    from lazymcp.run.serve import build_server, run

    options = no_code_mode(options_of(args), "serve")
    can_listen(args.http)
    lazy = build_server(_catalog_tools(args.catalog), options)
    source = f"catalog {args.catalog}" if args.catalog else "the built-in sample catalog"
    clients = f"clients on http://{args.http[0]}:{args.http[1]}/mcp" if args.http else "clients on stdio"
    startup("serve", lazy.static_catalog(), f"{source}, {clients}{' (stateless)' if args.stateless else ''}")
    try:
        run(lazy, args.http, stateless=args.stateless, allow_hosts=args.allow_host, allow_origins=args.allow_origin)
    except KeyboardInterrupt:
        pass
    return 0


def proxy(args: argparse.Namespace, command: list[str]) -> int:
    """``lazymcp proxy``: any server made lazy, for clients on stdio or streamable HTTP."""
    from lazymcp.run.proxy import run_proxy

    if bool(command) == bool(args.url):
        raise ConfigError("give the upstream as a command (lazymcp proxy [--] COMMAND ARGS...) or as --url URL, once")
    options = no_code_mode(options_of(args), "proxy")
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


def gateway(args: argparse.Namespace) -> int:
    """``lazymcp gateway``: every server of a configuration behind one lazy endpoint."""
    from lazymcp.run.gateway import run_gateway
    from lazymcp.run.sandbox import CodeLimits, configure

    configure(CodeLimits(args.code_timeout, args.code_memory, args.code_calls, args.code_output))
    options = options_of(args)
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
            project=args.project,
            mode=mode,
            budget=args.budget,
            limits=limits_of(args),
            eager=args.eager_start,
            refresh=args.refresh,
            first_list_wait=args.first_list_wait or None,
            rate_limit=args.rate_limit,
            audit=chosen_level(args) in ("info", "debug"),
            audit_file=args.audit_file,
            metrics=args.metrics,
            http=args.http,
            access=access_of(args),
            allow_hosts=tuple(args.allow_host),
            allow_origins=tuple(args.allow_origin),
            cluster=cluster_of(args),
            secrets=principal_secrets(args.principal_secrets),
            token_file=args.token_file,
            secrets_file=args.principal_secrets,
            people=(args.public_url, args.secrets_key_file),
        )
    except KeyboardInterrupt:
        return 130


def principal_secrets(path: str | None) -> PrincipalSecrets | None:
    """The principals' secrets file (``--principal-secrets``); None without one.

    Raises:
        ConfigError: it cannot be read, others may read it (it must be mode 0600), or a line is malformed.
    """
    if path is None:
        return None
    from lazymcp.access.files import read_secrets

    return read_secrets(path)


def cluster_of(args: argparse.Namespace) -> tuple[str, str] | None:
    """With ``--redis`` (or ``LAZYMCP_REDIS_URL``): the Redis URL and the address this instance's peers
    reach it at; None without.

    With ``--refresh`` the address is "": the refreshed manifests go to Redis, and no session is served.

    Raises:
        ConfigError: ``--redis`` without ``--http`` or ``--refresh``, or no address to advertise.
    """
    from lazymcp.local.addresses import advertised

    url = args.redis or os.environ.get("LAZYMCP_REDIS_URL") or None
    if url is None:
        if args.advertise:
            raise ConfigError("--advertise is only for --redis (several instances sharing sessions)")
        return None
    if args.http is None and not args.refresh:
        raise ConfigError("--redis is only for --http (or --refresh): stdio sessions are not shared")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"--redis {url!r}: expected a redis://, rediss:// or unix:// URL")
    http: tuple[str, int] | None = args.http
    return (url, "") if http is None or args.refresh else (url, advertised(args.advertise, http))


def stats(args: argparse.Namespace, command: list[str]) -> int:
    """``lazymcp stats``: the costs of a server's listings (or of a configuration's, behind the gateway)."""
    if args.config:
        return _config_stats(args, options_of(args))
    if command and (args.url or args.catalog):
        raise ConfigError("give one of --catalog, --url or a COMMAND")
    import anyio
    import orjson
    from mcp import StdioServerParameters

    from lazymcp.run.serve import build_server
    from lazymcp.run.stats import collect, render
    from lazymcp.sdk_private import memory_transport

    options = options_of(args)
    target: Any
    stock_target: Any
    status: Path | None = None
    if args.url:
        target = stock_target = args.url
    elif command:
        status = Path(tempfile.mkdtemp(prefix="lazymcp-stats-")) / "status"
        wrapped = ["-m", "lazymcp.run.notices", str(status), *command]  # reports the server's exit status
        target = stock_target = StdioServerParameters(command=sys.executable, args=wrapped, env=dict(os.environ))
    else:
        server = build_server(_catalog_tools(args.catalog), options).server
        target, stock_target = memory_transport(server), memory_transport(server)
    asked = replace(options, by_host=False) != Options()  # a setting given: the stock row is computed in it
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


def _config_stats(args: argparse.Namespace, options: Options) -> int:
    """``lazymcp stats --config FILE``: print the configuration's costs."""
    from lazymcp.run.gateway import Launch, read_and_warn
    from lazymcp.run.gateway_stats import measure, render

    config = read_and_warn(args.config, "stats", project=args.project)
    cost = measure(Launch(config, options, limits=Limits(timeout=args.timeout or None)))
    print(render(cost))
    return 1 if cost.unlisted else 0
