"""A server as lazymcp reaches it: ``ServerEntry``, one entry of a client configuration (or the proxy's one
server), with how it is started or reached and how its tools are listed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lazymcp.access.ratelimit import Rate
from lazymcp.access.secrets import filled, wanted
from lazymcp.access.signin import SignInSettings
from lazymcp.tools.metadata import Metadata


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """One server of the configuration: how to reach it and how to list its tools."""

    name: str
    command: tuple[str, ...] = ()
    """The program and its arguments (stdio); empty for a remote server."""
    env: Mapping[str, str] = field(default_factory=lambda: {})
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: {})
    transport: str = "http"
    """How a remote server is spoken to: ``http`` (streamable HTTP) or ``sse`` (``transport_of``)."""
    defer: bool = True
    """False: its tools are core tools, listed in full."""
    enabled: bool = True
    category: str | None = None
    description: str | None = None
    tools: Metadata = field(default_factory=Metadata)
    """Per-tool metadata, by the server's own tool names."""
    inherit_env: bool | tuple[str, ...] = ()
    """What of lazymcp's environment the server gets beyond the safe base (``lazymcp.local.environment``): True,
    all of it (lazymcp's own secrets aside); names, those variables."""
    rate_limit: Rate | None = None
    """Each principal's calls to its tools may come at most at this rate (``"rateLimit"``); None: any."""
    sign_in: SignInSettings | None = None
    """A remote server's ``"oauth"``: the client it signs in as (``lazymcp.access.signin``); None: the
    defaults (dynamic registration), when it asks for a sign-in."""
    share: str = "principal"
    """Over HTTP, whose sessions share one process of it (``"share"``): a principal's (``principal``), or
    each session its own (``session``: a server that keeps each conversation's state)."""

    @property
    def remote(self) -> bool:
        return self.url is not None

    @property
    def personal(self) -> set[str]:
        """The names of the principal's own values its ``env`` and ``headers`` ask for (``${principal:NAME}``)."""
        return wanted(self.env) | wanted(self.headers)

    def as_principal(self, given: Mapping[str, str]) -> ServerEntry:
        """The entry with a principal's values in place (``given`` has every one it asks for)."""
        return replace(self, env=filled(self.env, given), headers=filled(self.headers, given))

    def identity(self) -> list[Any]:
        """What names this server's tool list in the manifest cache: everything that can change what it
        lists (how it is started or reached, its environment and headers). Only a hash of it is kept."""
        identity = [list(self.command), self.cwd, self.url, sorted(self.env.items()), sorted(self.headers.items())]
        return identity if self.transport == "http" else [*identity, self.transport]


HTTP_TYPES = ("http", "streamable-http", "streamableHttp")
"""What clients' configurations call streamable HTTP in an entry's ``type``."""
SSE_TYPES = ("sse",)


def transport_of(kind: object, url: str) -> str | None:
    """The transport of a remote server whose entry says ``type`` ``kind`` (None: it says none), as clients
    read it: a URL ending in ``/sse`` with no type is an SSE server; None for a type lazymcp does not speak."""
    if kind is None:
        return "sse" if url.split("?")[0].rstrip("/").endswith("/sse") else "http"
    if kind in HTTP_TYPES:
        return "http"
    return "sse" if kind in SSE_TYPES else None
