"""What gateway instances sharing one Redis (``--redis``) tell each other of their servers' lists: every
manifest an instance writes (a server listed its tools, or changed them, or said its prompts or resources
changed) is kept in Redis and announced on one pub/sub channel; every other instance writes it to its own
manifest store and gives the new tools to each of its sessions, and the prompt or resource change too
(their lists there go stale, and the next listing asks the server again); the sessions announce
``list_changed`` to their clients and ``subscriptions/listen`` streams. A new instance starts from the
manifests in Redis (``warm``): warm, without starting a server.

- ``lazymcp:manifest:<key>``: a manifest's bytes, as ``ManifestStore`` writes them (checked again when
  read); ``<key>`` is the store's key of the server (a hash of how it is started).
- ``lazymcp:lists``: the channel; each message names the instance, the key, and the server's
  ``notifications/prompts/list_changed`` or ``.../resources/list_changed`` that made it be written
  (``changed``; only those two are taken). A message of ``sign_in`` instead tells of a principal's sign-in
  done or forgotten on its instance, sealed (``lazymcp.run.people_redis``): it is handed to ``on_sign_in``.

A manifest is sent only when its bytes changed, and a manifest received is never sent again (the
sessions take its tools without saving them), so instances do not echo each other. Changes of one
server's prompts or resources are sent at most once per ``CHANGE_EVERY``: those that come sooner wait,
gathered, for the end of that interval.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import orjson

from lazymcp.protocol.messages import Tool
from lazymcp.run.manifests import ManifestStore, manifest_key
from lazymcp.run.redis_link import REDIS_ERRORS, connect, where

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from lazymcp.core.entries import ServerEntry

CHANNEL = "lazymcp:lists"
MANIFEST_PREFIX = "lazymcp:manifest:"
MANIFEST_TTL = 30 * 24 * 3600
"""Seconds a manifest stays in Redis without being written again."""
WAIT = 2.0
"""Seconds one write to Redis takes at most."""
LISTEN_WAIT = 1.0
"""Seconds one wait for a message on the channel lasts (then the next, or a reconnection)."""

Tell = Callable[[str, Sequence[Tool]], None]
"""Give every session of this instance a server's new tools (by the server's name)."""
TellChanged = Callable[[str, str], None]
"""Tell every session of this instance that a server's prompts or resources changed (its name, the
notification)."""
CHANGE_EVERY = 1.0
"""Seconds between two messages naming changes of one server: one that announces changes in a loop costs
each instance a message a second, and its last change still reaches them."""
CHANGES = frozenset({"notifications/prompts/list_changed", "notifications/resources/list_changed"})
"""The notifications a message may name in ``changed``."""


def _digest(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def _fetched(blob: bytes) -> float:
    try:
        fetched: Any = json.loads(blob).get("fetched")
    except (ValueError, AttributeError, RecursionError):
        return -1.0
    return float(fetched) if isinstance(fetched, int | float) and not isinstance(fetched, bool) else -1.0


class SharedLists:
    """This instance's manifests, sent to and taken from its peers."""

    def __init__(self, instance: str, entries: Sequence[ServerEntry]) -> None:
        self.instance = instance
        self.servers = {manifest_key(entry.identity()): entry for entry in entries}
        """The servers of the configuration, by manifest key: only theirs are taken."""
        self.store: ManifestStore | None = None
        self.redis: Redis | None = None
        self._known: dict[str, str] = {}
        """Each manifest's digest, as last sent or taken: the same bytes are neither sent nor taken again."""
        self._sending: set[asyncio.Task[None]] = set()
        self._last_change: dict[str, float] = {}
        """When a change of each server's prompts or resources was last sent (the loop's time)."""
        self._owed: dict[str, tuple[bytes, set[str]]] = {}
        """A server's manifest and changes held until ``CHANGE_EVERY`` has passed since the last sent."""
        self.on_error: Callable[[BaseException], None] = lambda _exc: None
        self.errors: tuple[type[BaseException], ...] = (OSError,)
        self.on_sign_in: Callable[[str], None] = lambda sealed: None
        """Told of each sign-in change another instance announces (``tell_sign_in``), as it was sealed."""

    async def tell_sign_in(self, sealed: str) -> bool:
        """Announce a sign-in change (sealed by ``lazymcp.run.people_redis``) to the other instances; whether
        Redis took it (within ``WAIT``)."""
        if self.redis is None:
            return False
        note = orjson.dumps({"instance": self.instance, "sign_in": sealed})
        try:
            await asyncio.wait_for(self.redis.publish(CHANNEL, note), WAIT)  # pyright: ignore[reportUnknownMemberType]
        except self.errors as exc:
            self.on_error(exc)
            return False
        return True

    def saved(self, key: str, blob: bytes, changed: Sequence[str] = ()) -> None:
        """The store wrote a manifest (``ManifestStore.on_saved``): sent on when its bytes are new, or it
        was written for a change of the server's prompts or resources (``changed``)."""
        digest = _digest(blob)
        changed = [notification for notification in changed if notification in CHANGES]
        if key not in self.servers or self.redis is None or (self._known.get(key) == digest and not changed):
            return
        self._known[key] = digest
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: a refresh outside the gateway's
            return
        owed = self._owed.get(key)
        if owed is not None:  # a change is owed: this manifest goes with it
            self._owed[key] = (blob, owed[1] | set(changed))
            return
        last = self._last_change.get(key)
        if changed and last is not None and loop.time() - last < CHANGE_EVERY:
            self._owed[key] = (blob, set(changed))
            loop.call_at(last + CHANGE_EVERY, self._pay, key)
            return
        if changed:
            self._last_change[key] = loop.time()
        self._start(key, blob, changed)

    def _pay(self, key: str) -> None:
        owed = self._owed.pop(key, None)
        if owed is not None:
            self._last_change[key] = asyncio.get_running_loop().time()
            self._start(key, owed[0], sorted(owed[1]))

    def _start(self, key: str, blob: bytes, changed: Sequence[str]) -> None:
        task = asyncio.get_running_loop().create_task(self._send(key, blob, changed))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def sending(self) -> list[asyncio.Task[None]]:
        """The manifests being sent now, those owed sent first."""
        for key in list(self._owed):
            self._pay(key)
        return list(self._sending)

    async def _send(self, key: str, blob: bytes, changed: Sequence[str] = ()) -> None:
        assert self.redis is not None
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.set(MANIFEST_PREFIX + key, blob, ex=MANIFEST_TTL)
                note = orjson.dumps({"instance": self.instance, "key": key, "changed": list(changed)})
                pipe.publish(CHANNEL, note)  # pyright: ignore[reportUnknownMemberType]
                await asyncio.wait_for(pipe.execute(), 2.0)
        except self.errors as exc:
            self._known.pop(key, None)  # sent again at its next save
            self.on_error(exc)

    async def listen(self, tell: Tell, tell_changed: TellChanged) -> None:
        """Take the manifests and changes other instances announce, until cancelled (reconnecting while
        Redis is away)."""
        assert self.redis is not None
        while True:
            pubsub = self.redis.pubsub()  # pyright: ignore[reportUnknownMemberType]
            try:
                await asyncio.wait_for(pubsub.subscribe(CHANNEL), 2.0)  # pyright: ignore[reportUnknownMemberType]
                while True:
                    message: Any = await pubsub.get_message(ignore_subscribe_messages=True, timeout=LISTEN_WAIT)  # pyright: ignore[reportUnknownVariableType]
                    if isinstance(message, dict):
                        data = cast(dict[str, object], message).get("data")
                        await self._announced(data, tell, tell_changed)
            except self.errors as exc:
                self.on_error(exc)
            finally:
                try:
                    await asyncio.wait_for(pubsub.aclose(), 1.0)
                except (TimeoutError, *self.errors):
                    pass
            await asyncio.sleep(LISTEN_WAIT)

    async def _announced(self, data: object, tell: Tell, tell_changed: TellChanged) -> None:
        try:
            note: Any = orjson.loads(data) if isinstance(data, bytes | str) else None
        except orjson.JSONDecodeError:
            return
        if not isinstance(note, dict):
            return
        note = cast(dict[str, object], note)
        if note.get("instance") == self.instance:
            return
        sign_in = note.get("sign_in")
        if isinstance(sign_in, str):
            self.on_sign_in(sign_in)
            return
        key = note.get("key")
        entry = self.servers.get(key) if isinstance(key, str) else None
        if entry is None or self.store is None or self.redis is None:
            return
        said = note.get("changed")
        changed = [n for n in cast(list[object], said) if n in CHANGES] if isinstance(said, list) else []
        blob: Any = await asyncio.wait_for(self.redis.get(MANIFEST_PREFIX + entry_key(entry)), 2.0)
        if isinstance(blob, bytes) and self._known.get(entry_key(entry)) != _digest(blob):
            self._known[entry_key(entry)] = _digest(blob)
            self.store.put(entry.identity(), blob)
            manifest = self.store.load(entry.identity())
            if manifest is not None:
                tell(entry.name, manifest.tools)
        for notification in dict.fromkeys(cast(list[str], changed)):
            tell_changed(entry.name, notification)


