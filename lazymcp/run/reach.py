"""Why a remote server cannot be reached: the one place that turns a failed connection or an answer that
is not MCP into one line naming the URL and the cause.

``Watched`` is the HTTP client every remote connection uses (streamable HTTP and SSE alike). Its connect
phase is bounded by ``CONNECT_TIMEOUT``, apart from ``--timeout``. Until the server has given one MCP
answer it checks each answer: a name that does not resolve, a refused connection, a TLS failure, an
HTTP error status (401, 403, 404...) or a body that is not JSON-RPC each become ``cause``, told once to
``on_cause``; afterwards only a refused credential (401, 403) or a broken connection is. The SDK's
transport is then handed a quiet stand-in answer (``202 Accepted``), so it neither logs a traceback nor
dies; the owner fails the server with the cause, and every request it owed gets that line.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Iterator
from typing import Any, cast
from urllib.parse import urlsplit

import httpx2

from lazymcp.access.answers import AnswerTooLong
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.limits import CONNECT_TIMEOUT

READ_TIMEOUT = 300.0
"""Seconds a response stream may stay silent (the SDK's own default: a stream may stay open)."""
TIMEOUT = httpx2.Timeout(30.0, connect=CONNECT_TIMEOUT, read=READ_TIMEOUT)
MCP_TYPES = ("application/json", "text/event-stream")
STATUS_CAUSES = {
    401: "it needs a sign-in, or a token in the entry's 'headers'",
    403: "it refuses the credentials sent",
    404: "no MCP endpoint at this URL",
    405: "no MCP endpoint at this URL (it takes no POST)",
}


class SignInNeeded(Exception):
    """A signed-in server refused its tokens and no refresh helped: the message says what to do."""


def shown(url: str) -> str:
    """``url`` as errors show it: without userinfo, query or fragment, which may carry a secret."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def failure_cause(exc: BaseException, host: str) -> str:
    """Why a request to ``host`` failed before any answer, in a few words."""
    if isinstance(exc, httpx2.ConnectTimeout):
        return f"no connection within {CONNECT_TIMEOUT:g} s (a firewall, a VPN that is down, a wrong address?)"
    for link in _chain(exc):
        if isinstance(link, socket.gaierror):
            return f"the name {host!r} does not resolve ({link.strerror or link})"
        if isinstance(link, ssl.SSLCertVerificationError):
            return f"its TLS certificate is not trusted ({link.verify_message or link.reason})"
        if isinstance(link, ssl.SSLError):
            if link.reason == "WRONG_VERSION_NUMBER":
                return "the TLS handshake failed: it does not speak TLS (an http:// server?)"
            return f"the TLS handshake failed ({link.reason or link})"
        if isinstance(link, ConnectionRefusedError):
            return "connection refused (nothing listens there)"
        if isinstance(link, OSError) and link.strerror:
            return link.strerror[0].lower() + link.strerror[1:]
    if isinstance(exc, httpx2.TimeoutException):
        return "it did not answer in time"
    return str(exc) or type(exc).__name__


def answer_cause(response: httpx2.Response, *, stream: bool) -> str | None:
    """Why an answer (its status and headers; its body only when already read) is not an MCP server's,
    or None when it may be one. ``stream``: the answer to an SSE transport's GET, which must be a stream."""
    status = response.status_code
    if 300 <= status < 400:
        location = response.headers.get("location", "")
        return f"HTTP {status} to {shown(str(response.url.join(location)))}: give that URL (not followed)"
    if status >= 400:
        cause = STATUS_CAUSES.get(status, "an error, not an MCP answer")
        return f"HTTP {status} {response.reason_phrase}: {cause}".replace(" : ", ": ")
    if status == 202 or status == 204:
        return None
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    expected = ("text/event-stream",) if stream else MCP_TYPES
    if kind not in expected:
        return f"{kind or 'no content type'}, not MCP: is this the server's MCP endpoint?"
    if kind == "application/json" and not _json_rpc(response.content):
        return "JSON that is not JSON-RPC: is this the server's MCP endpoint?"
    return None


def _json_rpc(body: bytes) -> bool:
    try:
        value: object = jsonrpc.parse(body)
    except ValueError:
        return False
    values = cast(list[object], value) if isinstance(value, list) else [value]
    return bool(values) and all(jsonrpc.field(v, "jsonrpc") == "2.0" for v in values)


def _stand_in(request: httpx2.Request) -> httpx2.Response:
    """What the SDK's transport is handed for a request to a server found unusable: for a POST a quiet
    ``202 Accepted``, for the SSE transport's GET a ``502`` that ends its connecting."""
    return httpx2.Response(202 if request.method == "POST" else 502, request=request)


class Watched(httpx2.AsyncClient):
    """The HTTP client of one remote server: bounded connects, and every failure named once (``cause``)."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        sse: bool = False,
        auth: httpx2.Auth | None = None,
        sign_in: str | None = None,
    ) -> None:
        super().__init__(headers=headers, timeout=TIMEOUT, auth=auth)
        self.url = shown(url)
        self.sign_in = sign_in
        """How to sign in to it (``lazymcp.run.signin.login_hint``), for a server that may ask; a 401 says it."""
        self.events = sse
        """An SSE server: its GET is the stream its answers come on."""
        self.opened = False
        """The server has given an MCP answer: from now on only credentials and the connection are judged."""
        self.cause: str | None = None
        """Why the server cannot be used, once known: one line naming the URL."""
        self.on_cause: Callable[[str], None] = lambda cause: None

    def _found(self, cause: str, request: httpx2.Request) -> httpx2.Response:
        if self.cause is None:
            self.cause = cause
            self.on_cause(cause)
        return _stand_in(request)

    async def send(
        self,
        request: httpx2.Request,
        *,
        stream: bool = False,
        auth: Any = httpx2.USE_CLIENT_DEFAULT,
        follow_redirects: Any = httpx2.USE_CLIENT_DEFAULT,
    ) -> httpx2.Response:
        if self.cause is not None:
            return _stand_in(request)
        events = self.events and request.method == "GET"
        if request.method != "POST" and not events:
            # the 2025 listen stream: the SDK retries it, and the POSTs tell of a server gone
            return await super().send(request, stream=stream, auth=auth, follow_redirects=follow_redirects)
        try:
            response = await super().send(request, stream=stream, auth=auth, follow_redirects=follow_redirects)
        except httpx2.TransportError as exc:
            if self.opened and isinstance(exc, httpx2.ReadTimeout):
                raise  # a slow answer of a working server: its request's timeout says so
            return self._found(f"cannot reach {self.url}: {failure_cause(exc, request.url.host)}", request)
        except (SignInNeeded, AnswerTooLong) as exc:
            return self._found(f"{self.url}: {exc}", request)
        except Exception as exc:  # raised past here, it would end the SDK's transport and leave calls unanswered
            failed = type(exc).__name__  # its message may quote what the server sent: only its kind is said
            if self.sign_in is not None and "OAuth" in failed:
                return self._found(f"{self.url}: the sign-in failed ({failed}): {self.sign_in} again", request)
            return self._found(f"{self.url}: a request to it failed ({failed})", request)
        status = response.status_code
        if status == 401 and self.sign_in is not None:
            await response.aclose()
            cause = f"sign-in needed: {self.sign_in} (or give a token in the entry's 'headers')"
            return self._found(f"{self.url} answered HTTP 401 Unauthorized: {cause}", request)
        if self.opened and status not in (401, 403):
            return response
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "application/json" and (status >= 400 or not self.opened):
            await response.aread()  # read once: the SDK reads the same bytes from it
            if status >= 400 and status not in (401, 403) and _json_rpc(response.content):
                return response  # an MCP server's error answer, at an HTTP status
        cause = answer_cause(response, stream=events)
        if cause is None:
            if status < 300 and status not in (202, 204):
                self.opened = True
            return response
        await response.aclose()
        return self._found(f"{self.url} answered {cause}", request)
