"""Token exchange (RFC 8693) for a remote server that trusts the gateway's identity provider: an entry's
``"oauth": {"exchange": {...}}``, read (``ExchangeSettings``), and the form and answer of one exchange.

For each principal signed in by OAuth at the gateway (``--oauth-issuer``), the gateway trades the
principal's own access token (the *subject token*) at ``tokenEndpoint`` for a token issued for the server
(``audience``; ``resource``: the server's URL), authenticating as ``clientId`` with ``clientSecret``
(HTTP Basic). The token it gets goes to that server as ``Authorization: Bearer``, for that principal only;
the principal's own token never reaches a server. No error or log line shows a token or the secret.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit

from lazymcp.local.addresses import is_loopback
from lazymcp.protocol.errors import ConfigError

EXCHANGE_KEYS = ("tokenEndpoint", "audience", "clientId", "clientSecret")
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
DEFAULT_LIFETIME = 300.0
"""Seconds an exchanged token is taken to last when its answer gives no ``expires_in``."""
_ERROR_CODE = frozenset("abcdefghijklmnopqrstuvwxyz_")


class ExchangeRefused(Exception):
    """The token endpoint refused the exchange, or gave no usable token: the message says why, in one line
    that never holds a token."""


@dataclass(frozen=True, slots=True)
class ExchangeSettings:
    """An entry's ``oauth.exchange``, read."""

    token_endpoint: str
    audience: str
    client_id: str
    client_secret: str = field(repr=False)


def parse_exchange(value: object, where: str, expand: Callable[[str], str]) -> ExchangeSettings:
    """Read an entry's ``oauth.exchange`` (``expand`` fills ``${VAR}`` in ``clientSecret``).

    Raises:
        ConfigError: not an object, an unknown or missing key, a value that is not a non-empty string, or a
            token endpoint that is neither https nor http on loopback.
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: field 'oauth.exchange' must be an object")
    given = cast(Mapping[str, object], value)
    for key in given:
        if key not in EXCHANGE_KEYS:
            expected = ", ".join(EXCHANGE_KEYS)
            raise ConfigError(f"{where}: unknown field 'oauth.exchange.{key}'; expected {expected}")
    texts: dict[str, str] = {}
    for key in EXCHANGE_KEYS:
        one = given.get(key)
        if not isinstance(one, str) or not one:
            raise ConfigError(f"{where}: field 'oauth.exchange.{key}' must be a non-empty string")
        texts[key] = one
    endpoint = texts["tokenEndpoint"]
    if not (endpoint.startswith("https://") or _loopback_http(endpoint)):
        raise ConfigError(f"{where}: field 'oauth.exchange.tokenEndpoint' must be https (http only on loopback)")
    return ExchangeSettings(endpoint, texts["audience"], texts["clientId"], expand(texts["clientSecret"]))


def _loopback_http(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "http" and is_loopback(parts.hostname or "")


def exchange_form(settings: ExchangeSettings, subject_token: str, resource: str) -> dict[str, str]:
    """The form of one exchange of ``subject_token`` for a token for ``resource`` (RFC 8693 §2.1)."""
    return {
        "grant_type": TOKEN_EXCHANGE,
        "subject_token": subject_token,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "audience": settings.audience,
        "resource": resource,
    }


def read_exchange(status: int, body: bytes) -> tuple[str, float]:
    """The token of an exchange's answer and the seconds it lasts.

    Raises:
        ExchangeRefused: an error answer (named by its RFC 6749 ``error`` code only, since its description
            may quote what was sent), or one without a bearer ``access_token``.
    """
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    answer = cast(dict[str, object], data) if isinstance(data, dict) else {}
    if status != 200:
        code = answer.get("error")
        named = f" ({code})" if isinstance(code, str) and code and set(code) <= _ERROR_CODE else ""
        raise ExchangeRefused(f"the token exchange was refused: HTTP {status}{named}")
    token, kind, lasts = answer.get("access_token"), answer.get("token_type"), answer.get("expires_in")
    if not isinstance(token, str) or not token or not isinstance(kind, str) or kind.lower() != "bearer":
        raise ExchangeRefused("the token exchange gave no bearer access_token")
    if isinstance(lasts, bool) or not isinstance(lasts, int | float) or lasts <= 0:
        return token, DEFAULT_LIFETIME
    return token, float(lasts)


NEEDS_PRINCIPAL = (
    "its token exchange ('oauth.exchange') needs a principal signed in by OAuth: serve with --http and --oauth-issuer"
)
"""Why a server whose entry exchanges tokens cannot be reached without such a principal."""
