"""What a server process says of itself, and why it did not start.

A gateway server's own stderr is passed on to the gateway's with each line prefixed by the server's name
(``[github] ...``, ``Labelled``), so that several servers' lines, and the gateway's own, can be told
apart. A line longer than ``MAX_LINE`` bytes is passed on in pieces of that size. A process that cannot
start is reported naming what is missing (``not_started``): its working directory, or its program.
"""

from __future__ import annotations

import os
import sys

MAX_LINE = 16 * 1024
"""Bytes of one stderr line held while its end has not come; past it, what is held goes out as a line."""


class Labelled:
    """Takes a server's stderr as it comes (``b""``: it ended) and writes it line by line, labelled."""

    def __init__(self, name: str) -> None:
        self.prefix = f"[{name}] ".encode(errors="replace")
        self._held = b""

    def __call__(self, data: bytes) -> None:
        if not data:  # the pipe closed: what is held is the last line
            if self._held:
                self._write([self._held])
            self._held = b""
            return
        lines = (self._held + data).split(b"\n")
        self._held = lines.pop()
        while len(self._held) > MAX_LINE:
            lines.append(self._held[:MAX_LINE])
            self._held = self._held[MAX_LINE:]
        if lines:
            self._write(lines)

    def _write(self, lines: list[bytes]) -> None:
        out = b"".join(self.prefix + line.rstrip(b"\r") + b"\n" for line in lines)
        try:
            sys.stderr.flush()
            sys.stderr.buffer.write(out)
            sys.stderr.buffer.flush()
        except (OSError, ValueError, AttributeError):  # stderr closed, or not a real file: the lines are lost
            pass


def not_started(program: str, cwd: str | None, exc: OSError) -> str:
    """Why the process of ``program`` did not start, naming what is missing: its working directory (which
    the error then names, or which is not a directory), else the program."""
    missing = cwd is not None and (exc.filename == cwd or not os.path.isdir(cwd))
    what = f"its working directory {cwd!r}: " if missing else ""
    return f"cannot start the upstream server {program!r}: {what}{exc.strerror or exc}"
