"""Each principal's sign-ins on a team's HTTP gateway, sealed with the gateway's key (``--secrets-key-file``),
and the tickets that let a browser sign a principal in.

The key file holds at least ``KEY_MIN`` characters of a secret (``head -c 32 /dev/urandom | base64``), of
mode 0600; the key that seals is derived from it (SHA-256), so any such text will do. ``Sealer`` seals and
opens with it (Fernet: AES-128-CBC and HMAC-SHA256, from the ``cryptography`` package: the ``team-sign-in``
extra). ``SealedFile`` keeps every principal's sign-ins in one file, sealed whole: without the key, nothing
in it can be read, not even whose sign-ins it holds.

A ticket (``ticket``, ``read_ticket``) is a sealed ``[principal, server, nonce]`` made at a time: it is
valid ``TICKET_LIFE`` seconds, for that principal and that server only; that it is used once is kept by
its reader (``lazymcp.run.people``). Nothing here puts a value in an error or a log line.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import stat
import time
from pathlib import Path
from typing import Any, cast

from lazymcp.access.tokens import WholeFile
from lazymcp.local.extras import install_hint
from lazymcp.local.files import read_private, write_private
from lazymcp.protocol.errors import ConfigError

KEY_MIN = 32
"""Characters of secret the key file holds at least."""
KEY_LIMIT = 4096
"""Bytes of the key file read at most."""
TICKET_LIFE = 600.0
"""Seconds a ticket (a sign-in link) is valid."""
FILE_NAME = "sign-ins.sealed"
"""The file of every principal's sign-ins, in lazymcp's configuration directory."""
FILE_LIMIT = 64 * 1024 * 1024
"""Bytes of that file read at most."""
EXTRA = "team-sign-in"
FLAGS = (
    (
        "--public-url",
        "URL",
        "with --http: the gateway's URL as browsers reach it, e.g. https://mcp.example.com; each principal signs in"
        " to the remote servers that ask for it there, through a link a call's error gives (docs/sign-in.md)",
    ),
    (
        "--secrets-key-file",
        "FILE",
        "with --public-url: the key (at least 32 characters, mode 0600) that seals each principal's sign-ins",
    ),
)
"""The gateway's flags of each principal's sign-ins (``lazymcp.run.people``): flag, value, help."""


class Sealer:
    """Seals and opens values with the gateway's key."""

    def __init__(self, secret: bytes) -> None:
        try:
            from cryptography.fernet import Fernet
        except ImportError:
            raise ConfigError(f"--secrets-key-file needs the cryptography package: {install_hint(EXTRA)}") from None
        derived = hashlib.sha256(b"lazymcp sign-ins\0" + secret).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, data: bytes, at: float | None = None) -> bytes:
        """``data`` sealed (at time ``at``: now by default)."""
        return self._fernet.encrypt_at_time(data, int(time.time() if at is None else at))

    def open(self, sealed: bytes, ttl: float | None = None) -> bytes | None:
        """What ``sealed`` holds; None when it was not sealed with this key, was changed, or (``ttl``) was
        sealed over ``ttl`` seconds ago."""
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(sealed, None if ttl is None else int(ttl))
        except (InvalidToken, ValueError, TypeError):
            return None


