"""Several ``lazymcp gateway --http`` instances behind one load balancer (``--redis URL``): which
instance owns each 2025-11-25 session, kept in Redis, and the request of a session that reaches
another instance sent on to its owner (``lazymcp.run.forward``).

- Each instance has an id of its own (new at each start) and the address its peers reach it at
  (``--advertise URL``). Every ``HEARTBEAT`` seconds it writes, in one round trip, each session it
  owns: ``lazymcp:session:<id>`` -> its id, its address and a hash of the session's principal, each
  living ``SESSION_TTL`` seconds. An instance that dies stops writing, and its sessions are gone from
  Redis within ``SESSION_TTL`` seconds; an ended session goes the same way, and until then its owner
  answers 404 for it. A session is also written the moment it opens, since its next request may
  reach any instance.
- A request naming a session this instance does not hold, that is not 2026-07-28 and was not
  forwarded already, is looked up (each owner found is kept, up to ``KNOWN_OWNERS``); one of another
  principal gets 404 here, before it leaves, and the owner checks the token again. A record that is not
  one an instance writes (``read_record``) is ignored, with one line a session, as if there were none.
- Redis unreachable (``LOST_AFTER`` calls failed in a row; each is bounded by ``REDIS_WAIT``, never
  retried: ``lazymcp.run.redis_link``): the instance serves the sessions it owns, opens new ones, says
  ``degraded`` on ``/readyz``, and logs one line when Redis is lost and one when it is back; its next
  heartbeat then writes every session it owns again, those opened meanwhile too.
- Rate limits are counted in each instance and reconciled through Redis in the background
  (``lazymcp.run.cluster_rates``); Redis unreachable, each instance counts alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import urlsplit
from uuid import uuid4

import orjson
from starlette.requests import Request
from starlette.responses import Response

from lazymcp.protocol.limits import Limits
from lazymcp.protocol.messages import Tool
from lazymcp.run import observe
from lazymcp.run.cluster_lists import SharedLists
from lazymcp.run.cluster_rates import SharedCounter
from lazymcp.run.forward import FORWARDED_HEADER, Forwarder, Owner
from lazymcp.run.http_checks import SESSION_HEADER, principal_of, speaks_modern
from lazymcp.run.notices import say
from lazymcp.run.redis_link import REDIS_ERRORS, REDIS_WAIT, connect, stop_loops, where, wrong_type

if TYPE_CHECKING:
    from lazymcp.core.entries import ServerEntry
    from lazymcp.run.driver import Driver

HEARTBEAT = 1.0
"""Seconds between two writes of the sessions an instance owns."""
SESSION_TTL = 5
"""Seconds a session's record outlives its owner's last heartbeat."""
LOST_AFTER = 2
"""Calls to Redis failed in a row before it counts as lost: one slow answer on a busy machine is not."""
KNOWN_OWNERS = 16_384
"""Sessions whose owner is remembered here, so that only a session's first forwarded request asks Redis."""
PREFIX = "lazymcp:session:"


class Owned(Protocol):
    """A session as the front holds it: who opened it."""

    principal: object


def principal_hash(principal: object) -> str:
    """What a record keeps of a session's principal: a hash of what its equality compares (a dataclass's
    compared fields, sets sorted), the same in every instance for two principals that compare equal."""
    if is_dataclass(principal) and not isinstance(principal, type):
        parts = [_canonical(getattr(principal, f.name)) for f in fields(principal) if f.compare]
    else:
        parts = [repr(principal)]
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()[:32]


def read_record(raw: object) -> Owner | str:
    """A session's record as an instance writes it (``[instance, address, principal hash]``, the address an
    http(s) URL with a host and a port it can be reached at), or why it is not one."""
    try:
        instance, address, principal = orjson.loads(cast(bytes, raw))
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return "not a JSON array of three"
    if not isinstance(instance, str) or not isinstance(address, str) or not isinstance(principal, str):
        return "its instance, address and principal are not all strings"
    try:
        parts = urlsplit(address)
        _ = parts.port  # a port that is not a number, or out of range, raises
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        usable = False
    if not usable or any(c.isspace() or not c.isprintable() for c in address):
        return f"its address {address[:100]!r} is not an http(s) URL"
    return Owner(instance, address, principal)


