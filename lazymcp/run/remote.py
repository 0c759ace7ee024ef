"""A remote server, through the SDK's client transports: streamable HTTP, or SSE (the transport of 2024-11-05,
still served by many): ``HttpConnection``, which moves lines like a server's process does.

Lines are parsed once on the way up (the SDK's writer takes a typed message) and encoded once on the way
down; the outbox holds at most ``OUTBOX`` lines before the owner is told to stop reading. Every request
goes through one ``lazymcp.run.reach.Watched`` client, which bounds the connect and names why a server
cannot be used, in one line, to ``on_gone``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import UpstreamError
from lazymcp.protocol.limits import OUTBOX
from lazymcp.run.reach import READ_TIMEOUT, Watched, failure_cause, shown

LineSink = Callable[[bytes], None]
Pressure = Callable[[bool], None]


class HttpConnection:
    """A remote server over streamable HTTP or (``sse``) SSE."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        sse: bool = False,
        auth: Any = None,
        sign_in: str | None = None,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        """Sent with every request (a gateway entry's ``headers``: credentials, usually)."""
        self.sse = sse
        self.auth = auth
        """What signs each request (``lazymcp.run.signin.connection_auth``); None: the headers alone."""
        self.sign_in = sign_in
        self.on_pressure: Pressure = lambda paused: None
        self._stack = AsyncExitStack()
        self._outbox: MemoryObjectSendStream[bytes] | None = None
        self._legacy_version: str | None = None
        self._resume = asyncio.Event()
        self._resume.set()
        self._queued = 0
        self._queued_bytes = 0
        self._pressed = False

    async def start(self, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        client = Watched(self.url, self.headers, sse=self.sse, auth=self.auth, sign_in=self.sign_in)
        try:
            if not self.sse:  # the SDK's SSE transport enters the client itself
                await self._stack.enter_async_context(client)
            read, write = await self._stack.enter_async_context(self._transport(client))
        except Exception as exc:
            await self._stack.aclose()
            host = urlsplit(self.url).hostname or ""
            cause = client.cause or f"cannot reach {shown(self.url)}: {failure_cause(exc, host)}"
            raise UpstreamError(cause) from None
        client.on_cause = on_gone  # from now on, what makes the server unusable ends it
        outbox, pending = anyio.create_memory_object_stream[bytes](sys.maxsize)
        self._outbox = outbox
        self._stack.callback(pending.close)  # runs after the pumps stopped
        group = await self._stack.enter_async_context(anyio.create_task_group())
        group.start_soon(self._read, read, on_line, on_gone)
        group.start_soon(self._write, pending, write)
        self._stack.callback(group.cancel_scope.cancel)  # runs first: stop the pumps, then the transport

    def _transport(self, client: Watched) -> Any:
        if not self.sse:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.url, http_client=client)
        from mcp.client.sse import sse_client

        def given(headers: Any = None, timeout: Any = None, auth: Any = None) -> Watched:
            return client  # its own headers and bounds, whatever the SDK's defaults

        return sse_client(self.url, sse_read_timeout=READ_TIMEOUT, httpx_client_factory=given)

    def send(self, line: bytes) -> None:
        if self._outbox is None:
            return
        self._outbox.send_nowait(line)
        self._queued += 1
        self._queued_bytes += len(line)
        if self._queued >= OUTBOX and not self._pressed:
            self._pressed = True
            self.on_pressure(True)

    @property
    def buffered(self) -> int:
        return self._queued_bytes

    def pause(self, paused: bool) -> None:
        if paused:
            self._resume.clear()
        else:
            self._resume.set()

    async def _read(self, read: Any, on_line: LineSink, on_gone: Callable[[str], None]) -> None:
        from mcp.shared.message import SessionMessage

        async for item in read:
            if isinstance(item, Exception):
                on_gone(f"the upstream at {shown(self.url)} failed: {item}")
                return
            await self._resume.wait()
            message = cast(SessionMessage, item).message
            line = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            version = jsonrpc.field(getattr(message, "result", None), "protocolVersion")
            if isinstance(version, str):
                self._legacy_version = version  # the 2025 handshake's answer: later requests carry it
            on_line(line)
        on_gone(f"the upstream at {shown(self.url)} closed the connection")

    async def _write(self, pending: MemoryObjectReceiveStream[bytes], write: Any) -> None:
        from mcp.shared.message import ClientMessageMetadata, SessionMessage
        from mcp_types import jsonrpc_message_adapter

        async for line in pending:
            self._queued -= 1
            self._queued_bytes -= len(line)
            if self._pressed and self._queued < OUTBOX // 2:
                self._pressed = False
                self.on_pressure(False)
            try:
                raw = jsonrpc.parse(line)
                message = jsonrpc_message_adapter.validate_python(raw)
            except ValueError:
                continue  # the core checked it: nothing it forwards fails here
            metadata = ClientMessageMetadata(headers=self._headers(raw))
            await write.send(SessionMessage(message, metadata=metadata))

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        from mcp.shared.inbound import (
            MCP_METHOD_HEADER,
            MCP_NAME_HEADER,
            MCP_PROTOCOL_VERSION_HEADER,
            NAME_BEARING_METHODS,
            encode_header_value,
        )

        from lazymcp.protocol.bridge import PROTOCOL_VERSION_KEY

        method = message.get("method")
        meta = jsonrpc.params_meta(message)
        traceparent = meta.get("traceparent")
        headers: dict[str, str] = {}
        if isinstance(traceparent, str) and jsonrpc.TRACEPARENT.fullmatch(traceparent):  # the W3C header too
            headers["traceparent"] = traceparent
        version = meta.get(PROTOCOL_VERSION_KEY)
        if isinstance(version, str):
            headers[MCP_PROTOCOL_VERSION_HEADER] = version
            if isinstance(method, str):
                headers[MCP_METHOD_HEADER] = method
                name = jsonrpc.field(message.get("params"), NAME_BEARING_METHODS.get(method, ""))
                if isinstance(name, str):
                    headers[MCP_NAME_HEADER] = encode_header_value(name)
            return headers
        if self._legacy_version is not None and method != "initialize":
            headers[MCP_PROTOCOL_VERSION_HEADER] = self._legacy_version
        return headers

    async def stop(self) -> None:
        if self._outbox is not None:
            self._outbox.close()
        self._resume.set()
        await self._stack.aclose()
