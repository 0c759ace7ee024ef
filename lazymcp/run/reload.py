"""Changes without restarts (``lazymcp gateway --http``): the configuration, the token file and the principals'
secrets file are read again on SIGHUP, and whenever one of them changes (each is looked at every
``WATCH_EVERY`` seconds: its modification time, size and a hash of its content).

- The token file: a token added works at once; a principal that lost a token (removed, or changed) has its
  sessions ended (their next request gets 401, or 404 with its other token), and its server processes stop
  as its sessions leave them.
- The principals' secrets file: a principal whose values changed has its sessions ended, so that its
  servers start again with the new values.
- The configuration: every session is changed in place (``lazymcp.gateway.reconfigure``): a server whose
  entry is new is added, one whose entry is gone or changed is stopped once it has answered its calls in
  flight (a changed one starts again, from its new entry, at its next call), the others run on; the policy's
  new grant applies at once (a principal's 2026-07-28 requests keep their session, and its servers, under
  the new grant); a session whose listing changed is sent ``notifications/tools/list_changed``.
  New sessions are built from the new configuration.

A file that does not load (unreadable, malformed, a policy naming what is not there, two tools of one name)
changes nothing: the last good state is kept, and one line on stderr says why. Each instance of a cluster
(``--redis``) watches its own files: they only need the same files.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from lazymcp.access.bearer import TokenAccess
from lazymcp.access.files import read_secrets, read_tokens
from lazymcp.access.policy import ANONYMOUS, Grant, Principal
from lazymcp.access.secrets import PrincipalSecrets
from lazymcp.gateway.front import Gateway
from lazymcp.gateway.reading import read_config
from lazymcp.gateway.reconfigure import reconfigure, regrant, settle
from lazymcp.local.files import read_private
from lazymcp.protocol.errors import ConfigError
from lazymcp.run.http_grants import refiled
from lazymcp.run.notices import LOGGER, plural, say

if TYPE_CHECKING:
    from lazymcp.access.ratelimit import Limiter
    from lazymcp.core.actions import Action, Core
    from lazymcp.core.entries import ServerEntry
    from lazymcp.gateway.merged import Seed
    from lazymcp.run.gateway_build import Launch
    from lazymcp.run.http_front import HttpFront
    from lazymcp.run.manifests import ManifestStore
    from lazymcp.run.shared_servers import SharedServers

WATCH_EVERY = 1.0
"""Seconds between two looks at the watched files."""
MAX_WATCHED = 16 * 1024 * 1024
"""Bytes of a watched file that are hashed (a configuration is far smaller)."""


@dataclass(frozen=True, slots=True)
class Files:
    """The files a gateway was started from, read again when they change."""

    config: str
    project: str | None = None
    tokens: str | None = None
    """``--token-file``; None: the token came from the environment (or there is none), not watched."""
    secrets: str | None = None
    """``--principal-secrets``; None: none."""


Fingerprint = tuple[int, int, str] | None
"""A watched file's modification time, size and content hash; None while it cannot be read."""


def fingerprint(path: str) -> Fingerprint:
    """What tells a file's change: its modification time, its size and a hash of its content; None while it
    cannot be read, or is no regular file of at most ``MAX_WATCHED`` bytes (a FIFO put in its place is never
    opened to wait for a writer)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    content = read_private(Path(path), MAX_WATCHED)
    if content is None:
        return None
    return found.st_mtime_ns, found.st_size, hashlib.sha256(content).hexdigest()


class Cores:
    """How the HTTP front builds each session's core, from the configuration in force: for the principal
    that opens it, with the grant its opening request earned (the one lookup of the policy that request
    makes, ``grant``), over one catalog for each grant while its manifests last; with no principal, a core
    of the grant's (None: every tool), which nothing starts (the status)."""

    def __init__(self, launch: Launch, store: ManifestStore, seed: Seed | None, limiter: Limiter | None) -> None:
        self.launch = launch
        self.store = store
        self.limiter = limiter
        self.seeds: dict[Grant | None, Seed | None] = {None: seed}

    def grant(self, principal: Principal | None) -> Grant | None:
        """What the policy in force grants ``principal`` (None: no policy, every tool); each lookup is one
        line at the debug level."""
        policy = self.launch.config.access
        if policy is None:
            return None
        who = principal or ANONYMOUS
        found = policy.grant(who)
        if LOGGER.isEnabledFor(logging.DEBUG):
            granted = f"allow {', '.join(found.allow)}" + (f"; deny {', '.join(found.deny)}" if found.deny else "")
            say(
                "gateway", f"the policy grants {who.describe()}: {granted if found.allow else 'nothing'}", logging.DEBUG
            )
        return found

    def __call__(self, principal: Principal | None, grant: object) -> Gateway:
        """A session's core, for ``principal`` and the ``grant`` its opening request earned; with no
        principal, the core of ``grant`` (``Grant``, or None: every tool)."""
        from lazymcp.run.gateway_build import build_gateway

        grant = cast("Grant | None", grant)
        seed = self.seeds.get(grant)
        core = build_gateway(
            self.launch, self.store, seed, grant, principal=principal or ANONYMOUS, limiter=self.limiter
        )
        self.seeds[grant] = core.seed
        return core

    def regrant(self, core: Core, grant: object) -> Callable[[float], list[Action]] | None:
        """The step that serves a session's gateway with ``grant`` (None: not a gateway's core)."""
        if not isinstance(core, Gateway):
            return None
        granted = cast("Grant | None", grant)
        return lambda now: regrant(core, granted, now)

    def take(self, launch: Launch) -> None:
        """Build from ``launch`` from now on (its catalogs anew)."""
        self.launch = launch
        self.seeds = {}


