"""Answers from an authorization server, read no further than a bound: the one place that holds them to it.

An issuer's metadata and introspection, a token exchange, the SDK's discovery, registration, token and
refresh requests, a revocation, and another instance's sign-in page are all read here, at most
``ISSUER_ANSWER`` bytes each. An answer whose ``Content-Length`` says more is refused before a byte of its
body is read; one without it is refused at the first chunk past the bound. Either way ``AnswerTooLong``,
naming the host that answered.

``read_bounded`` (and ``read_bounded_sync``) read a streamed response's body, counted as decoded.
``bound_answer`` is for a response someone else reads (an ``httpx2`` response hook, or ``BoundedAnswers``
around the SDK's OAuth client): its body is counted as it arrives on the wire.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import cast

import httpx2

from lazymcp.protocol.limits import ISSUER_ANSWER


class AnswerTooLong(Exception):
    """An answer went past its bound; the message names the host that gave it."""


def _too_long(response: httpx2.Response, limit: int) -> AnswerTooLong:
    return AnswerTooLong(f"the authorization server at {response.request.url.host} answered over {limit} bytes")


def _refuse_by_length(response: httpx2.Response, limit: int) -> None:
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise _too_long(response, limit)


def _take(body: bytearray, chunk: bytes, response: httpx2.Response, limit: int) -> None:
    body += chunk
    if len(body) > limit:
        raise _too_long(response, limit)


async def read_bounded(response: httpx2.Response, limit: int = ISSUER_ANSWER) -> bytes:
    """The body of ``response`` (opened with ``stream``), or ``AnswerTooLong`` once it passes ``limit``."""
    _refuse_by_length(response, limit)
    body = bytearray()
    async for chunk in response.aiter_bytes():
        _take(body, chunk, response, limit)
    return bytes(body)


def read_bounded_sync(response: httpx2.Response, timeout: float, limit: int = ISSUER_ANSWER) -> bytes:
    """``read_bounded`` for a blocking client, in about ``timeout`` seconds in all (``TimeoutError`` past
    them; each read is bounded by the client's own timeout too)."""
    _refuse_by_length(response, limit)
    deadline = time.monotonic() + timeout
    body = bytearray()
    for chunk in response.iter_bytes():
        _take(body, chunk, response, limit)
        if time.monotonic() > deadline:
            raise TimeoutError(f"the answer took longer than {timeout:g}s")
    return bytes(body)


class _Bounded(httpx2.AsyncByteStream):
    """A response's body that stops with ``AnswerTooLong`` once past ``ISSUER_ANSWER`` bytes."""

    def __init__(self, stream: httpx2.AsyncByteStream, response: httpx2.Response) -> None:
        self.stream, self.response = stream, response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.stream:
            seen += len(chunk)
            if seen > ISSUER_ANSWER:
                raise _too_long(self.response, ISSUER_ANSWER)
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


async def bound_answer(response: httpx2.Response) -> None:
    """Hold ``response``'s body to ``ISSUER_ANSWER`` bytes, for whoever reads it: at once when its length
    says more, else as it arrives (``AnswerTooLong``). Also an ``httpx2`` response event hook."""
    try:
        _refuse_by_length(response, ISSUER_ANSWER)
    except AnswerTooLong:
        await response.aclose()
        raise
    response.stream = _Bounded(cast(httpx2.AsyncByteStream, response.stream), response)


class BoundedAnswers(httpx2.Auth):
    """The SDK's OAuth client (``inner``) with every answer to its own requests (discovery, registration,
    token, refresh) bounded by ``ISSUER_ANSWER``; the request it signs, and its answer, are left alone."""

    def __init__(self, inner: httpx2.Auth) -> None:
        self.inner = inner

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.inner.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is not request:
                    await bound_answer(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
