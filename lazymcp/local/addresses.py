"""Where the HTTP fronts listen, and which addresses count as this machine's own.

One home for the loopback rule: ``serve --http``, the proxy's and gateway's HTTP front, and the OAuth
checks (http URLs only on loopback) all ask ``is_loopback``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
"""Host names of this machine's loopback interface, with IPv6's in and out of URL brackets."""


def is_loopback(host: str | None) -> bool:
    """Is ``host`` (a name, an address, or an address in URL brackets) this machine's loopback?"""
    return host is not None and host.lower() in LOOPBACK


def open_front_warning(host: str, allow_hosts: Sequence[str], allow_origins: Sequence[str]) -> str | None:
    """The warning for a front listening off loopback that checks no Host (None: it checks one). Every
    front checks a request's Origin on every address, so the warning says which ones get in."""
    if is_loopback(host) or allow_hosts:
        return None
    origins = "any Origin too ('*' is listed)" if "*" in allow_origins else "an Origin only if --allow-origin lists it"
    return f"warning: listening on {host} with no --allow-host: any Host is accepted; {origins}"


WILDCARDS: Final = frozenset({"0.0.0.0", "::", ""})
"""Addresses that listen on every interface: none of them is one a peer can reach."""


def advertised(url: str | None, http: tuple[str, int]) -> str:
    """The URL other instances reach this one at (``--advertise``, else from ``--http``), without a
    trailing slash.

    Raises:
        ConfigError: ``url`` is not an http(s) URL of a host, or none is given and ``--http`` listens on
            every address.
    """
    from urllib.parse import urlsplit

    from lazymcp.protocol.errors import ConfigError

    if url is None:
        host, port = http
        if host in WILDCARDS:
            raise ConfigError(f"--http {host}:{port} listens on every address: give --advertise URL for peers")
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise ConfigError(f"--advertise {url!r}: expected http://HOST:PORT (this instance's address, no path)")
    return url.rstrip("/")
