"""OAuth access tokens for an HTTP front (``OAuthAccess``, an ``lazymcp.access.bearer.Access``).

Theory of operation (MCP authorization, 2025-11-25). lazymcp is a resource server: an
authorization server (the *issuer*) hands out access tokens, and lazymcp asks it about each one.

- At start-up the issuer's metadata is read (RFC 8414 ``/.well-known/oauth-authorization-server``, then
  OpenID ``/.well-known/openid-configuration``) for its ``introspection_endpoint``. An issuer that cannot
  be read stops the start with one line (``ConfigError``), not at the first client.
- Each token is introspected (RFC 7662) and let in only if it is active, not expired nor not-yet-valid,
  from this issuer when the answer says, and issued for this server: ``aud`` must name ``resource``
  (RFC 8707). An answer without ``aud`` is refused, since then any token of the issuer would do. These
  rules, and the next, are ``lazymcp.access.claims``'s.
- A token must name whom it stands for, by ``sub`` or ``client_id``, each a non-empty string when given: a
  session is bound to that principal (client, issuer, subject), and every token naming neither would be one
  principal, each able to use the sessions of the others. Such a token is refused (``invalid_token``), never
  let in as nobody, and so is one whose ``sub`` or ``client_id`` is a number, a list or ``""``.
- Refusals follow RFC 6750 and RFC 9728: 401 with ``WWW-Authenticate: Bearer resource_metadata="…"``
  (and ``error="invalid_token"`` when a token was given); 403 ``insufficient_scope`` naming the scopes.
- An issuer that does not answer within ``timeout`` (in total, not per read), answers with an error, or
  answers with more than ``ISSUER_ANSWER``, gets the client a 503 ``temporarily_unavailable`` with
  ``Retry-After``: not a 401, which would send the client to sign in again for the issuer's fault.
- Positive verdicts are kept for ``cache_seconds`` (never past the token's ``exp``), at most
  ``cache_size`` of them, oldest out first; refusals are not kept, so made-up tokens take no memory.
  At most ``MAX_INTROSPECTIONS`` requests go to the issuer at once; the rest wait within their timeout.

A token let in leaves the SDK's ``AuthenticatedUser`` and ``AuthCredentials`` in ``request.scope``
(``"user"``, ``"auth"``), as Starlette's authentication middleware would: a front may bind a session to
its principal (``mcp.server.auth.middleware.bearer_auth.authorization_context``).

Flags for the command line (``access_from`` takes their values)::

    --token-file FILE         the bearer token every request must carry (else env LAZYMCP_GATEWAY_TOKEN)
    --oauth-issuer URL        accept OAuth access tokens of this authorization server, checked by
                              introspection (https; http only on loopback)
    --oauth-resource URL      this server's URL as clients reach it, which tokens must be issued for
                              (default: http://HOST:PORT/mcp from --http; needed behind a proxy or on 0.0.0.0)
    --oauth-scope SCOPE       a scope every token must carry (repeatable)
    --oauth-introspection URL the issuer's introspection endpoint, when its metadata does not name one
    env LAZYMCP_OAUTH_CLIENT_ID, LAZYMCP_OAUTH_CLIENT_SECRET: how lazymcp authenticates to the
                              introspection endpoint (HTTP Basic), when the issuer requires it

See spec/auth.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx2
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.shared.auth import OAuthMetadata
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from lazymcp.access.answers import ENCODINGS, AnswerTooLong, read_bounded, read_bounded_sync
from lazymcp.access.bearer import Access, bearer_token, refusal
from lazymcp.access.claims import Nameless, read_introspection, same_url
from lazymcp.local.addresses import is_loopback
from lazymcp.protocol.errors import ConfigError

DEFAULT_TIMEOUT = 10.0
"""Seconds the issuer gets for one introspection, in total (connecting, waiting, reading)."""
CACHE_SECONDS = 60.0
"""Seconds a positive verdict is kept: a revoked token may be let in this long after revocation."""
CACHE_SIZE = 4096
"""Tokens whose positive verdicts are kept at once."""
MAX_TOKEN = 8192
"""Characters of a bearer token: a longer one is refused without asking the issuer."""
MAX_INTROSPECTIONS = 16
"""Introspection requests open to the issuer at once."""
RETRY_AFTER = 5
"""Seconds a client is told to wait when the issuer did not answer."""
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))
"""Parses URLs as the SDK's metadata does, so an issuer without a path keeps no trailing slash."""


class IssuerUnavailable(Exception):
    """The issuer did not answer an introspection in time, or not with a usable answer."""


