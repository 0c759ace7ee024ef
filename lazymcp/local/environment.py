"""What a server's process is given of lazymcp's own environment.

A gateway's server is a third-party program beside the others: it starts from a small safe base (the
variables the MCP SDKs' stdio clients pass on: ``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``,
``USER``, with the locale and the temporary directory, and the platform's equivalents), plus its own
``env``; the whole parent environment only when its entry asks for it (``inherit_env``), and lazymcp's
own secrets never. The proxy's one server is the exception: the client's configuration sets that
server's environment on the proxy's own entry, so it is passed on whole, minus lazymcp's secrets.

Each server is also told how deep it runs in gateways (``DEPTH``): a configuration that runs a gateway on
itself, directly or through others, stops at ``MAX_DEPTH`` instead of starting gateways without end.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Final

TOKEN: Final = "LAZYMCP_GATEWAY_TOKEN"
"""The bearer token of an HTTP front (else ``--token-file``)."""
OAUTH_CLIENT_ID: Final = "LAZYMCP_OAUTH_CLIENT_ID"
OAUTH_CLIENT_SECRET: Final = "LAZYMCP_OAUTH_CLIENT_SECRET"
"""How lazymcp authenticates to an OAuth issuer's introspection endpoint."""
SECRETS: Final = frozenset({TOKEN, OAUTH_CLIENT_SECRET})
"""lazymcp's own secrets: no server ever gets them."""
DEPTH: Final = "LAZYMCP_GATEWAY_DEPTH"
MAX_DEPTH: Final = 4
"""Gateways running inside gateways, at most (a gateway is a server of another one deep in a chain)."""

SAFE: Final = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE")
    + ("SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE")
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
)
"""The variables every server gets from lazymcp's environment."""
_COERCED = frozenset({"C.UTF-8", "C.utf8", "UTF-8"})


def depth(environ: Mapping[str, str] | None = None) -> int:
    """How many gateways this process runs inside (0: none)."""
    value = (os.environ if environ is None else environ).get(DEPTH, "")
    return int(value) if value.isdigit() else 0


def parent_environment() -> dict[str, str]:
    """This process's environment as it was given: without what Python's start-up added to it.

    Started in the C locale, CPython coerces it (PEP 538) by setting ``LC_CTYPE`` in its own
    environment, which a child would inherit: a server must see what lazymcp was given.
    """
    env = dict(os.environ)
    coerced = env.get("LC_CTYPE") in _COERCED and "LC_ALL" not in env and env.get("LANG", "C") in ("C", "POSIX")
    if coerced:
        del env["LC_CTYPE"]
    return env


def passed_on(own: Mapping[str, str]) -> dict[str, str]:
    """The environment of the proxy's one server: lazymcp's own, as it was given, minus its secrets, with
    ``own`` on top."""
    return {**{name: value for name, value in parent_environment().items() if name not in SECRETS}, **own}


def server_environment(own: Mapping[str, str], inherit: bool | Sequence[str]) -> dict[str, str]:
    """The environment of a gateway's server: the safe base (``inherit``: True, the whole environment; a
    list, those variables too), lazymcp's secrets taken out, then the server's ``own`` variables, and how
    deep in gateways it runs."""
    parent = parent_environment()
    if inherit is True:
        chosen = {name: value for name, value in parent.items() if name not in SECRETS}
    else:
        names = (*SAFE, *inherit) if inherit else SAFE
        chosen = {name: parent[name] for name in names if name in parent and name not in SECRETS}
    return {**chosen, **own, DEPTH: str(depth() + 1)}
