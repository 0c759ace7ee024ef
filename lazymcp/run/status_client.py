"""``lazymcp status --url URL``: the status of a running HTTP gateway, read from its ``/status.json`` with
its bearer token (``lazymcp.run.status``). Every way it can fail (no answer, a refused token, an answer
that is not a status) is one line and exit status 1.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

from lazymcp.protocol.errors import LazyMCPError

MAX_STATUS = 16 << 20
"""Bytes of a status read at most."""
STATUS_TIMEOUT = 10.0
"""Seconds the gateway has to answer, by default."""


class StatusError(LazyMCPError):
    """The status could not be read: the gateway's doing or the network's, not the command line's."""

    exit_status = 1


def status_url(url: str) -> str:
    """The ``/status.json`` of the gateway at ``url``: its address, its ``/mcp`` or that page itself.

    Raises:
        StatusError: not an http(s) URL.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise StatusError(f"--url {url!r}: expected the gateway's http:// or https:// address")
    path = parts.path.rstrip("/")
    if path.endswith("/mcp"):
        path = path[: -len("/mcp")]
    if not path.endswith("/status.json"):
        path += "/status.json"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def fetch_status(url: str, token: str | None, timeout: float = STATUS_TIMEOUT) -> dict[str, Any]:
    """The snapshot the gateway at ``url`` gives for ``token``.

    Raises:
        StatusError: the gateway cannot be reached, refuses the token, or answers with no status.
    """
    target = status_url(url)
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(target, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # http and https only: status_url
            body = cast(bytes, answer.read(MAX_STATUS + 1))
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            given = "refused the token" if token is not None else "wants a token (--token-file, LAZYMCP_GATEWAY_TOKEN)"
            raise StatusError(f"{target} {given} (HTTP {exc.code})") from None
        raise StatusError(f"{target} answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        reason = getattr(reason, "strerror", None) or reason
        raise StatusError(f"cannot reach {target}: {reason}") from None
    if len(body) > MAX_STATUS:
        raise StatusError(f"{target} answered with more than {MAX_STATUS} bytes: not a gateway's status")
    try:
        snapshot = json.loads(body)
    except ValueError:
        snapshot = None
    if not isinstance(snapshot, dict) or "servers" not in snapshot:
        raise StatusError(f"{target} answered with no gateway status (is it a lazymcp gateway's address?)")
    return cast(dict[str, Any], snapshot)
