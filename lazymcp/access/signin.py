"""How lazymcp signs in to a remote server, as its entry says it (``"oauth"``): ``SignInSettings``.

The client lazymcp signs in as, in the order the MCP authorization spec gives: a client registered
beforehand (``clientId``, with ``clientSecret`` for a confidential one), else a Client ID Metadata
Document (``clientMetadataUrl``, an https URL the server fetches), else dynamic registration (no
``oauth`` key at all, or one with ``scopes`` only). ``scopes``: what to ask for (default: what the server
asks for in its 401, or lists in its metadata). The secret is never shown: not in ``repr``, an error or a
log line. ``exchange``: no sign-in, but a token exchanged for each principal (``lazymcp.access.exchange``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from lazymcp.access.exchange import ExchangeSettings, parse_exchange
from lazymcp.protocol.errors import ConfigError

OAUTH_KEYS = ("clientId", "clientSecret", "scopes", "clientMetadataUrl", "exchange")


@dataclass(frozen=True, slots=True)
class SignInSettings:
    """An entry's ``oauth`` key, read."""

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    client_metadata_url: str | None = None
    exchange: ExchangeSettings | None = None
    """Token exchange for each principal (``lazymcp.access.exchange``) instead of a sign-in."""


def parse_sign_in(value: object, where: str, expand: Callable[[str], str] = lambda text: text) -> SignInSettings:
    """Read an entry's ``oauth`` value (``where``: the file and server, for errors; ``expand`` fills
    ``${VAR}`` in ``clientSecret``).

    Raises:
        ConfigError: not an object, an unknown key, a value of the wrong kind, or a secret without its id.
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: field 'oauth' must be an object")
    given = cast(Mapping[str, object], value)
    for key in given:
        if key not in OAUTH_KEYS:
            raise ConfigError(f"{where}: unknown field 'oauth.{key}'; expected any of {', '.join(OAUTH_KEYS)}")
    if "exchange" in given:
        if len(given) > 1:
            raise ConfigError(f"{where}: field 'oauth.exchange' takes no other 'oauth' field beside it")
        return SignInSettings(exchange=parse_exchange(given["exchange"], where, expand))
    texts: dict[str, str | None] = {}
    for key in ("clientId", "clientSecret", "clientMetadataUrl"):
        one = given.get(key)
        if one is not None and (not isinstance(one, str) or not one):
            raise ConfigError(f"{where}: field 'oauth.{key}' must be a non-empty string")
        texts[key] = one
    scopes = given.get("scopes", [])
    if not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in cast(list[object], scopes)):
        raise ConfigError(f"{where}: field 'oauth.scopes' must be a list of scope names")
    if texts["clientSecret"] is not None and texts["clientId"] is None:
        raise ConfigError(f"{where}: field 'oauth.clientSecret' needs 'oauth.clientId'")
    url = texts["clientMetadataUrl"]
    if url is not None and not url.startswith("https://"):
        raise ConfigError(f"{where}: field 'oauth.clientMetadataUrl' must be an https:// URL")
    secret = texts["clientSecret"]
    return SignInSettings(
        client_id=texts["clientId"],
        client_secret=expand(secret) if secret is not None else None,
        scopes=tuple(cast(list[str], scopes)),
        client_metadata_url=url,
    )