def entry_key(entry: ServerEntry) -> str:
    return manifest_key(entry.identity())


async def warm(redis: Redis, store: ManifestStore, entries: Sequence[ServerEntry]) -> int:
    """Write to ``store`` each manifest in Redis newer than its own (one round trip); how many.

    Raises:
        redis.exceptions.RedisError, OSError, asyncio.TimeoutError: Redis cannot be reached.
    """
    if not entries:
        return 0
    keys = [MANIFEST_PREFIX + entry_key(entry) for entry in entries]
    found: list[Any] = await asyncio.wait_for(redis.mget(keys), 5.0)
    written = 0
    for entry, blob in zip(entries, found, strict=True):
        if not isinstance(blob, bytes):
            continue
        local = store.load(entry.identity())
        if local is None or local.fetched < _fetched(blob):
            store.put(entry.identity(), blob)
            written += 1
    return written


def warm_start(url: str, store: ManifestStore, entries: Sequence[ServerEntry]) -> int | None:
    """Before the gateway starts: ``warm`` from the Redis at ``url``, on a client of its own; None (and
    nothing written) when Redis cannot be reached, the instance then starting from its own store."""

    async def fetch() -> int:
        redis = connect(url)
        try:
            return await warm(redis, store, entries)
        finally:
            await redis.aclose()

    try:
        return asyncio.run(fetch())
    except REDIS_ERRORS:
        return None


class Refreshed:
    """``lazymcp gateway --refresh --redis URL``: the manifests the refresh writes, sent to Redis and
    announced to the running instances (which take them as any instance's), on a client of its own."""

    def __init__(self, url: str, entries: Sequence[ServerEntry]) -> None:
        self.url = url
        self.lists = SharedLists("refresh", entries)
        self.lists.redis, self.lists.errors = connect(url), REDIS_ERRORS
        self.failure: BaseException | None = None
        self.lists.on_error = self._failed

    def _failed(self, exc: BaseException) -> None:
        self.failure = self.failure or exc

    async def sent(self) -> bool:
        """Once every manifest is sent (each bounded): whether Redis took them all; one line if not."""
        from lazymcp.run.notices import say

        await asyncio.gather(*self.lists.sending(), return_exceptions=True)
        assert self.lists.redis is not None
        try:
            await asyncio.wait_for(self.lists.redis.aclose(), 1.0)
        except (TimeoutError, *self.lists.errors):
            pass
        if self.failure is None:
            return True
        why = str(self.failure) or type(self.failure).__name__
        say("gateway", f"Redis at {where(self.url)} did not take the manifests ({why}): they are kept here only")
        return False