class Reloader:
    """Reads the gateway's files again on SIGHUP and when they change, and applies what changed."""

    def __init__(
        self,
        files: Files,
        cores: Cores,
        front: HttpFront,
        servers: SharedServers,
        check: Callable[[Launch], None],
    ) -> None:
        self.files = files
        self.cores = cores
        self.front = front
        self.servers = servers
        self.check = check
        """Raises ``ConfigError`` when a configuration cannot be served (names colliding, a policy naming
        what is not there)."""
        self.seen = {path: fingerprint(path) for path in self._paths()}
        self._task: asyncio.Task[None] | None = None
        self.reloads = 0
        """How many times the files were read again (for the tests and the operator)."""

    def _paths(self) -> list[str]:
        return [path for path in (self.files.config, self.files.tokens, self.files.secrets) if path is not None]

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, self.reload)
        self._task = loop.create_task(self._watch())

    async def stop(self) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_signal_handler(signal.SIGHUP)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _watch(self) -> None:
        while True:  # until the front stops
            await asyncio.sleep(WATCH_EVERY)
            for side in self.front.sides():  # servers to stop once their calls were answered
                core = side.driver.core
                if isinstance(core, Gateway) and core.servers.retiring:
                    side.driver.apply(lambda now, core=core: settle(core, now))
            found = {path: fingerprint(path) for path in self._paths()}
            changed = {path: seen for path, seen in found.items() if seen != self.seen.get(path)}
            if changed:
                self.reload(changed)

    def reload(self, changed: Mapping[str, Fingerprint] | None = None) -> None:
        """Read the files again (``changed``: only these, as just found; None: all, as on SIGHUP) and apply
        them."""
        self.reloads += 1
        if changed is None:
            changed = {path: fingerprint(path) for path in self._paths()}
        self.seen.update(changed)
        paths = list(changed)
        try:
            if self.files.tokens in paths:
                self._tokens(self.files.tokens)
            if self.files.secrets in paths:
                self._secrets(self.files.secrets)
            if self.files.config in paths:
                self._config()
        except Exception as exc:  # a bug must cost this reload, never the gateway
            say("gateway", f"internal error reading the files again: {exc!r}")

    def _tokens(self, path: str) -> None:
        access = self.front.access
        if not isinstance(access, TokenAccess):
            return
        try:
            tokens, warning = read_tokens(path)
            lost = access.replace(tokens)
        except ConfigError as exc:
            say("gateway", f"{exc.message}; keeping the tokens in force")
            return
        if warning is not None:
            say("gateway", warning)
        ended = self.front.end(_named(lost), "its principal's token was removed or changed") if lost else 0
        say(
            "gateway",
            f"the token file was read again: {len(tokens)} tokens, {plural(ended, 'session')} ended",
            logging.INFO,
        )

    def _secrets(self, path: str) -> None:
        try:
            secrets = read_secrets(path)
        except ConfigError as exc:
            say("gateway", f"{exc.message}; keeping the values in force")
            return
        before = self.servers.secrets or PrincipalSecrets()
        self.servers.secrets = secrets
        changed = {name for name in {*secrets.blocks, *before.blocks} if before.of(name) != secrets.of(name)}
        ended = self.front.end(_described(changed), "its principal's values changed") if changed else 0
        say("gateway", f"the principals' secrets were read again: {plural(ended, 'session')} ended", logging.INFO)

    def _config(self) -> None:
        launch = self.cores.launch
        try:
            config = read_config(self.files.config, project=self.files.project)
            renewed = replace(launch, config=config)
            self.check(renewed)
        except ConfigError as exc:
            say("gateway", f"{exc.message}; keeping the configuration in force")
            return
        if config.warnings:
            say("gateway", "; ".join(config.warnings))
        self.cores.take(renewed)
        old = {entry.name: entry for entry in launch.config.enabled}
        new = config.enabled
        touched = [entry for entry in new if old.get(entry.name) != entry]
        from lazymcp.run.gateway_build import usable_manifest

        manifests = {entry.name: usable_manifest(self.cores.store, entry, config.separator) for entry in touched}
        for side in self.front.sides():
            core = side.driver.core
            if not isinstance(core, Gateway):
                continue
            principal = side.principal if isinstance(side.principal, Principal) else None
            grant = side.grant = self.cores.grant(principal)
            side.driver.apply(lambda now, core=core, grant=grant: reconfigure(core, new, grant, manifests, now))
        refiled(self.front.moderns)  # a principal's next 2026 request finds its session under its new grant
        said = _summary(old, new, policy_changed=launch.config.access != config.access)
        say("gateway", f"{config.source} was read again: {said}", logging.INFO)


def _named(names: set[str]) -> Callable[[object], bool]:
    return lambda principal: isinstance(principal, Principal) and principal.name in names


def _described(names: set[str]) -> Callable[[object], bool]:
    return lambda principal: isinstance(principal, Principal) and principal.describe() in names


def _summary(old: Mapping[str, ServerEntry], new: Sequence[ServerEntry], *, policy_changed: bool) -> str:
    """The servers a configuration read again added, changed and removed, and whether its access policy
    changed, in words."""
    names = {entry.name for entry in new}
    found = {
        "added": [entry.name for entry in new if entry.name not in old],
        "changed": [entry.name for entry in new if entry.name in old and old[entry.name] != entry],
        "removed": [name for name in old if name not in names],
    }
    said = [f"{word} {', '.join(servers)}" for word, servers in found.items() if servers]
    said += ["the access policy changed"] if policy_changed else []
    return "; ".join(said) or "no server changed"
