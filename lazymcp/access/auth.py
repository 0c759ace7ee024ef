"""Which ``Access`` an HTTP front uses, as its command-line flags say: anyone on loopback, one shared bearer
token (``--token-file`` or ``LAZYMCP_GATEWAY_TOKEN``), or OAuth access tokens of an issuer
(``--oauth-issuer``, ``lazymcp.access.oauth``). Off loopback some authentication is required. See spec/auth.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from lazymcp.access.bearer import Access, open_access, token_access
from lazymcp.local.addresses import is_loopback
from lazymcp.local.environment import OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET
from lazymcp.protocol.errors import ConfigError


def access_from(
    token: str | Sequence[tuple[str, str]] | None,
    oauth_issuer: str | None,
    resource: str | None,
    scopes: Sequence[str],
    host: str,
    port: int,
    *,
    introspection: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Access:
    """The ``Access`` the command-line flags ask for, for a front listening on ``host:port`` (``token``: one
    bearer token, or (principal name, token) pairs).

        Off loopback some authentication is required; on loopback no flag means open access.

        Raises:
            ConfigError: the flags conflict, name nothing off loopback, or OAuth mode cannot start.
    """
    env = os.environ if env is None else env
    if token and oauth_issuer:
        raise ConfigError("give a bearer token (--token-file or LAZYMCP_GATEWAY_TOKEN) or --oauth-issuer, not both")
    if oauth_issuer:
        from lazymcp.access.oauth import oauth_access  # the SDK's OAuth parts: loaded only when they are used

        return oauth_access(
            oauth_issuer,
            resource or default_resource(host, port),
            scopes=scopes,
            introspection=introspection,
            client_id=env.get(OAUTH_CLIENT_ID) or None,
            client_secret=env.get(OAUTH_CLIENT_SECRET) or None,
        )
    if resource or scopes or introspection:
        raise ConfigError("--oauth-resource, --oauth-scope and --oauth-introspection need --oauth-issuer")
    if token:
        return token_access(token)
    if not is_loopback(host):
        raise ConfigError(
            f"refusing to serve {host} without authentication: give --token-file (or LAZYMCP_GATEWAY_TOKEN) "
            "or --oauth-issuer"
        )
    return open_access()


def default_resource(host: str, port: int) -> str:
    """``http://HOST:PORT/mcp``, this server's URL when clients reach it at the address it listens on.

    Raises:
        ConfigError: ``host`` is a wildcard address, which no client reaches it by.
    """
    if host in ("", "0.0.0.0", "::", "[::]"):
        raise ConfigError(f"listening on {host or 'every address'}: give --oauth-resource, the URL clients use")
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/mcp"
