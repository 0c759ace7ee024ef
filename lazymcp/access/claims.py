"""What an introspected access token grants this server: the rules of its claims (RFC 7662, RFC 8707).

A token is let in only if the issuer's answer says it is active, not expired nor not-yet-valid, from this
issuer when the answer says, and issued for this server (``aud`` names ``resource``). It must name whom
it stands for, by ``sub`` or ``client_id``: one that names neither is refused (``Nameless``), never let
in as nobody, and so is one whose ``sub`` or ``client_id`` is there but is not a non-empty string (a
number, a list, ``""``): read as absent, it would fall back to the other and merge different people into
one principal. ``lazymcp.access.oauth`` asks the issuer; this module only reads its answer.
"""

from __future__ import annotations

import math
from typing import cast
from urllib.parse import urlsplit

from mcp.server.auth.provider import AccessToken

_DEFAULT_PORTS = {"http": 80, "https": 443}


class Nameless(Exception):
    """The issuer vouches for a token that names no subject and no client, or names one by something
    other than a non-empty string: it is refused with its own reason (``description``), since the client
    can do nothing about it but ask its issuer for another kind of token."""

    def __init__(self, description: str = "the token names no subject and no client") -> None:
        super().__init__(description)
        self.description = description


def read_introspection(answer: object, token: str, issuer: str, resource: str, now: float) -> AccessToken | None:
    """The access an RFC 7662 answer grants this server, or None when the token is not for it.

    Raises:
        Nameless: the token is for this server but names neither a subject nor a client, or names one by
            something other than a non-empty string.
    """
    if not isinstance(answer, dict):
        return None
    claims = cast(dict[str, object], answer)
    if claims.get("active") is not True:
        return None
    exp, nbf = _number(claims.get("exp")), _number(claims.get("nbf"))
    if (exp is not None and exp <= now) or (nbf is not None and nbf > now):
        return None
    if "exp" in claims and exp is None:
        return None
    iss = claims.get("iss")
    if iss is not None and (not isinstance(iss, str) or not same_url(iss, issuer)):
        return None
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else cast(list[object], aud) if isinstance(aud, list) else []
    if not any(isinstance(entry, str) and same_url(entry, resource) for entry in audiences):
        return None
    scope, client_id, sub = claims.get("scope"), _name(claims, "client_id"), _name(claims, "sub")
    if client_id is None and sub is None:
        raise Nameless
    return AccessToken(
        token=token,
        client_id=client_id or "",
        scopes=scope.split() if isinstance(scope, str) else [],
        expires_at=None if exp is None else int(exp),
        resource=resource,
        subject=sub,
        claims=claims,
    )


def _name(claims: dict[str, object], claim: str) -> str | None:
    """A claim naming someone (``sub``, ``client_id``): None when absent (or null).

    Raises:
        Nameless: it is there but is not a non-empty string.
    """
    value = claims.get(claim)
    if value is None or (isinstance(value, str) and value):
        return value
    raise Nameless(f"the token's {claim!r} is not a non-empty string")


def same_url(a: str, b: str) -> bool:
    """Same URL up to the case of scheme and host, a default port, and a trailing slash."""
    try:
        left, right = urlsplit(a), urlsplit(b)
        ports = (left.port or _DEFAULT_PORTS.get(left.scheme), right.port or _DEFAULT_PORTS.get(right.scheme))
    except ValueError:
        return False
    return (left.scheme.lower(), left.hostname, ports[0], left.path.rstrip("/"), left.query) == (
        right.scheme.lower(),
        right.hostname,
        ports[1],
        right.path.rstrip("/"),
        right.query,
    )


def _number(value: object) -> float | None:
    """A JSON number as a float; None for anything else, and for the Infinity and NaN Python's json accepts."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)