def read_key(path: str) -> Sealer:
    """The sealer of the key in file ``path``.

    Raises:
        ConfigError: the file cannot be read, others may read it (it must be mode 0600), it holds fewer than
            ``KEY_MIN`` characters, or the ``cryptography`` package is not installed.
    """
    try:  # without blocking on a FIFO, nor reading a device or a large file whole
        with open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK)) as file:
            mode = os.fstat(file.fileno()).st_mode
            secret = file.read(KEY_LIMIT + 1).strip() if stat.S_ISREG(mode) else b""
    except OSError as exc:
        raise ConfigError(f"cannot read the secrets key file {path!r}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode) or len(secret) > KEY_LIMIT:
        raise ConfigError(f"the secrets key file {path!r} is not a file of at most {KEY_LIMIT} bytes")
    if mode & 0o077:
        shown = oct(stat.S_IMODE(mode))[2:]
        raise ConfigError(f"the secrets key file {path!r} can be read by others (mode {shown}): chmod 600 it")
    if len(secret) < KEY_MIN:
        raise ConfigError(
            f"the secrets key file {path!r} holds fewer than {KEY_MIN} characters: make one with"
            " `head -c 32 /dev/urandom | base64`"
        )
    return Sealer(secret)


def ticket(sealer: Sealer, principal: str, server: str, at: float | None = None) -> str:
    """A ticket for ``principal`` to sign in to ``server``, made at ``at`` (now by default)."""
    nonce = secrets.token_urlsafe(12)
    return sealer.seal(json.dumps(["ticket", principal, server, nonce]).encode(), at).decode()


def read_ticket(sealer: Sealer, text: str, server: str) -> tuple[str, str] | None:
    """The principal and nonce of ticket ``text`` for ``server``; None when it is not one of this key, is
    past its ``TICKET_LIFE``, or is for another server."""
    opened = sealer.open(text.encode(), TICKET_LIFE) if text.isascii() else None
    try:
        value: object = json.loads(opened) if opened is not None else None
    except ValueError:
        return None
    if not isinstance(value, list) or len(cast(list[object], value)) != 4:
        return None
    kind, principal, named, nonce = cast(list[object], value)
    if kind != "ticket" or named != server or not isinstance(principal, str) or not isinstance(nonce, str):
        return None
    return principal, nonce


class SealedFile(WholeFile):
    """Every principal's sign-ins in one sealed file (``FILE_NAME``), kept in memory once read: this process
    is the file's one writer, which ``check`` makes sure of (a lock beside it, held for the process's life)."""

    def __init__(self, sealer: Sealer, path: Path) -> None:
        self.sealer = sealer
        self.path = path
        self._every: dict[str, dict[str, Any]] | None = None
        self._lock: int | None = None

    @property
    def where(self) -> str:
        return str(self.path)

    async def load(self, key: str) -> None:
        """Nothing to fetch: the file is read once, on first use."""

    async def settled(self) -> None:
        """Nothing to wait for: each change is written as it is made."""

    def check(self) -> None:
        """Take the file for this process and read it now (at the start), rather than at the first sign-in's
        use: a second gateway keeping its sign-ins in the same file would write over the first's.

        Raises:
            ConfigError: another process has the file, or it cannot be read, or was sealed with another key.
        """
        import fcntl

        if self._lock is None:
            lock = self.path.with_name(self.path.name + ".lock")
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            except OSError as exc:
                raise ConfigError(f"cannot lock the sign-ins in {str(self.path)!r}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(descriptor)
                raise ConfigError(
                    f"the sign-ins in {str(self.path)!r} are kept by another gateway already: give this one its"
                    " own XDG_CONFIG_HOME, or share the sign-ins through --redis"
                ) from None
            self._lock = descriptor
        self._read()

    def get(self, key: str) -> dict[str, Any] | None:
        return self._read().get(key)

    def _read(self) -> dict[str, dict[str, Any]]:
        if self._every is not None:
            return self._every
        raw = read_private(self.path, FILE_LIMIT) if self.path.exists() else b""
        if raw is None:
            raise ConfigError(f"cannot read the sign-ins in {str(self.path)!r}: not a regular file of its own")
        opened = self.sealer.open(raw) if raw else b"{}"
        if opened is None:
            raise ConfigError(
                f"the sign-ins in {str(self.path)!r} were sealed with another key: give that --secrets-key-file,"
                " or remove the file (every principal then signs in again)"
            )
        value: object = json.loads(opened)
        self._every = cast(dict[str, dict[str, Any]], value) if isinstance(value, dict) else {}
        return self._every

    def _write(self, every: dict[str, dict[str, Any]]) -> None:
        try:
            write_private(self.path, self.sealer.seal(json.dumps(every).encode()), durable=True)
        except OSError as exc:
            raise ConfigError(f"cannot keep the sign-ins in {str(self.path)!r}: {exc.strerror or exc}") from None


def sealed_file(sealer: Sealer, directory: Path) -> SealedFile:
    """The sealed sign-ins of ``directory`` (lazymcp's configuration directory)."""
    return SealedFile(sealer, directory / FILE_NAME)
