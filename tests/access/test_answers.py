"""An authorization server's answers are held to their bound as they decode, not as they arrive: a real
HTTP server (uvicorn) sends small compressed bodies that decode past 64 KiB, and real ``httpx2`` clients
read them through each of ``lazymcp.access.answers``'s doors."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lazymcp.access.answers import (
    ENCODINGS,
    AnswerTooLong,
    BoundedAnswers,
    bound_answer,
    read_bounded,
    read_bounded_sync,
)
from lazymcp.protocol.limits import ISSUER_ANSWER

from ..conftest import free_port, serving

DOCUMENT = json.dumps({"issuer": "http://127.0.0.1", "scopes": ["a" * 20] * 200}).encode()
"""An honest answer, about 5 KB decoded."""
BOMB = b'{"resource": "' + b"x" * (16 << 20)
"""16 MiB decoded; about 16 KB as gzip, under the bound on the wire."""


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


BODIES = {
    "gzip": gzip.compress(DOCUMENT),
    "deflate": zlib.compress(DOCUMENT),
    "raw-deflate": _raw_deflate(DOCUMENT),
    "gzip-bomb": gzip.compress(BOMB, 9),
    "deflate-bomb": zlib.compress(BOMB, 9),
    "raw-deflate-bomb": _raw_deflate(BOMB),
}


@asynccontextmanager
async def issuer() -> AsyncGenerator[tuple[str, list[str]]]:
    """A server answering ``/<kind>`` with ``BODIES[kind]`` in its encoding (``/br``: 10 bytes said to be
    brotli); also the ``Accept-Encoding`` of every request it got."""
    asked: list[str] = []

    async def answer(request: Request) -> Response:
        asked.append(request.headers.get("accept-encoding", ""))
        kind = request.path_params["kind"]
        if kind == "br":
            return Response(b"0123456789", headers={"content-encoding": "br"}, media_type="application/json")
        encoding = kind.removeprefix("raw-").removesuffix("-bomb")
        return Response(BODIES[kind], headers={"content-encoding": encoding}, media_type="application/json")

    app = Starlette(routes=[Route("/{kind}", answer, methods=["GET", "POST"])])
    async with serving(app, free_port()) as url:
        yield url.removesuffix("/mcp"), asked


async def _read(url: str) -> bytes:
    async with httpx2.AsyncClient(timeout=30) as client, client.stream("GET", url) as response:
        return await read_bounded(response)


def _read_sync(url: str) -> bytes:
    with httpx2.Client(timeout=30) as client, client.stream("GET", url) as response:
        return read_bounded_sync(response, 30)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["gzip", "deflate", "raw-deflate"])
async def test_an_honest_compressed_answer_reads_as_it_decodes_through_every_door(kind: str) -> None:
    async with issuer() as (url, _):
        assert await _read(f"{url}/{kind}") == DOCUMENT
        assert await anyio.to_thread.run_sync(_read_sync, f"{url}/{kind}") == DOCUMENT
        async with httpx2.AsyncClient(timeout=30, event_hooks={"response": [bound_answer]}) as client:
            assert (await client.get(f"{url}/{kind}")).content == DOCUMENT


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["gzip-bomb", "deflate-bomb", "raw-deflate-bomb"])
async def test_a_small_answer_that_decodes_past_the_bound_stops_there_never_decoded_whole(kind: str) -> None:
    """Each door raises ``AnswerTooLong`` naming the host, and holds well under a megabyte meanwhile (the
    16 MiB body is never decoded in one piece)."""
    async with issuer() as (url, _):
        assert len(BODIES[kind]) < ISSUER_ANSWER  # what the wire alone would let through
        tracemalloc.start()
        try:
            with pytest.raises(AnswerTooLong, match=f"127.0.0.1 answered over {ISSUER_ANSWER} bytes"):
                await _read(f"{url}/{kind}")
            with pytest.raises(AnswerTooLong, match=f"answered over {ISSUER_ANSWER} bytes"):
                await anyio.to_thread.run_sync(_read_sync, f"{url}/{kind}")
            async with httpx2.AsyncClient(timeout=30, event_hooks={"response": [bound_answer]}) as client:
                with pytest.raises(AnswerTooLong, match=f"answered over {ISSUER_ANSWER} bytes"):
                    await client.get(f"{url}/{kind}")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 4 << 20, peak


@pytest.mark.anyio
async def test_an_answer_in_an_encoding_not_asked_for_is_refused_in_one_line() -> None:
    async with issuer() as (url, _):
        with pytest.raises(AnswerTooLong, match=r"127.0.0.1 answered in 'br', not gzip, deflate"):
            await _read(f"{url}/br")
        async with httpx2.AsyncClient(timeout=30, event_hooks={"response": [bound_answer]}) as client:
            with pytest.raises(AnswerTooLong, match="answered in 'br'"):
                await client.get(f"{url}/br")


class _Discovers(httpx2.Auth):
    """An OAuth client's flow in small: one request of its own (discovery), then the request it signs."""

    def __init__(self, discovery: str) -> None:
        self.discovery = discovery

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        found = yield httpx2.Request("GET", self.discovery)
        await found.aread()
        request.headers["authorization"] = "Bearer x"
        yield request


@pytest.mark.anyio
@pytest.mark.parametrize("discovered", ["gzip", "gzip-bomb"])
async def test_the_sdk_flows_own_requests_ask_for_what_can_be_counted_and_are_held_to_the_bound(
    discovered: str,
) -> None:
    """Through ``BoundedAnswers``, the flow's own request asks for ``gzip, deflate`` only and its answer is
    bounded as it decodes; the request it signs keeps the client's own ``Accept-Encoding``."""
    async with issuer() as (url, asked):
        auth = BoundedAnswers(_Discovers(f"{url}/{discovered}"))
        headers = {"accept-encoding": "gzip, deflate, zstd"}
        async with httpx2.AsyncClient(timeout=30, auth=auth, headers=headers) as client:
            if discovered == "gzip-bomb":
                with pytest.raises(AnswerTooLong, match=f"answered over {ISSUER_ANSWER} bytes"):
                    await client.get(f"{url}/gzip")
                assert asked == [ENCODINGS]
            else:
                assert (await client.get(f"{url}/gzip")).content == DOCUMENT
                assert asked == [ENCODINGS, "gzip, deflate, zstd"]