class IntrospectionVerifier:
    """The SDK's ``TokenVerifier``, by RFC 7662 introspection, with a small cache of positive verdicts."""

    def __init__(
        self,
        issuer: str,
        endpoint: str,
        resource: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        cache_seconds: float = CACHE_SECONDS,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.issuer = issuer
        self.endpoint = endpoint
        self.resource = resource
        self.timeout = timeout
        self.cache_seconds = cache_seconds
        self.cache_size = cache_size
        self._auth = httpx2.BasicAuth(client_id, client_secret or "") if client_id else None
        self._cache: OrderedDict[bytes, tuple[float, AccessToken]] = OrderedDict()
        self._http: httpx2.AsyncClient | None = None

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access, or None when it is refused.

        Raises:
            IssuerUnavailable: the issuer did not answer in time or with a usable answer.
            Nameless: the token is for this server but names no principal.
        """
        key = hashlib.sha256(token.encode()).digest()
        now = time.time()
        kept = self._cache.get(key)
        if kept is not None and kept[0] > now:
            self._cache.move_to_end(key)
            return kept[1]
        self._cache.pop(key, None)
        access = read_introspection(await self._introspect(token), token, self.issuer, self.resource, time.time())
        if access is not None and self.cache_size > 0:
            until = now + self.cache_seconds
            self._cache[key] = (until if access.expires_at is None else min(until, access.expires_at), access)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return access

    async def _introspect(self, token: str) -> object:
        if self._http is None:
            limits = httpx2.Limits(max_connections=MAX_INTROSPECTIONS, max_keepalive_connections=MAX_INTROSPECTIONS)
            self._http = httpx2.AsyncClient(timeout=self.timeout, limits=limits)
        form = {"token": token, "token_type_hint": "access_token"}
        headers = {"Accept": "application/json", "Accept-Encoding": ENCODINGS}
        try:
            async with asyncio.timeout(self.timeout):  # httpx's timeouts bound each read, not the whole answer
                async with self._http.stream(
                    "POST", self.endpoint, data=form, headers=headers, auth=self._auth
                ) as answer:
                    status = answer.status_code
                    body = await read_bounded(answer)
        except TimeoutError:
            raise IssuerUnavailable(f"the OAuth issuer did not answer within {self.timeout:g}s") from None
        except httpx2.HTTPError as exc:
            raise IssuerUnavailable(f"cannot reach the OAuth issuer: {exc or type(exc).__name__}") from None
        except AnswerTooLong as exc:
            raise IssuerUnavailable(str(exc)) from None
        if status != 200:
            raise IssuerUnavailable(f"the OAuth issuer answered the introspection with HTTP {status}")
        try:
            return json.loads(body)
        except ValueError:
            raise IssuerUnavailable("the OAuth issuer's introspection answer is not JSON") from None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None


class OAuthAccess(Access):
    """OAuth access tokens of one issuer, for this server's resource URL."""

    names_principals = True

    def __init__(self, verifier: IntrospectionVerifier, scopes: Sequence[str] = ()) -> None:
        self.verifier = verifier
        self.scopes = tuple(scopes)
        self.resource = verifier.resource
        self.issuer = verifier.issuer
        self.metadata_url = str(build_resource_metadata_url(_URL.validate_python(self.resource)))
        self._backend = BearerAuthBackend(verifier, resource_server_url=_URL.validate_python(self.resource))

    async def check(self, request: Request) -> Response | None:
        token = bearer_token(request.headers.get("authorization"))
        if token is None:
            return self._refused(401)
        if len(token) > MAX_TOKEN:
            return self._refused(401, "invalid_token", f"the token is longer than {MAX_TOKEN} characters")
        try:
            found = await self._backend.authenticate(request)
        except IssuerUnavailable as exc:
            body = {"error": "temporarily_unavailable", "error_description": str(exc)}
            return JSONResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER)})
        except Nameless as exc:
            return self._refused(401, "invalid_token", exc.description)
        if found is None:
            return self._refused(401, "invalid_token", "the token is not active, has expired, or is for another server")
        credentials, user = found
        missing = [scope for scope in self.scopes if scope not in credentials.scopes]
        if missing:
            return self._refused(403, "insufficient_scope", f"the token lacks the scope {' '.join(missing)}")
        request.scope["user"], request.scope["auth"] = user, credentials
        return None

    def _refused(self, status: int, error: str | None = None, description: str | None = None) -> Response:
        params: dict[str, str] = {}
        if error is not None and description is not None:
            params |= {"error": error, "error_description": description}
        if self.scopes:
            params["scope"] = " ".join(self.scopes)
        params["resource_metadata"] = self.metadata_url
        return refusal(status, params)

    def routes(self) -> list[BaseRoute]:
        """RFC 9728 metadata at ``/.well-known/oauth-protected-resource`` + the resource's path, and at the
        root too, where clients look when a challenge names no ``resource_metadata``."""
        routes: list[BaseRoute] = list(
            create_protected_resource_routes(
                _URL.validate_python(self.resource),
                [_URL.validate_python(self.issuer)],
                scopes_supported=list(self.scopes) or None,
                resource_name="lazymcp",
            )
        )
        first = routes[0]
        root = "/.well-known/oauth-protected-resource"
        if isinstance(first, Route) and first.path != root:
            routes.append(Route(root, first.endpoint, methods=["GET", "OPTIONS"]))
        return routes

    def describe(self) -> str:
        return f"OAuth tokens of {self.issuer}"

    async def aclose(self) -> None:
        await self.verifier.aclose()


