"""Each principal's sign-ins shared by the instances of one Redis (``--redis``, ``lazymcp.run.people``): every
instance uses the tokens any of them got, a ticket is used once across them all, and the authorization
server's redirect may come back to any of them.

- ``SealedRedis``: the sign-ins in one Redis hash (``SIGN_INS``), each under a hash of its key (no principal
  or server named in Redis) and sealed with the key (``lazymcp.access.sealed``); fetched as they are when a
  connection starts (``load``), written as they change, each write awaited before a sign-in is said done.
- ``UsedInRedis``: a used ticket is noted once with ``SET NX`` for as long as it would be valid.
- ``Callbacks``: the instance a sign-in is under way on is noted under a hash of its ``state``; a callback
  that comes to another instance is sent on to it (``FORWARDED_HEADER`` keeps it from going further).

Every call to Redis is bounded (``lazymcp.run.redis_link``); Redis out of reach refuses a ticket (it
cannot be told unused) and leaves a connection without the sign-in (it asks for one again).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING, Any, cast

import httpx2
from starlette.requests import Request
from starlette.responses import Response

from lazymcp.access.sealed import TICKET_LIFE, Sealer
from lazymcp.run.forward import FORWARDED_HEADER
from lazymcp.run.notices import say
from lazymcp.run.people_flow import FINISH_WAIT
from lazymcp.run.redis_link import REDIS_ERRORS, REDIS_WAIT

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from lazymcp.run.people import People

SIGN_INS = "lazymcp:sign-ins"
USED = "lazymcp:ticket-used:"
STATE = "lazymcp:sign-in-state:"
WAIT = REDIS_WAIT * 2


def _hashed(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class SealedRedis:
    """Every principal's sign-ins in Redis, sealed; what this instance last fetched or wrote, in memory."""

    def __init__(self, sealer: Sealer, redis: Redis) -> None:
        self.sealer = sealer
        self.redis = redis
        self._known: dict[str, dict[str, Any]] = {}
        self._writes: set[asyncio.Task[None]] = set()

    async def load(self, key: str) -> None:
        try:
            raw: object = await asyncio.wait_for(self.redis.hget(SIGN_INS, _hashed(key)), WAIT)  # pyright: ignore[reportUnknownMemberType]
        except REDIS_ERRORS:
            say("gateway", "the sign-ins in Redis are out of reach: a principal may be asked to sign in again")
            return
        opened = self.sealer.open(raw) if isinstance(raw, bytes) else None
        value: object = json.loads(opened) if opened is not None else None
        if isinstance(value, dict):
            self._known[key] = cast(dict[str, Any], value)
        else:
            self._known.pop(key, None)

    def get(self, key: str) -> dict[str, Any] | None:
        return self._known.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._known[key] = value
        self._later(self.redis.hset(SIGN_INS, _hashed(key), self.sealer.seal(json.dumps(value).encode())))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]

    def drop(self, key: str) -> bool:
        self._later(self.redis.hdel(SIGN_INS, _hashed(key)))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        return self._known.pop(key, None) is not None

    def _later(self, call: Any) -> None:
        async def written() -> None:
            try:
                await asyncio.wait_for(call, WAIT)
            except REDIS_ERRORS:
                say("gateway", "a sign-in could not be written to Redis: the other instances do not have it")

        task = asyncio.get_running_loop().create_task(written())
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def settled(self) -> None:
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)


class UsedInRedis:
    """The tickets used on any instance."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    async def first(self, nonce: str) -> bool:
        try:
            noted = await asyncio.wait_for(
                self.redis.set(USED + _hashed(nonce), b"1", nx=True, ex=int(TICKET_LIFE) + 60),  # pyright: ignore[reportUnknownMemberType]
                WAIT,
            )
        except REDIS_ERRORS:
            return False
        return bool(noted)


class Callbacks:
    """Which instance each sign-in under way is on, so that its callback reaches it."""

    def __init__(self, redis: Redis, advertise: str) -> None:
        self.redis = redis
        self.advertise = advertise.rstrip("/")

    async def note(self, state: str) -> None:
        try:
            await asyncio.wait_for(
                self.redis.set(STATE + _hashed(state), self.advertise.encode(), ex=int(TICKET_LIFE)),  # pyright: ignore[reportUnknownMemberType]
                WAIT,
            )
        except REDIS_ERRORS:
            pass  # its callback is answered only if it comes back here

    async def forward(self, request: Request) -> Response | None:
        """The answer of the instance a callback's sign-in is under way on; None when it is none other."""
        state = request.query_params.get("state", "")
        if not state or FORWARDED_HEADER in request.headers:
            return None
        try:
            owner: object = await asyncio.wait_for(self.redis.get(STATE + _hashed(state)), WAIT)  # pyright: ignore[reportUnknownMemberType]
        except REDIS_ERRORS:
            return None
        if not isinstance(owner, bytes) or owner.decode() == self.advertise:
            return None
        headers = {"host": request.headers.get("host", ""), "cookie": request.headers.get("cookie", "")}
        headers[FORWARDED_HEADER] = "callback"
        url = f"{owner.decode()}{request.url.path}?{request.url.query}"
        try:
            async with httpx2.AsyncClient(timeout=FINISH_WAIT + 10, trust_env=False) as client:
                answer = await client.get(url, headers=headers)
        except httpx2.HTTPError:
            return None
        kept = {k: v for k, v in answer.headers.items() if k in ("content-type", "cache-control", "referrer-policy")}
        return Response(answer.content, status_code=answer.status_code, headers=kept)


def share(people: People, redis: Redis, advertise: str) -> None:
    """``people``'s sign-ins, tickets and callbacks, shared through ``redis`` with the other instances."""
    people.store = SealedRedis(people.sealer, redis)
    people.used = UsedInRedis(redis)
    people.callbacks = Callbacks(redis, advertise)
