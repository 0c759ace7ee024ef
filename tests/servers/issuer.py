"""A small OAuth authorization server for tests: RFC 8414 metadata and RFC 7662 introspection over a fixed
set of tokens, served over real HTTP by uvicorn in a thread of its own.

A thread, not the test's event loop: ``oauth_access`` reads the metadata with a blocking client, as the
command line does before it serves. Besides the honest issuer at ``/``, it serves an OpenID-only issuer
at ``/oidc``, and endpoints that misbehave: ``/drip/introspect`` sends a byte at a time and never
finishes, ``/huge/introspect`` sends megabytes, and so do the metadata of issuers ``/drip`` and ``/huge``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Generator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

CLIENT_ID = "lazymcp-gateway"
CLIENT_SECRET = "introspection-secret-5e1"
SCOPE = "mcp:tools"
ELSEWHERE = "https://elsewhere.example/mcp"
EXCHANGE_CLIENT = "lazymcp-exchanger"
EXCHANGE_SECRET = "exchange-secret-7d2"
AUDIENCE = "upstream-api"
"""The only audience ``/token`` exchanges tokens for; any other is refused with ``invalid_target``."""


def tokens(resource: str) -> dict[str, dict[str, Any]]:
    """What introspection says of each known token; any other token is inactive."""
    now = int(time.time())
    good = {"active": True, "scope": f"{SCOPE} profile", "client_id": "team-client", "sub": "ada", "exp": now + 3600}
    return {
        "good": {**good, "aud": resource},
        "good-renewed": {**good, "aud": resource},  # ada's token after a refresh: one principal, a new token
        "good-among-audiences": {**good, "aud": [ELSEWHERE, resource]},
        "expired": {**good, "aud": resource, "exp": now - 60},
        "inactive": {"active": False},
        "other-audience": {**good, "aud": ELSEWHERE},
        "no-audience": good,
        "no-scope": {**good, "aud": resource, "scope": "profile"},
        "ada-in-ops": {**good, "aud": resource, "groups": ["ops"]},  # one principal, two sets of claims
        "ada-in-docs": {**good, "aud": resource, "groups": ["docs"]},
        "eve": {**good, "aud": resource, "sub": "eve", "groups": ["ops"]},
    }


class Issuer:
    """The authorization server's state: its URL, its tokens, and how often it was asked."""

    def __init__(self, port: int, resource: str) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.tokens = tokens(resource)
        self.introspections = 0
        self.exchanged: dict[str, dict[str, str]] = {}
        """Each token ``/token`` issued: the subject it names, the audience and resource it is for."""
        self.subjects: list[str] = []
        """The subject token of each exchange, in order."""

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self.metadata),
                Route("/oidc/.well-known/openid-configuration", self.oidc_metadata),
                Route("/introspect", self.introspect, methods=["POST"]),
                Route("/token", self.exchange, methods=["POST"]),
                Route("/oidc/introspect", self.introspect, methods=["POST"]),
                Route("/drip/introspect", self.drip, methods=["POST"]),
                Route("/huge/introspect", self.huge, methods=["POST"]),
                Route("/.well-known/oauth-authorization-server/drip", self.drip),
                Route("/.well-known/oauth-authorization-server/huge", self.huge),
            ]
        )

    def _metadata(self, issuer: str) -> dict[str, Any]:
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "introspection_endpoint": f"{issuer}/introspect",
            "response_types_supported": ["code"],
        }

    async def metadata(self, request: Request) -> Response:
        return JSONResponse(self._metadata(self.url))

    async def oidc_metadata(self, request: Request) -> Response:
        return JSONResponse(self._metadata(f"{self.url}/oidc"))

    async def introspect(self, request: Request) -> Response:
        """RFC 7662 §2: the caller authenticates with HTTP Basic; the token comes as a form field."""
        import base64

        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        self.introspections += 1
        token = str((await request.form()).get("token", ""))
        return JSONResponse(self.tokens.get(token, {"active": False}))

    async def exchange(self, request: Request) -> Response:
        """RFC 8693 token exchange: the caller authenticates with HTTP Basic; the subject token must be an
        access token this issuer issued, active and unexpired; the answer is a new token naming its subject."""
        import base64

        expected = base64.b64encode(f"{EXCHANGE_CLIENT}:{EXCHANGE_SECRET}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        form = await request.form()
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        known = self.tokens.get(str(form.get("subject_token", "")), {})
        kind = str(form.get("subject_token_type", ""))
        if (
            not known.get("active")
            or known.get("exp", 0) < time.time()
            or not kind
            or not kind.endswith("access_token")
        ):
            return JSONResponse({"error": "invalid_grant", "error_description": "bad subject token"}, status_code=400)
        if form.get("audience") != AUDIENCE:
            return JSONResponse({"error": "invalid_target"}, status_code=400)
        token = f"exchanged-{len(self.subjects) + 1}"
        self.subjects.append(str(form.get("subject_token")))
        self.exchanged[token] = {"sub": known["sub"], "aud": AUDIENCE, "resource": str(form.get("resource"))}
        issued = "urn:ietf:params:oauth:token-type:access_token"
        return JSONResponse(
            {"access_token": token, "issued_token_type": issued, "token_type": "Bearer", "expires_in": 3600}
        )

    async def drip(self, request: Request) -> Response:
        async def forever() -> AsyncIterator[bytes]:
            yield b"{"
            while True:
                await asyncio.sleep(0.1)
                yield b" "

        return StreamingResponse(forever(), media_type="application/json")

    async def huge(self, request: Request) -> Response:
        padding = b" " * (4 * 1024 * 1024)
        return Response(b'{"active": true,' + padding + b'"aud": "x"}', media_type="application/json")


@contextmanager
def running_issuer(port: int, resource: str) -> Generator[Issuer]:
    """An ``Issuer`` listening on 127.0.0.1:``port`` until the block ends."""
    issuer = Issuer(port, resource)
    config = uvicorn.Config(issuer.app(), host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1)
    ready = threading.Event()

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            ready.set()

    server = Announcing(config)

    def run() -> None:
        try:
            server.run()
        finally:
            ready.set()  # a server that could not start ends here

    thread = threading.Thread(target=run, name="issuer", daemon=True)
    thread.start()
    if not ready.wait(30) or not server.started:
        raise RuntimeError(f"the test issuer did not start on port {port}")
    try:
        yield issuer
    finally:
        server.should_exit = True
        thread.join(30)
