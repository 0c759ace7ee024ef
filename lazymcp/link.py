"""One client, one upstream and the ``Router`` between them: the part of the proxy both of its client
sides (stdio, ``lazymcp.proxy``; HTTP, ``lazymcp.proxy_http``) share.

A ``Link`` only carries out the router's decisions. It owns the three endings of a session:
- the client's input ends (``client_gone``): every request already read is still answered, waiting
  up to the timeout for the upstream, and then the link ends with status 0;
- the upstream fails (``fail``): what is owed is answered with an error, and the link ends with 1;
- the proxy is told to stop (``interrupt``, on SIGTERM or SIGINT): the same, at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lazymcp import jsonrpc
from lazymcp.errors import ErrorCode
from lazymcp.limits import EXPIRE_EVERY, Limits, say
from lazymcp.notices import proxy_catalog_in
from lazymcp.options import Options
from lazymcp.router import Action, Fail, Router, Say, ToClient, ToServer
from lazymcp.upstream import LineSink, Upstream


class Link:
    """One client, one upstream, and the router between them."""

    def __init__(self, router: Router, upstream: Upstream, to_client: LineSink) -> None:
        self.router = router
        self.upstream = upstream
        self.to_client = to_client
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[int] = self.loop.create_future()
        """Resolves to 0 when the client leaves (its requests answered), 1 when the upstream fails."""
        self.failure: str | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._draining: float | None = None  # when the client's input ended: the drain's deadline

    async def start(self) -> None:
        """Start the upstream. Raises ``UpstreamError`` when it cannot start."""
        await self.upstream.start(self.from_server, self.upstream_gone)
        self._expire()

    def from_client(self, line: bytes, message: jsonrpc.Message | None = None) -> None:
        """One client line; ``message`` is the line already parsed, when the caller has parsed it."""
        try:
            actions = self.router.from_client(line, self.loop.time(), message)
        except Exception as exc:  # a router bug must cost one request, never the session
            say(f"internal error on a client message: {exc!r}")
            actions: list[Action] = [
                ToClient(jsonrpc.error_line(id_of(line), ErrorCode.INTERNAL_ERROR, "Internal error"))
            ]
        self._carry_out(actions)

    def from_server(self, line: bytes) -> None:
        if self.done.done():
            return
        try:
            actions = self.router.from_server(line, self.loop.time())
        except Exception as exc:
            say(f"internal error on an upstream message: {exc!r}")
            return
        if self.router.catalog is not None:
            proxy_catalog_in(self.router.catalog)  # the start-up line, once per process
        self._carry_out(actions)

    def client_gone(self) -> None:
        """The client's input ended: answer what was read, then end (bounded by the timeout)."""
        if self._draining is None:
            wait = self.router.timeout if self.router.timeout else 300.0
            self._draining = self.loop.time() + wait
        self._settle()

    def upstream_gone(self, reason: str) -> None:
        self.fail(reason)

    def fail(self, reason: str) -> None:
        """Answer what is owed, report the cause, and end the link with status 1."""
        if self.done.done():
            return
        self.failure = reason
        self._carry_out(self.router.upstream_failed(reason))
        say(reason)
        self.done.set_result(1)

    def interrupt(self, reason: str, status: int) -> None:
        """Stop now: every request still owed gets an error naming ``reason``."""
        if self.done.done():
            return
        self._carry_out(self.router.upstream_failed(reason))
        self.done.set_result(status)

    def _carry_out(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, ToClient):
                self.to_client(action.data)
            elif isinstance(action, ToServer):
                self.upstream.send(action.data)
            elif isinstance(action, Say):
                say(action.text)
            elif isinstance(action, Fail):  # pyright: ignore[reportUnnecessaryIsInstance]
                self.fail(action.reason)
                return
        self._settle()

    def _settle(self) -> None:
        if self._draining is None or self.done.done():
            return
        if self.router.owed == 0:
            self.done.set_result(0)
        elif self.loop.time() >= self._draining:
            self.fail("the client's input ended and the upstream did not answer in time")

    def _expire(self) -> None:
        self._carry_out(self.router.expire(self.loop.time()))
        if not self.done.done():
            self._timer = self.loop.call_later(EXPIRE_EVERY, self._expire)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if not self.done.done():
            self.done.set_result(0)
        await self.upstream.stop()


def id_of(line: bytes) -> jsonrpc.RequestId | None:
    try:
        request_id = jsonrpc.parse(line).get("id")
    except jsonrpc.NotJSONRPC:
        return None
    return request_id if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None


def make_router(options: Options | None, limits: Limits) -> Router:
    """A proxy's router, with the SDK's 2026 wire model for the results it bridges."""
    from lazymcp.version import __version__

    info = {"name": "lazymcp-proxy", "version": __version__}
    return Router(
        options or Options(),
        timeout=limits.timeout or None,
        client_timeout=limits.client_timeout,
        client_info=info,
        serialize=sdk_serializer,
    )


def sdk_serializer(method: str, version: str, result: dict[str, Any]) -> dict[str, Any] | None:
    """A result through the SDK's wire model of ``method`` in ``version``; None when the model has no
    such method or refuses the result (the bridge then relays it as it came)."""
    from mcp_types import methods as wire  # loaded on the first bridged result, not at start-up
    from pydantic import ValidationError

    try:
        return wire.serialize_server_result(method, version, result)
    except (KeyError, ValidationError):
        return None
