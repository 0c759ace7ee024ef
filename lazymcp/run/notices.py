"""What the command line says on stderr: the start-up line, the waiting notice, and failures as one line.

Everything goes through the ``lazymcp`` logger, so ``--log-level`` decides what is shown: the start-up
line and the waiting notice are ``INFO`` (the default level), a failure is ``ERROR``. A failure is one
line naming what failed (the URL, the command, the exit status); ``--debug`` adds the traceback.
"""

from __future__ import annotations

import errno
import logging
import shlex
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lazymcp.access.bearer import Access
    from lazymcp.gateway.front import Gateway
    from lazymcp.surfaces.catalog import Catalog

LOGGER = logging.getLogger("lazymcp")
LEVELS = ("debug", "info", "warning", "error")
WAIT_FIRST = 5.0
"""Seconds without the upstream's tool list before the proxy says it is still waiting."""
WAIT_EVERY = 30.0
"""Seconds between the waiting notices that follow."""
ANNOUNCE_TIMEOUT = 10.0
"""Seconds a stopping proxy waits for its start-up line to be written."""


class _Stderr(logging.StreamHandler):  # pyright: ignore[reportMissingTypeArgument]
    """A handler writing to whatever ``sys.stderr`` is when a record comes (not when it was made)."""

    @property
    def stream(self) -> Any:  # pyright: ignore[reportIncompatibleVariableOverride]
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def configure(level: str = "info") -> None:
    """Send the ``lazymcp`` logger's records to stderr, one plain line each, from ``level`` up."""
    LOGGER.handlers.clear()
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    LOGGER.addHandler(handler)
    LOGGER.setLevel(level.upper())
    LOGGER.propagate = False
    if level == "debug":
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)  # the SDK's own records too


def say(command: str, message: str, level: int = logging.WARNING) -> None:
    """One line for the operator on stderr, ``lazymcp <command>: <message>``, where the servers' own
    stderr goes too (a warning by default: what went wrong, or needs a look)."""
    LOGGER.log(level, f"lazymcp {command}: {message}")


def describe_command(command: Sequence[str] | str) -> str:
    """A command as a user would type it, or a URL as it is."""
    return command if isinstance(command, str) else shlex.join(command)


def saving_line(catalog: Catalog) -> str:
    """``N tools, stock listing X% of full (what the model sees)`` for a catalog in its own mode."""
    from lazymcp.run.stats import catalog_listings
    from lazymcp.tools.tokens import Size, kept_count, model_visible

    full = Size.of(model_visible(catalog.tools), kept_count).tokens
    stock = Size.of(model_visible(catalog_listings(catalog)["stock"]), kept_count).tokens
    share = f"{100 * stock / full:.1f}%" if full else "n/a"
    return f"{len(catalog.tools)} tools, a stock client's listing is {share} of the full one's tokens"


def startup(command: str, catalog: Catalog, where: str) -> None:
    """The one start-up line: version, mode, where from and to, tool count and the listing's saving."""
    from lazymcp.search.index import describe_ranker
    from lazymcp.version import __version__

    line = f"lazymcp {command} {__version__}: mode {catalog.options.mode}, {where}; {saving_line(catalog)}"
    LOGGER.info(f"{line}; search: {describe_ranker()}")


class ProxyStart:
    """The proxy's start-up: a waiting notice while the upstream's first tool list is not in, then the
    start-up line once it is. One per process; the HTTP front's sessions share it."""

    def __init__(self, upstream: Sequence[str] | str, http: tuple[str, int] | None) -> None:
        self.upstream = describe_command(upstream)
        self.clients = f"clients on http://{http[0]}:{http[1]}/mcp" if http else "clients on stdio"
        self.started = time.monotonic()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._timer = threading.Thread(target=self._wait, name="lazymcp-waiting-notice", daemon=True)
        self._announcing: threading.Thread | None = None

    def begin(self) -> None:
        """Start the waiting-notice clock: the proxy is up and its upstream is being started."""
        LOGGER.debug(f"lazymcp proxy: starting the upstream {self.upstream}")
        self._timer.start()

    def _wait(self) -> None:
        delay = WAIT_FIRST
        while not self._ready.wait(delay):
            waited = time.monotonic() - self.started
            LOGGER.info(
                f"lazymcp proxy: still waiting for the upstream's tool list after {waited:.0f} s"
                f" ({self.upstream}; npx may be downloading it, and the list is asked for at the first client)"
            )
            delay = WAIT_EVERY

    def stop(self) -> None:
        """Stop the waiting notices; let the start-up line, if it is being written, be written."""
        self._ready.set()
        if self._announcing is not None:
            self._announcing.join(timeout=ANNOUNCE_TIMEOUT)

    def catalog_in(self, catalog: Catalog) -> None:
        """The upstream's tool list is in: say the start-up line, once."""
        with self._lock:
            if self._ready.is_set():
                return
            self._ready.set()
        # Counting tokens takes a moment on a big catalog: the client's answer must not wait for it.
        where = f"upstream {self.upstream}, {self.clients}"
        self._announcing = threading.Thread(
            target=startup, args=("proxy", catalog, where), name="lazymcp-start-up", daemon=True
        )
        self._announcing.start()


