"""The subcommands that look after a configuration or a running gateway rather than serve one: ``check``,
``status`` and ``login``/``logout``; each one library call, as ``lazymcp.cli.commands``'s are.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lazymcp.cli.commands import bearer_tokens
from lazymcp.local.environment import TOKEN
from lazymcp.protocol.errors import ConfigError
from lazymcp.surfaces.options import Options


def check(args: argparse.Namespace) -> int:
    """``lazymcp check --config FILE``: every problem of the configuration, one a line; 1 when there is one."""
    from lazymcp.run.check import check, render

    checked = check(args.config, args.project)
    print(render(checked, args.config))
    return 1 if checked.problems else 0


def status(args: argparse.Namespace) -> int:
    """``lazymcp status``: a running HTTP gateway's status (``--url``), or a configuration's as its manifests
    and sign-ins have it (``--config``), as a table or as JSON."""
    import orjson

    from lazymcp.run.status_page import table

    if args.config is not None:
        snapshot = _config_status(args)
    else:
        from lazymcp.run.status_client import fetch_status

        tokens = bearer_tokens(args.token_file, "status")
        if tokens is not None and len(tokens) > 1:
            where = f"the token file {args.token_file!r}" if args.token_file else TOKEN
            raise ConfigError(f"{where} holds {len(tokens)} tokens: give the one to use")
        snapshot = fetch_status(args.url, tokens[0][1] if tokens else None, args.timeout or 10.0)
    print(orjson.dumps(snapshot, option=orjson.OPT_INDENT_2).decode() if args.json else table(snapshot))
    return 0


def _config_status(args: argparse.Namespace) -> dict[str, Any]:
    """The status of ``--config``'s servers from their manifests and sign-ins: nothing started."""
    from lazymcp.local.files import cache_dir
    from lazymcp.run.gateway import Launch, read_and_warn
    from lazymcp.run.gateway_build import build_gateway
    from lazymcp.run.manifests import ManifestStore
    from lazymcp.run.status import config_snapshot
    from lazymcp.version import __version__

    config = read_and_warn(args.config, "status", project=args.project)
    core = build_gateway(Launch(config, Options()), ManifestStore(cache_dir()))
    return config_snapshot(core, config.source, __version__)


def sign_in(args: argparse.Namespace) -> int:
    """``lazymcp login SERVER`` and ``lazymcp logout SERVER``: a remote server's sign-in, kept or forgotten."""
    import anyio

    from lazymcp.access.tokens import TokenStore
    from lazymcp.run.gateway import read_config
    from lazymcp.run.login import login, logout

    config = read_config(args.config, project=args.project)
    entry = next((server for server in config.servers if server.name == args.server), None)
    if entry is None:
        names = ", ".join(server.name for server in config.servers) or "none"
        raise ConfigError(f"{args.config}: no server {args.server!r} (its servers: {names})")
    store = TokenStore.default()
    if args.command == "logout":
        had = anyio.run(lambda: logout(entry, store, lambda line: print(line, file=sys.stderr, flush=True)))
        print(f"signed out of {entry.name}" if had else f"not signed in to {entry.name}")
        return 0

    def show(url: str) -> None:
        print(f"open this URL to sign in to {entry.name}:\n{url}", flush=True)

    anyio.run(lambda: login(entry, store, show=show, browser=not args.no_browser, wait=args.wait))
    print(f"signed in to {entry.name} (tokens kept in {store.where})", flush=True)
    return 0