def oauth_access(
    issuer: str,
    resource: str,
    *,
    scopes: Sequence[str] = (),
    introspection: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    cache_seconds: float = CACHE_SECONDS,
    cache_size: int = CACHE_SIZE,
) -> OAuthAccess:
    """Requests must carry an access token of ``issuer`` issued for ``resource``, with every scope of ``scopes``.

    Reads the issuer's metadata for its introspection endpoint unless ``introspection`` names it: this
    blocks, so call it before serving.

    Raises:
        ConfigError: a URL is not usable, a scope is malformed, or the issuer's metadata cannot be read.
    """
    issuer = _checked_url(issuer, "--oauth-issuer", issuer=True)
    resource = _checked_url(resource, "--oauth-resource", issuer=False)
    for scope in scopes:
        if not scope or any(char in scope for char in ' "\\') or not scope.isprintable():
            raise ConfigError(f"--oauth-scope {scope!r}: a scope is one word of printable characters, without quotes")
    if client_secret and not client_id:
        raise ConfigError("LAZYMCP_OAUTH_CLIENT_SECRET is set without LAZYMCP_OAUTH_CLIENT_ID")
    if introspection is None:
        introspection = discover_introspection(issuer, timeout)
    introspection = _checked_url(introspection, "the introspection endpoint", issuer=True)
    verifier = IntrospectionVerifier(
        issuer,
        introspection,
        resource,
        client_id=client_id,
        client_secret=client_secret,
        timeout=timeout,
        cache_seconds=cache_seconds,
        cache_size=cache_size,
    )
    return OAuthAccess(verifier, scopes)


def discover_introspection(issuer: str, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The issuer's ``introspection_endpoint``, from its RFC 8414 metadata or else its OpenID configuration.

    Raises:
        ConfigError: no metadata can be read, it is for another issuer, or it names no introspection endpoint.
    """
    tried: list[str] = []
    with httpx2.Client(timeout=timeout) as http:
        for url in metadata_urls(issuer):
            try:
                with http.stream(
                    "GET", url, headers={"Accept": "application/json", "Accept-Encoding": ENCODINGS}
                ) as answer:
                    if answer.status_code != 200:
                        tried.append(f"{url} (HTTP {answer.status_code})")
                        continue
                    body = read_bounded_sync(answer, timeout)
            except httpx2.HTTPError as exc:
                raise ConfigError(
                    f"cannot read the metadata of OAuth issuer {issuer}: {exc or type(exc).__name__}"
                ) from None
            except (AnswerTooLong, TimeoutError) as exc:
                raise ConfigError(f"{url}: {exc}") from None
            try:
                metadata = OAuthMetadata.model_validate_json(body)
            except ValidationError:
                raise ConfigError(f"{url} is not OAuth authorization server metadata") from None
            if not same_url(str(metadata.issuer), issuer):
                raise ConfigError(f"{url} is the metadata of issuer {metadata.issuer}, not {issuer}")
            if metadata.introspection_endpoint is None:
                raise ConfigError(f"OAuth issuer {issuer} names no introspection_endpoint: give --oauth-introspection")
            return str(metadata.introspection_endpoint)
    raise ConfigError(f"OAuth issuer {issuer} publishes no metadata: tried {', '.join(tried)}")


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order MCP clients try them (RFC 8414 §3.1, OpenID)."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    if not path:
        return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def _checked_url(url: str, what: str, *, issuer: bool) -> str:
    """``url`` if it is an absolute http(s) URL; an issuer's must be https, or http on loopback."""
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.fragment
    except ValueError:
        raise ConfigError(f"{what} {url!r} is not an http(s) URL") from None
    if not valid:
        raise ConfigError(f"{what} {url!r} is not an http(s) URL")
    if issuer and parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ConfigError(f"{what} {url!r} must be https (http is allowed only on loopback)")
    if issuer and parts.query:
        raise ConfigError(f"{what} {url!r} may not have a query")
    return url