_proxy_start: ProxyStart | None = None


def expect_proxy(upstream: Sequence[str] | str, http: tuple[str, int] | None) -> None:
    """The proxy of this process is starting (the command line calls this before ``run_proxy``)."""
    global _proxy_start
    _proxy_start = ProxyStart(upstream, http)
    _proxy_start.begin()


def proxy_done() -> None:
    """The proxy has stopped: no more waiting notices."""
    global _proxy_start
    if _proxy_start is not None:
        _proxy_start.stop()
        _proxy_start = None


def proxy_catalog_in(catalog: Catalog) -> None:
    """A proxy session has its first catalog; the first one in this process says the start-up line."""
    if _proxy_start is not None:
        _proxy_start.catalog_in(catalog)


# --- failures as one line ------------------------------------------------------------------------


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or ``exc`` itself."""
    if isinstance(exc, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in exc.exceptions:  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
            found += leaves(inner)  # pyright: ignore[reportUnknownArgumentType]
        return found
    return [exc]


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def failure(exc: BaseException, target: str) -> str:
    """One line saying what failed while talking to ``target`` (a URL or a command line)."""
    found = [cause for leaf in leaves(exc) for cause in _chain(leaf)]
    for cause in found:
        if isinstance(cause, FileNotFoundError | PermissionError):
            reason = cause.strerror or type(cause).__name__
            return f"cannot run {target}: {reason}"
    for cause in found:
        refused = isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED
        if refused or type(cause).__name__ in ("ConnectError", "ConnectTimeout"):
            from urllib.parse import urlsplit

            from lazymcp.run.reach import failure_cause, shown  # the one reading of a failed connect

            return f"cannot reach {shown(target)}: {failure_cause(cause, urlsplit(target).hostname or '')}"
    for cause in found:
        if type(cause).__name__ == "HTTPStatusError":
            return f"{target} answered with an HTTP error: {cause}"
    for cause in found:
        message = str(getattr(cause, "message", "") or cause).strip().splitlines()
        if message:
            return f"{target} failed: {message[0]}"
    return f"{target} failed: {type(exc).__name__}"


# --- a stdio server's exit status ------------------------------------------------------------------


def run_reporting_status(status_file: str, command: Sequence[str]) -> int:
    """Run ``command`` on this process's stdio, then write how it ended to ``status_file``.

    ``lazymcp stats`` runs a stdio server through this, so that a server that dies before answering is
    reported with its exit status (the SDK's stdio client only sees the pipe close).
    """
    import subprocess

    try:
        returncode = subprocess.call(list(command))
    except OSError as exc:
        outcome = f"cannot run {describe_command(command)}: {exc.strerror or exc}"
        returncode = 127
    else:
        outcome = f"{describe_command(command)} exited with status {returncode} before answering"
    with open(status_file, "w") as out:
        out.write(outcome)
    return returncode


if __name__ == "__main__":
    sys.exit(run_reporting_status(sys.argv[1], sys.argv[2:]))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def start_line(
    gateway: Gateway, source: str, http: tuple[str, int] | None, eager: bool, access: Access | None = None
) -> str:
    """What is running: the servers, what is known of them without starting them, the mode, the clients."""
    from lazymcp.version import __version__

    listed = [server for server in gateway.servers if server.tools is not None]
    count = len(gateway.servers)
    starting = count if eager else count - len(listed) + len(gateway.stale)
    mode = gateway.catalog.options.mode
    chosen = f"auto ({mode} for these tools)" if gateway.mode == "auto" else mode
    servers = f"{plural(count, 'server')} of {source} ({len(listed)} listed from manifests"
    if http is None:
        servers += f", {starting} started now, the rest on first use)"
        clients = "clients on stdio"
    else:  # each principal's sessions share its servers
        servers += f"; each client's first session starts {starting} at once, the rest on first use)"
        host = f"[{http[0]}]" if ":" in http[0] else http[0]
        clients = f"clients on http://{host}:{http[1]}/mcp ({access.describe() if access else 'no authentication'})"
    tools = f"{len(gateway.catalog)} tools known"
    return f"lazymcp gateway {__version__}: {servers}, {tools}, mode {chosen}, {clients}"
