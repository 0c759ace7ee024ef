"""What an HTTP front checks before a request reaches a session: the Host and Origin it came with
(DNS-rebinding and cross-site protection, as the MCP transport asks of every server), its content type,
the shape of its message, who its principal is, and the session and protocol version its headers name.
The Host and Origin rule (``Guard``) is the one of every front: the proxy's and the gateway's, and
``serve --http``'s, whose SDK app it wraps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from lazymcp.access.bearer import PRINCIPAL_KEY, Access
from lazymcp.access.policy import ANONYMOUS, Principal
from lazymcp.local.addresses import LOOPBACK, is_loopback
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ErrorCode

SESSION_HEADER = "mcp-session-id"
PROTOCOL_HEADER = "mcp-protocol-version"
MODERN_VERSIONS = frozenset({"2026-07-28"})


def speaks_modern(request: Request) -> bool:
    """Whether a request names a 2026-07-28 protocol version, whose requests need no session."""
    return request.headers.get(PROTOCOL_HEADER) in MODERN_VERSIONS


def principal_of(request: Request) -> Principal:
    """Who a request comes from (``lazymcp.access.policy.Principal``): the name of the bearer token it carried,
    or the client, issuer, subject, scopes and claims of its OAuth token; ``ANONYMOUS`` when its front
    checks no credentials. Read after the front's ``Access.check`` let it in."""
    name = request.scope.get(PRINCIPAL_KEY)
    if isinstance(name, str):
        return Principal(name=name)
    user = request.scope.get("user")
    token = getattr(user, "access_token", None)
    if token is None:
        return ANONYMOUS
    from mcp.server.auth.provider import principal_components

    client, issuer, subject = principal_components(token)
    claims = cast(dict[str, object], getattr(token, "claims", None) or {})
    scopes = frozenset(cast(list[str], getattr(token, "scopes", None) or []))
    given = getattr(token, "token", None)
    return Principal(
        client=client or None,
        issuer=issuer,
        subject=subject,
        scopes=scopes,
        claims=claims,
        token=given if isinstance(given, str) else None,
    )


async def refused(guard: Guard, access: Access | None, request: Request) -> Response | None:
    """The one check of a front's routes (``/mcp``, ``/metrics``, the status), not the load balancer's: the
    Host and Origin first, so a foreign page costs no token check, then who may come in (``access``; None:
    anyone). None: the request is let in."""
    found = guard.check(request)
    if found is None and access is not None:
        found = await access.check(request)
    return found


def retry_after(answer: jsonrpc.Frame) -> str | None:
    """The ``Retry-After`` of an answer refusing a call for a rate limit (``ErrorCode.RATE_LIMITED``, whose
    ``data.retryAfter`` says in how many seconds); None for any other answer."""
    error = answer.message.get("error")
    if not isinstance(error, dict) or cast(dict[str, object], error).get("code") != ErrorCode.RATE_LIMITED:
        return None
    seconds = jsonrpc.field(cast(dict[str, object], error).get("data"), "retryAfter")
    return str(seconds) if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0 else "1"


def with_trace_context(frame: jsonrpc.Frame, traceparent: str | None) -> jsonrpc.Frame:
    """A request with the W3C trace context of its ``traceparent`` header in ``params._meta.traceparent``,
    where servers and traces read it, unless it names one there already; else the frame as it came."""
    if traceparent is None or "method" not in frame.message or "id" not in frame.message:
        return frame
    params = frame.message.get("params")
    if params is not None and not isinstance(params, dict):
        return frame
    meta = jsonrpc.params_meta(frame.message)
    if "traceparent" in meta or not jsonrpc.TRACEPARENT.fullmatch(traceparent.strip()):
        return frame
    members = cast(dict[str, object], params or {})
    return frame.changed(params={**members, "_meta": {**meta, "traceparent": traceparent.strip()}})


async def disconnected(request: Request) -> None:
    """Returns when the client closes the connection of a request whose body was read."""
    while True:
        event = await request.receive()
        if event["type"] == "http.disconnect":
            return


async def read_body(request: Request, max_body: int) -> bytes | Response:
    """A request's body, or the 413 for one past ``max_body`` bytes (declared or sent)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        return Response("Request body too large", status_code=413)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body:
            return Response("Request body too large", status_code=413)
        chunks.append(chunk)
    return b"".join(chunks)


def malformed(message: jsonrpc.Message) -> str | None:
    """Why a posted message is not one the front can answer (None: it can)."""
    if "method" in message and not isinstance(message["method"], str):
        return "'method' must be a string"
    if "id" in message and not jsonrpc.valid_id(message["id"]):
        return "'id' must be a string or an integer"
    return None


def refuse_non_json(request: Request) -> Response | None:
    """A POST whose body is not declared ``application/json`` is refused (400): a web page can send a
    ``text/plain`` POST without a CORS preflight."""
    content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if request.method == "POST" and content_type != "application/json":
        return Response("Invalid Content-Type header: expected application/json", status_code=400)
    return None


def error_response(
    request_id: object, status: int, text: str, *, code: ErrorCode = ErrorCode.INVALID_REQUEST
) -> Response:
    body = jsonrpc.encode(jsonrpc.error_message(request_id, code, text))
    return Response(body, status_code=status, media_type="application/json")


class Guard:
    """Host and Origin checks for the address a front listens on.

    - ``Host``: on a loopback address, a loopback name or one ``--allow-host`` lists; elsewhere one it
      lists, when it lists any (421 otherwise).
    - ``Origin``, when a request has one: a loopback origin on a loopback address, or one
      ``--allow-origin`` lists (``*``: any); anything else gets 403, on every address. Browsers always
      send ``Origin`` and other clients usually none, so this keeps web pages out without a list of the
      clients, while a request without ``Origin`` is served.
    """

    def __init__(self, bound: str, allow_hosts: Sequence[str], allow_origins: Sequence[str]) -> None:
        self.loopback = is_loopback(bound)
        self.hosts: set[str] = {host.lower() for host in allow_hosts}
        if self.loopback:
            self.hosts |= LOOPBACK
        self.origins = {origin.lower().rstrip("/") for origin in allow_origins}

    def check(self, request: Request) -> Response | None:
        host = (request.headers.get("host") or "").lower()
        hostname = (request.url.hostname or "").lower()
        if self.hosts and hostname not in self.hosts and host not in self.hosts:
            return Response("Forbidden host", status_code=421)
        origin = request.headers.get("origin")
        if origin is None or self._allowed(origin.lower().rstrip("/")):
            return None
        return Response("Invalid Origin header", status_code=403)

    def _allowed(self, origin: str) -> bool:
        if "*" in self.origins or origin in self.origins:
            return True
        try:
            return self.loopback and is_loopback(urlsplit(origin).hostname)
        except ValueError:  # not a URL (an unclosed IPv6 bracket): no origin of this machine's
            return False

    def around(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind this guard: every HTTP request is checked before ``app`` sees it."""

        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                refused = self.check(Request(scope))
                if refused is not None:
                    await refused(scope, receive, send)
                    return
            await app(scope, receive, send)

        return guarded
