"""What the operator sees of what the gateway does: the audit line, and the metrics.

The run layer tells this module what happened (``called``: a core's ``Called`` action, a ``tools/call``
answered; ``requested``: an HTTP front answered a request; ``server_started``, ``server_failed``), and
it passes each to every ``Watcher`` that ``watch`` added. With none watching, the cores are told not to
report calls (``watching()``), so an unwatched gateway does no work for this on its call path.

The audit line (``Audit``), on stderr when ``--log-level info`` (or ``debug``) is asked for, by the flag
or ``LAZYMCP_LOG_LEVEL`` (not by default, so a gateway that is not asked does no work for it), or in a
file of its own with ``--audit-file PATH`` (``AuditFile``, whatever the log level): one JSON object a
call, ``{"audit": "call", "time", "principal", "session", "id", "address", "client", "server", "tool",
"via", "outcome", "ms"}`` (``audit_line``), never arguments or results. The metrics are
``lazymcp.run.metrics``'s.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import BinaryIO, Protocol

import orjson

from lazymcp.core.actions import Action, Called
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import ConfigError
from lazymcp.run.notices import LOGGER


class Watcher:
    """Sees what the gateway does; each method's default ignores it."""

    def called(self, call: Called) -> None:
        """A ``tools/call`` was answered."""

    def requested(self, method: str, outcome: str) -> None:
        """An HTTP front answered a client request (``outcome``: ``ok`` or ``error``)."""

    def server_started(self, server: str) -> None:
        """A server's process or connection is being started."""

    def server_failed(self, server: str) -> None:
        """A server failed (it is stopped, and started again on a later call)."""

    def handed_on(self) -> None:
        """A request was handed to the instance that owns its session (``--redis``)."""


_WATCHERS: list[Watcher] = []


class Tracing(Protocol):
    """Sees each message crossing a session (``lazymcp.run.traces.Traces``), when traces are on."""

    def incoming(self, session: object, data: bytes | jsonrpc.Frame) -> bytes | jsonrpc.Frame:
        """A client's message, as it goes on to the core."""
        ...

    def outgoing(self, session: object, actions: list[Action]) -> list[Action]:
        """What the core decided, as it is carried out."""
        ...

    def from_server(self, session: object, server: str, line: bytes) -> None:
        """A server's line."""
        ...

    def closed(self, session: object) -> None:
        """The session ended: what it left unanswered ends too."""
        ...


tracing: Tracing | None = None
"""Set when traces are on; the driver hands it what crosses each session (None: nothing is looked at)."""


def watch(watcher: Watcher) -> None:
    """Have ``watcher`` see what happens from now on."""
    if watcher not in _WATCHERS:
        _WATCHERS.append(watcher)


def unwatch(watcher: Watcher) -> None:
    if watcher in _WATCHERS:
        _WATCHERS.remove(watcher)


def watching() -> bool:
    """Does anything watch (else the cores need not report calls)?"""
    return bool(_WATCHERS)


def _each(report: str, *args: object) -> None:
    for watcher in _WATCHERS:
        try:
            getattr(watcher, report)(*args)
        except Exception as exc:  # a failing watcher costs its own report, never the request
            LOGGER.warning(f"lazymcp gateway: a report failed: {exc!r}")


def called(call: Called) -> None:
    _each("called", call)


def requested(method: str, outcome: str) -> None:
    if _WATCHERS:
        _each("requested", method, outcome)


def server_started(server: str) -> None:
    if _WATCHERS:
        _each("server_started", server)


def server_failed(server: str) -> None:
    if _WATCHERS:
        _each("server_failed", server)


def handed_on() -> None:
    if _WATCHERS:
        _each("handed_on")


def audit_line(call: Called, now: datetime | None = None) -> str:
    """The audit line of one call (``now``: when it was answered; by default, now)."""
    when = (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    client = None if call.client is None else {"name": call.client[0], "version": call.client[1]}
    request_id = call.request_id if isinstance(call.request_id, str | int) else None
    return orjson.dumps(
        {
            "audit": "call",
            "time": when,
            "principal": call.principal,
            "session": call.session,
            "id": request_id,
            "address": call.address,
            "client": client,
            "server": call.server,
            "tool": call.tool,
            "via": call.via,
            "outcome": call.outcome,
            "ms": round(call.seconds * 1000, 3),
        }
    ).decode()


class Audit(Watcher):
    """Writes each call's audit line on stderr (at ``info``)."""

    def called(self, call: Called) -> None:
        LOGGER.info(audit_line(call))


AUDIT = Audit()


class AuditFile(Watcher):
    """Writes each call's audit line to a file of its own (``--audit-file``), apart from the log: appended,
    one whole line a write."""

    def __init__(self, path: str) -> None:
        """Raises:
        ConfigError: the file cannot be opened for appending (one line naming it)."""
        try:
            self.file: BinaryIO = open(path, "ab", buffering=0)  # open for the gateway's life
        except OSError as exc:
            raise ConfigError(f"cannot open the audit file {path!r}: {exc.strerror or exc}") from None

    def called(self, call: Called) -> None:
        self.file.write(audit_line(call).encode() + b"\n")

    def close(self) -> None:
        self.file.close()
