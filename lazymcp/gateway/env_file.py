"""A server entry's ``envFile``, read as VS Code and Cursor read it: a dotenv file of ``KEY=VALUE`` lines.

- Blank lines and lines starting with ``#`` are skipped; so is any other line that is not ``KEY=VALUE``
  (``KEY`` of letters, digits, ``_``, ``.`` and ``-``, not starting with a digit), as VS Code skips it.
- ``export KEY=VALUE`` is read as ``KEY=VALUE``. Spaces around the key and the value are dropped.
- A value in double quotes loses them, and ``\\n`` in it becomes a line break; one in single quotes loses
  them and is taken as it is. An unquoted value is taken as it is, ``#`` included.
- A later line wins over an earlier one; the entry's own ``env`` wins over the file.

A relative path is taken from the configuration's workspace folder (``${workspaceFolder}``). A file that
is missing, unreadable, not UTF-8 or past ``MAX_ENV_FILE`` bytes is a one-line error naming the
configuration, the server and the path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from lazymcp.protocol.errors import ConfigError

MAX_ENV_FILE: Final = 1024 * 1024
"""Bytes of one ``envFile`` at most."""
_LINE = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.\-]*)\s*=(.*)")


def parse_env_file(text: str) -> dict[str, str]:
    """The variables of a dotenv file's text."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        matched = _LINE.fullmatch(line)
        if matched is None:
            continue
        key, value = matched.group(1), matched.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1].replace("\\n", "\n")
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        found[key] = value
    return found


def read_env_file(path: str, workspace: str, where: str) -> dict[str, str]:
    """The variables of the file at ``path`` (relative: to ``workspace``).

    Raises:
        ConfigError: it cannot be read (``where`` names the configuration and the server).
    """
    file = Path(workspace, path).expanduser()
    try:
        with file.open("rb") as stream:
            raw = stream.read(MAX_ENV_FILE + 1)
    except OSError as exc:
        raise ConfigError(f"{where}: field 'envFile' {str(file)!r}: {exc.strerror or exc}") from None
    if len(raw) > MAX_ENV_FILE:
        raise ConfigError(f"{where}: field 'envFile' {str(file)!r}: larger than {MAX_ENV_FILE} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: field 'envFile' {str(file)!r}: not UTF-8 text") from None
    return parse_env_file(text)
