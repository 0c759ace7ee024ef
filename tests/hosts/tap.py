"""A stdio MCP server behind a tap: ``python tap.py LOG -- COMMAND...`` runs COMMAND and appends every line
the host writes to it, and every line it answers, to LOG (one JSON object a line: ``{"to": ..., "line": ...}``),
so that the tests read what the server received exactly as it arrived. The host sees the server unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import IO


def pump(source: IO[bytes], sink: IO[bytes], log: IO[str], direction: str, lock: threading.Lock) -> None:
    for line in iter(source.readline, b""):
        with lock:
            log.write(json.dumps({"to": direction, "line": line.decode(errors="replace").rstrip("\n")}) + "\n")
            log.flush()
        try:
            sink.write(line)
            sink.flush()
        except (BrokenPipeError, ValueError):
            return
    try:
        sink.close()
    except (BrokenPipeError, ValueError):
        pass


def main() -> int:
    log_path, separator, *command = sys.argv[1:]
    if separator != "--" or not command:
        sys.stderr.write("usage: tap.py LOG -- COMMAND [ARGS...]\n")
        return 2
    lock = threading.Lock()
    with open(log_path, "a") as log:
        with lock:
            log.write(json.dumps({"to": "env", "line": json.dumps(dict(os.environ))}) + "\n")
        server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert server.stdin is not None and server.stdout is not None
        inbound = threading.Thread(target=pump, args=(sys.stdin.buffer, server.stdin, log, "server", lock), daemon=True)
        inbound.start()
        pump(server.stdout, sys.stdout.buffer, log, "host", lock)
        return server.wait()


if __name__ == "__main__":
    sys.exit(main())
