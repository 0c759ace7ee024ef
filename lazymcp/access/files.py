"""The files access is read from: the token file (``--token-file``) and the principals' secrets file
(``--principal-secrets``). Read at start and again whenever they change (``lazymcp.run.reload``): one
reading, one set of errors, for both."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lazymcp.access.policy import read_token_file
from lazymcp.access.secrets import PrincipalSecrets
from lazymcp.protocol.errors import ConfigError


def read_tokens(path: str) -> tuple[list[tuple[str, str]], str | None]:
    """The (name, token) pairs of the token file, and a warning when others can read it (as ssh does
    with a key); None: no warning.

    Raises:
        ConfigError: the file cannot be read, is empty, or a line is malformed.
    """
    try:
        text = Path(path).read_text()
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ConfigError(f"cannot read the token file {path!r}: {exc.strerror or exc}") from None
    warning = None
    if mode & 0o077:
        shown = oct(stat.S_IMODE(mode))[2:]
        warning = f"warning: the token file {path!r} can be read by others (mode {shown}); chmod 600 it"
    if not text.strip():
        raise ConfigError(f"the token file {path!r} is empty")
    return read_token_file(text, f"the token file {path!r}"), warning


def read_secrets(path: str) -> PrincipalSecrets:
    """The principals' secrets file.

    Raises:
        ConfigError: it cannot be read, others may read it (it must be mode 0600), or a line is malformed.
    """
    try:
        mode = os.stat(path).st_mode
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read the principals' secrets file {path!r}: {exc.strerror or exc}") from None
    if mode & 0o077:
        shown = oct(stat.S_IMODE(mode))[2:]
        raise ConfigError(f"the principals' secrets file {path!r} can be read by others (mode {shown}): chmod 600 it")
    return PrincipalSecrets.parse(text, f"the principals' secrets file {path!r}")
