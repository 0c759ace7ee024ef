"""Each principal's sign-ins shared by the instances of one Redis (``--redis``, ``lazymcp.run.people``): every
instance uses the tokens any of them got, a ticket is used once across them all, and the authorization
server's redirect may come back to any of them.

- ``SealedRedis``: the sign-ins in one Redis hash (``SIGN_INS``), each under a hash of its key (no principal
  or server named in Redis) and sealed with the key (``lazymcp.access.sealed``); fetched as they are when a
  connection starts (``load``), written as they change, each write awaited before a sign-in is said done.
- ``UsedInRedis``: a used ticket is noted once with ``SET NX`` for as long as it would be valid.
- ``Callbacks``: the instance a sign-in is under way on is noted under a hash of its ``state``; a callback
  that comes to another instance is sent on to it (``FORWARDED_HEADER`` keeps it from going further).
- ``share``: a sign-in done or forgotten on one instance is announced, sealed, on the channel the instances
  tell each other their servers' lists on (``lazymcp.run.cluster_lists``); every other instance forgets what
  it last fetched of it and ends the principal's sessions that hold the server (``People.changed``), so a
  sign-out takes effect on all of them, not at the next refusal of the old token.

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

from lazymcp.access.answers import ENCODINGS, AnswerTooLong, read_bounded
from lazymcp.access.sealed import TICKET_LIFE, Sealer
from lazymcp.protocol.limits import ISSUER_ANSWER
from lazymcp.run.forward import FORWARDED_HEADER
from lazymcp.run.notices import say
from lazymcp.run.people_flow import FINISH_WAIT, page
from lazymcp.run.redis_link import REDIS_ERRORS, REDIS_WAIT
from lazymcp.run.signin import key_of

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from lazymcp.run.cluster_lists import SharedLists
    from lazymcp.run.people import People

SIGN_INS = "lazymcp:sign-ins"
USED = "lazymcp:ticket-used:"
STATE = "lazymcp:sign-in-state:"
WAIT = REDIS_WAIT * 2
NOTE_LIFE = 60.0
"""Seconds an announced sign-in change is taken for news: an older one (replayed) is ignored."""


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

    def forget(self, key: str) -> None:
        """Forget what was last fetched under ``key`` (dropped by another instance)."""
        self._known.pop(key, None)

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
        headers["accept-encoding"] = ENCODINGS
        url = f"{owner.decode()}{request.url.path}?{request.url.query}"
        try:
            async with (
                httpx2.AsyncClient(timeout=FINISH_WAIT + 10, trust_env=False) as client,
                client.stream("GET", url, headers=headers) as answer,
            ):
                body = await read_bounded(answer)
        except httpx2.HTTPError:
            return None
        except AnswerTooLong:
            said = f"The instance this sign-in is under way on answered over {ISSUER_ANSWER // 1024} KiB."
            return page(502, said)
        kept = {k: v for k, v in answer.headers.items() if k in ("content-type", "cache-control", "referrer-policy")}
        return Response(bytes(body), status_code=answer.status_code, headers=kept)


def share(people: People, redis: Redis, advertise: str, lists: SharedLists | None = None) -> None:
    """``people``'s sign-ins, tickets and callbacks, shared through ``redis`` with the other instances; each
    sign-in done or forgotten announced on ``lists``' channel, and each one announced there taken."""
    store = people.store = SealedRedis(people.sealer, redis)
    people.used = UsedInRedis(redis)
    people.callbacks = Callbacks(redis, advertise)
    if lists is None:
        return
    sealer = people.sealer

    async def tell(principal: str, server: str, signed_in: bool) -> None:
        note = json.dumps(["sign-in", principal, server, signed_in]).encode()
        await lists.tell_sign_in(sealer.seal(note).decode())

    def heard(sealed: str) -> None:
        opened = sealer.open(sealed.encode(), NOTE_LIFE) if sealed.isascii() else None
        try:
            note: object = json.loads(opened) if opened is not None else None
        except ValueError:
            return
        if not isinstance(note, list) or len(cast(list[object], note)) != 4:
            return
        kind, principal, server, signed_in = cast(list[object], note)
        if kind != "sign-in" or not isinstance(principal, str) or not isinstance(server, str):
            return
        entry = next((e for e in people.entries() if e.name == server), None)
        if entry is None or not isinstance(signed_in, bool):
            return
        store.forget(key_of(entry, principal))  # fetched anew when a connection to the server starts
        people.changed(principal, server, signed_in)

    people.tell = tell
    lists.on_sign_in = heard
