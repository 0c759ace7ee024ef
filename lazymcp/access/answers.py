"""Answers from an authorization server, read no further than a bound: the one place that holds them to it.

An issuer's metadata and introspection, a token exchange, the SDK's discovery, registration, token and
refresh requests, a revocation, and another instance's sign-in page are all read here, at most
``ISSUER_ANSWER`` bytes each. An answer whose ``Content-Length`` says more is refused before a byte of its
body is read; one without it is refused at the first chunk past the bound. Either way ``AnswerTooLong``,
naming the host that answered.

``read_bounded`` (and ``read_bounded_sync``) read a streamed response's body; ``bound_answer`` holds one
someone else reads (an ``httpx2`` response hook, or ``BoundedAnswers`` around the SDK's OAuth client). Both
count what the body decodes to, each chunk before the reader decodes it: 64 KiB of gzip that would
decode to gigabytes stops at the bound, having never been decoded past it. The requests ask for
``ENCODINGS`` only, and an answer in another encoding (which could not be counted) is refused.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
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


ENCODINGS = "gzip, deflate"
"""What a request whose answer is held to a bound accepts (``Accept-Encoding``): what can be counted."""


class _Decoded:
    """Counts the bytes a body in its ``Content-Encoding`` decodes to, holding at most ``limit`` of them:
    ``AnswerTooLong`` past the limit, before the reader's own decoder has decoded the chunk that passed it."""

    def __init__(self, response: httpx2.Response, limit: int) -> None:
        self.response, self.limit, self.seen = response, limit, 0
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            host = response.request.url.host
            raise AnswerTooLong(f"the authorization server at {host} answered in {encoding!r}, not {ENCODINGS}")
        self.inflate = zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding not in ("", "identity") else None
        """gzip, or deflate with zlib's header (raw deflate is tried once that fails); None: counted as is."""
        self.raw = encoding == "deflate"

    def count(self, chunk: bytes) -> None:
        while chunk and self.seen <= self.limit:
            if self.inflate is None:
                self.seen += len(chunk)
                break
            try:
                self.seen += len(self.inflate.decompress(chunk, self.limit + 1 - self.seen))
            except zlib.error:
                # deflate without its header, as some servers send it; else not decodable: the reader's own
                # decoder says so, and the bytes are counted as they came meanwhile
                raw, self.raw = self.raw and not self.seen, False
                self.inflate = zlib.decompressobj(-zlib.MAX_WBITS) if raw else None
                continue
            chunk = self.inflate.unconsumed_tail
        if self.seen > self.limit:
            raise _too_long(self.response, self.limit)


class _Bounded(httpx2.AsyncByteStream):
    """A response's body as it comes, that stops with ``AnswerTooLong`` once it decodes past ``limit``."""

    def __init__(self, response: httpx2.Response, limit: int) -> None:
        self.stream, self.decoded = cast(httpx2.AsyncByteStream, response.stream), _Decoded(response, limit)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream:
            self.decoded.count(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


class _BoundedSync(httpx2.SyncByteStream):
    """``_Bounded`` for a blocking client, read in about ``timeout`` seconds in all (``TimeoutError``)."""

    def __init__(self, response: httpx2.Response, limit: int, timeout: float) -> None:
        self.stream, self.decoded = cast(httpx2.SyncByteStream, response.stream), _Decoded(response, limit)
        self.timeout, self.deadline = timeout, time.monotonic() + timeout

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.stream:
            self.decoded.count(chunk)
            if time.monotonic() > self.deadline:
                raise TimeoutError(f"the answer took longer than {self.timeout:g}s")
            yield chunk

    def close(self) -> None:
        self.stream.close()


async def read_bounded(response: httpx2.Response, limit: int = ISSUER_ANSWER) -> bytes:
    """The decoded body of ``response`` (opened with ``stream``), or ``AnswerTooLong`` once it passes
    ``limit``."""
    _refuse_by_length(response, limit)
    response.stream = _Bounded(response, limit)
    return b"".join([chunk async for chunk in response.aiter_bytes()])


def read_bounded_sync(response: httpx2.Response, timeout: float, limit: int = ISSUER_ANSWER) -> bytes:
    """``read_bounded`` for a blocking client, in about ``timeout`` seconds in all (``TimeoutError`` past
    them; each read is bounded by the client's own timeout too)."""
    _refuse_by_length(response, limit)
    response.stream = _BoundedSync(response, limit, timeout)
    return b"".join(response.iter_bytes())


async def bound_answer(response: httpx2.Response) -> None:
    """Hold ``response``'s body to ``ISSUER_ANSWER`` bytes, for whoever reads it: at once when its length
    says more, else as it arrives (``AnswerTooLong``). Also an ``httpx2`` response event hook."""
    try:
        _refuse_by_length(response, ISSUER_ANSWER)
        response.stream = _Bounded(response, ISSUER_ANSWER)
    except AnswerTooLong:
        await response.aclose()
        raise


Review = Callable[[httpx2.Request, httpx2.Response], Awaitable[httpx2.Response]]
"""Looks at the answer to one of the OAuth client's own requests, and gives it the answer it is to read."""


class BoundedAnswers(httpx2.Auth):
    """The SDK's OAuth client (``inner``) with every answer to its own requests (discovery, registration,
    token, refresh) bounded by ``ISSUER_ANSWER``, then shown to ``review`` (if any) before the client reads
    it; the request it signs, and its answer, are left alone."""

    def __init__(self, inner: httpx2.Auth, review: Review | None = None) -> None:
        self.inner = inner
        self.review = review

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.inner.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    outgoing.headers["accept-encoding"] = ENCODINGS
                response = yield outgoing
                if outgoing is not request:
                    await bound_answer(response)
                    if self.review is not None:
                        response = await self.review(outgoing, response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