def _canonical(value: object) -> object:
    if isinstance(value, frozenset | set):
        return sorted(repr(item) for item in cast(frozenset[object], value))
    return value if value is None or isinstance(value, str | int | float | bool) else repr(value)


class Cluster:
    """This instance among its peers: the sessions it owns written to Redis, others' found there."""

    def __init__(self, url: str, advertise: str, entries: Sequence[ServerEntry] = ()) -> None:
        self.url = url
        self.advertise = advertise.rstrip("/")
        self.id = uuid4().hex
        self.redis = connect(url, self._server)
        self.up = True
        """Whether Redis answered the last call (``/readyz`` says ``degraded`` otherwise)."""
        self.written = True
        """Whether this instance's sessions are in the Redis it reaches now: not from the moment a restarted
        Redis is seen until a heartbeat wrote them all there (``/readyz`` says ``degraded`` meanwhile)."""
        self._run_id: str | None = None
        self._wake = asyncio.Event()
        self.forwarder = Forwarder(self.id)
        self._sessions: Mapping[str, Owned] = {}
        self._owners: OrderedDict[str, Owner] = OrderedDict()
        self._malformed: OrderedDict[str, None] = OrderedDict()
        """Sessions whose record in Redis was not one an instance writes, each said once."""
        self._beating: asyncio.Task[None] | None = None
        self._listening: asyncio.Task[None] | None = None
        self._failures = 0
        self.lists = SharedLists(self.id, entries)
        """The servers' manifests, shared with the other instances."""
        self.lists.redis, self.lists.errors, self.lists.on_error = self.redis, REDIS_ERRORS, self._lost
        self.rates = SharedCounter()
        """The rate limits' counts, shared with the other instances (``lazymcp.run.cluster_rates``)."""
        self.rates.redis, self.rates.errors, self.rates.wait = self.redis, REDIS_ERRORS, REDIS_WAIT * 2
        self.rates.on_error = self._lost  # only a heartbeat, which writes the sessions, says Redis is back
        self._syncing: asyncio.Task[None] | None = None

    def _errors(self) -> tuple[type[BaseException], ...]:
        return REDIS_ERRORS

    def _lost(self, exc: BaseException) -> None:
        self._failures += 1
        if self.up and self._failures >= LOST_AFTER:
            self.up = False
            say(
                "gateway",
                f"Redis lost at {where(self.url)}: {str(exc) or type(exc).__name__}; serving this instance's sessions",
            )

    def _server(self, run_id: str) -> None:
        """A new connection reached the Redis of ``run_id``: one restarted since (empty) has none of this
        instance's sessions until the next heartbeat, which is woken now."""
        known, self._run_id = self._run_id, run_id or self._run_id
        if known is None or not run_id or run_id == known:
            return
        self.written = False
        self._wake.set()
        say("gateway", f"Redis restarted at {where(self.url)}: writing this instance's sessions again", logging.INFO)

    def _back(self) -> None:
        self._failures = 0
        self.written = True
        if not self.up:
            self.up = True
            say("gateway", f"Redis back at {where(self.url)}: this instance's sessions are routed again", logging.INFO)

    async def start(self, sessions: Mapping[str, Owned], drivers: Callable[[], Iterable[Driver]]) -> None:
        """Begin the heartbeat over ``sessions`` (the front's own table, read at each beat), and take the
        lists other instances announce to the sessions ``drivers`` gives."""
        from lazymcp.gateway.front import Gateway

        def tell(server: str, tools: Sequence[Tool]) -> None:
            for driver in drivers():
                core = driver.core
                if isinstance(core, Gateway):
                    driver.apply(lambda now, core=core: core.learned(server, tools, now))

        def tell_changed(server: str, notification: str) -> None:
            for driver in drivers():
                core = driver.core
                if isinstance(core, Gateway):
                    driver.apply(lambda _now, core=core: core.changed_elsewhere(server, notification))

        self._sessions = sessions
        await self._beat()
        self._beating = asyncio.ensure_future(self._beat_forever())
        self._listening = asyncio.ensure_future(self.lists.listen(tell, tell_changed))
        self._syncing = asyncio.ensure_future(self.rates.sync_forever())

    async def aclose(self) -> None:
        await stop_loops((self._beating, self._listening, self._syncing))
        await self.forwarder.aclose()
        try:
            await asyncio.wait_for(self.redis.aclose(), REDIS_WAIT)
        except (*self._errors(), asyncio.CancelledError):
            pass

    def trouble(self) -> str | None:
        """Why ``/readyz`` says ``degraded`` (None: it need not)."""
        if not self.up:
            return "redis unreachable: serving this instance's sessions only"
        return None if self.written else "redis restarted: this instance's sessions are being written again"

    def _record(self, side: Owned) -> bytes:
        return orjson.dumps([self.id, self.advertise, principal_hash(side.principal)])

    async def _beat(self) -> None:
        """Write every session this instance owns, in one round trip."""
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for session_id, side in list(self._sessions.items()):
                    pipe.set(PREFIX + session_id, self._record(side), ex=SESSION_TTL)
                if len(pipe) == 0:
                    pipe.ping()  # pyright: ignore[reportUnknownMemberType]
                await asyncio.wait_for(pipe.execute(), REDIS_WAIT * 2)
        except self._errors() as exc:
            self._lost(exc)
        else:
            self._back()

    async def _beat_forever(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), HEARTBEAT)
            except TimeoutError:
                pass
            self._wake.clear()
            await self._beat()

    async def opened(self, session_id: str, principal: object) -> None:
        """A session opened here: written now, so that its next request may reach any instance."""
        if not self.up:
            return  # the next heartbeat that reaches Redis writes it
        record = orjson.dumps([self.id, self.advertise, principal_hash(principal)])
        try:
            await asyncio.wait_for(self.redis.set(PREFIX + session_id, record, ex=SESSION_TTL), REDIS_WAIT * 2)
        except self._errors() as exc:
            self._lost(exc)

    async def owner_of(self, session_id: str) -> Owner | None:
        """The instance that owns ``session_id`` (None: none Redis knows of, or Redis is out of reach)."""
        known = self._owners.get(session_id)
        if known is not None:
            self._owners.move_to_end(session_id)
            return known
        if not self.up or len(session_id) > 128:
            return None
        try:
            raw: Any = await asyncio.wait_for(self.redis.get(PREFIX + session_id), REDIS_WAIT * 2)
        except self._errors() as exc:
            if wrong_type(exc):  # a Redis that answers, holding something else under the key
                self._ignore(session_id, "it is not a string")
            else:
                self._lost(exc)
            return None
        if raw is None:
            return None
        owner = read_record(raw)
        if isinstance(owner, str):  # not one an instance wrote: ignored, said once a session
            self._ignore(session_id, owner)
            return None
        if owner.instance != self.id:
            self._owners[session_id] = owner
            if len(self._owners) > KNOWN_OWNERS:
                self._owners.popitem(last=False)
        return owner

    def _ignore(self, session_id: str, why: str) -> None:
        """A session's record that is not one an instance writes: as if there were none, said once."""
        if session_id not in self._malformed:
            self._malformed[session_id] = None
            if len(self._malformed) > KNOWN_OWNERS:
                self._malformed.popitem(last=False)
            say("gateway", f"ignoring the record of session {session_id[:8]}... in Redis: {why}")

    async def _still_owned(self, session_id: str) -> bool:
        """Whether the session's owner still writes it (Redis out of reach: no news of a death, so yes)."""
        try:
            return bool(await asyncio.wait_for(self.redis.exists(PREFIX + session_id), REDIS_WAIT * 2))
        except REDIS_ERRORS:
            return True

    async def forward(self, request: Request, sessions: Mapping[str, Owned], limits: Limits) -> Response | None:
        """The owner's answer to a request for a 2025-11-25 session another instance owns; None when this
        instance answers it (no session named, its own session, a 2026-07-28 request, one forwarded
        already, a session nobody owns)."""
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id or session_id in sessions or FORWARDED_HEADER in request.headers:
            return None
        if speaks_modern(request):
            return None
        owner = await self.owner_of(session_id)
        if owner is None or owner.instance == self.id:
            return None
        if owner.principal != principal_hash(principal_of(request)):  # another principal's: as if there were none
            return None
        observe.handed_on()
        answer = await self.forwarder.forward(request, owner, limits, lambda: self._still_owned(session_id))
        if answer.status_code == 404:  # the owner is gone, or the session ended: ask Redis next time
            self._owners.pop(session_id, None)
        return answer
