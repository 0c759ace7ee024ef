"""Where the tokens of a sign-in to a remote server are kept: the one module that reads and writes them.

The OS keyring (the ``keyring`` package, when installed and a backend is at hand: the ``keyring`` extra),
else ``tokens.json`` of mode 0600 in lazymcp's directory of the user's configuration
(``$XDG_CONFIG_HOME/lazymcp``, by default ``~/.config/lazymcp``). ``LAZYMCP_TOKEN_STORE=file`` keeps them
in the file even where a keyring is found.

A sign-in is kept under its key: the principal (``""``: the person running lazymcp), the server's URL and
the resource it was signed in for, so that two accounts of one server stay apart. What is kept: the
tokens, when the access token expires (wall-clock seconds), the client's registration and the metadata
the sign-in found (``lazymcp.run.signin``). Nothing here
ever puts a value in an error or a log line.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from lazymcp.local.files import write_private
from lazymcp.protocol.errors import ConfigError

SERVICE = "lazymcp"
"""The keyring's service name of every sign-in."""
FILE_NAME = "tokens.json"
STORE_VARIABLE = "LAZYMCP_TOKEN_STORE"


def config_directory() -> Path:
    """lazymcp's directory of the user's configuration (XDG)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "lazymcp"


def sign_in_key(url: str, resource: str, principal: str = "") -> str:
    """The key of one sign-in: whose, to which server, for which resource."""
    return json.dumps([principal, url, resource], separators=(",", ":"))


def _keyring() -> Any | None:
    """The keyring module, when one is installed and has a usable backend (and the file is not asked for)."""
    if os.environ.get(STORE_VARIABLE, "").lower() == "file":
        return None
    try:
        keyring: Any = importlib.import_module("keyring")
        failing: Any = importlib.import_module("keyring.backends.fail").Keyring
        backend: Any = keyring.get_keyring()
    except Exception:  # not installed, or no backend it can use
        return None
    return None if isinstance(backend, failing) else keyring


class SignIns(Protocol):
    """Where sign-ins are kept: this user's (``TokenStore``), or each principal's on a team's gateway
    (``lazymcp.access.sealed``)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: dict[str, Any]) -> None: ...

    def drop(self, key: str) -> bool: ...


class WholeFile:
    """Sign-ins kept as one mapping in one file, read whole (``_read``) and written whole (``_write``), as
    the one that keeps them defines both: ``TokenStore``'s ``tokens.json``, or a team gateway's sealed file
    (``lazymcp.access.sealed``)."""

    __slots__ = ()

    def _read(self) -> dict[str, dict[str, Any]]:
        raise NotImplementedError

    def _write(self, every: dict[str, dict[str, Any]]) -> None:
        raise NotImplementedError

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Keep ``value`` under ``key``, replacing what was there."""
        every = self._read()
        every[key] = value
        self._write(every)

    def drop(self, key: str) -> bool:
        """Forget the sign-in under ``key``; False when there was none."""
        every = self._read()
        if every.pop(key, None) is None:
            return False
        self._write(every)
        return True


@dataclass(frozen=True, slots=True)
class TokenStore(WholeFile):
    """The sign-ins of this user: in the keyring, or in ``directory``'s ``tokens.json``."""

    directory: Path | None = None
    keyring: Any | None = None

    @classmethod
    def default(cls) -> TokenStore:
        return cls(config_directory(), _keyring())

    @property
    def where(self) -> str:
        """Where the sign-ins are kept, as the documentation and ``lazymcp login`` say it."""
        return "the OS keyring" if self.keyring is not None else str(self._path())

    def _path(self) -> Path:
        return (self.directory or config_directory()) / FILE_NAME

    def get(self, key: str) -> dict[str, Any] | None:
        """The sign-in kept under ``key``; None when there is none."""
        if self.keyring is not None:
            text = self.keyring.get_password(SERVICE, key)
            return _parsed(text) if text else None
        return self._read().get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Keep ``value`` under ``key``, replacing what was there."""
        if self.keyring is not None:
            self.keyring.set_password(SERVICE, key, json.dumps(value))
            return
        WholeFile.put(self, key, value)

    def drop(self, key: str) -> bool:
        """Forget the sign-in under ``key``; False when there was none."""
        if self.keyring is not None:
            if self.keyring.get_password(SERVICE, key) is None:
                return False
            self.keyring.delete_password(SERVICE, key)
            return True
        return WholeFile.drop(self, key)

    def _read(self) -> dict[str, dict[str, Any]]:
        path = self._path()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError(f"cannot read the sign-ins in {str(path)!r}: {exc.strerror or exc}") from None
        found = _parsed(text)
        if found is None:
            raise ConfigError(f"the sign-ins in {str(path)!r} are not a JSON object: remove the file to sign in anew")
        return cast(dict[str, dict[str, Any]], found)

    def _write(self, every: dict[str, dict[str, Any]]) -> None:
        """Write the whole file at once: a new file of mode 0600, moved into place."""
        path = self._path()
        try:
            write_private(path, json.dumps(every).encode(), durable=True)
        except OSError as exc:
            raise ConfigError(f"cannot keep the sign-in in {str(path)!r}: {exc.strerror or exc}") from None


def _parsed(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def state_of(kept: dict[str, Any] | None, now: float | None = None) -> str:
    """What a sign-in is now: ``signed in``, ``expired`` (its access token is past its time: a refresh
    token may still renew it) or ``sign-in needed`` (none)."""
    if not kept or not kept.get("tokens"):
        return "sign-in needed"
    expires = kept.get("expires_at")
    if isinstance(expires, int | float) and expires <= (time.time() if now is None else now):
        return "expired"
    return "signed in"
