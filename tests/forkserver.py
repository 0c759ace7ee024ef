"""Warm starts for the Python processes the tests run.

The suite starts well over a thousand Python processes (``python -m lazymcp``, the small servers of
``tests/servers``, the conformance server...), and each spends about 1.5 s of CPU importing the MCP SDK
before it does anything: more than half of the suite's CPU time. A fork server imports the SDK and lazymcp
once; a process started by a test then hands its work over at interpreter start-up
(``tests/fork/sitecustomize.py``, on the children's ``PYTHONPATH``): it sends its argument vector, working
directory, environment and its standard input, output and error to the fork server, which forks a copy
of itself that takes them over and runs the program as ``python`` would have. The process the test started
stays as the program's stand-in: it passes on the signals it gets, and exits as the program exits (with its
status, or by its signal). A copy whose stand-in dies (SIGKILL) is killed by the kernel at once.

What a test sees is the same program, in a process of its own, on the same pipes; only the imports are
shared. Anything the hand-over does not mirror (interpreter options other than ``-u`` and ``-B``, a
different interpreter, a coverage run, a closed standard stream) starts the ordinary way. It is on by
default on Linux; ``LAZYMCP_TEST_FORKSERVER=off`` turns it off (CONTRIBUTING.md says what it saves).

Protocol (one Unix stream connection per process): the stand-in sends a 4-byte big-endian length and that
many bytes of JSON (``argv``, ``cwd``, ``env``, ``path``), with its descriptors 0, 1 and 2 attached to the
first bytes; the server answers ``P<pid>\\n`` once the copy runs, then ``S<wait status>\\n`` when it ended.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VARIABLE = "LAZYMCP_TEST_FORKSERVER"
"""``<sys.prefix>|<socket path>`` in the children's environment; ``off`` before the run: no fork server."""
HAND_OVER = str(Path(__file__).resolve().parent / "fork")
"""The directory whose ``sitecustomize`` hands a process's work over."""
PRELOADED = (
    "mcp",
    "mcp.client.session",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.server.lowlevel",
    "mcp.server.mcpserver",
    "mcp.server.stdio",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "httpx2",
    "starlette.applications",
    "uvicorn",
    "lazymcp",
    "lazymcp.cli.commands",
)
"""What every copy starts with: what nearly every process of the suite imports first."""
MAX_REQUEST = 4 << 20
F_SETSIG = 10
"""From linux/fcntl.h: the signal the kernel sends an ``O_ASYNC`` descriptor's owner when it is ready."""


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
        if len(data) >= 4 and struct.unpack(">I", data[:4])[0] > MAX_REQUEST:
            raise ValueError("request too large")
        more = conn.recv(65536)
        if not more:
            raise ValueError("connection closed mid-request")
        data += more
    return json.loads(data[4:]), fds


def _become(conn: socket.socket, fds: list[int], request: dict[str, Any], record: str | None) -> dict[str, Any]:
    """In the fork: take over the stand-in's streams, place and environment; note which process runs the
    stand-in's program (``record``) before the program can say anything."""
    if record is not None:
        with open(record, "w") as file:
            file.write(str(os.getpid()))
    os.setpgid(0, 0)
    for number, fd in enumerate(fds):
        if fd != number:
            os.dup2(fd, number)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    _die_with_stand_in(conn)
    if VARIABLE in os.environ:
        carry(into_lazymcp="lazymcp" in sys.modules)
    return request


def _die_with_stand_in(conn: socket.socket) -> None:
    """The stand-in gone (killed): so is the copy, at once. The stand-in never writes after its request, so
    the connection becomes readable only when it closes; with ``O_ASYNC`` and ``F_SETSIG`` the kernel then
    sends SIGKILL itself (no thread of ours has to run first, as a test that kills the stand-in expects the
    program's ends of the pipes closed as soon as it has seen the stand-in exit). Elsewhere, a thread
    watches."""
    try:
        fcntl.fcntl(conn.fileno(), fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(conn.fileno(), F_SETSIG, signal.SIGKILL)
        fcntl.fcntl(conn.fileno(), fcntl.F_SETFL, fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) | os.O_ASYNC)
        return
    except OSError:
        pass
    import threading

    def watch() -> None:
        try:
            while conn.recv(64):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="forkserver-stand-in", daemon=True).start()


def _serve(path: str) -> dict[str, Any]:
    """Accept hand-overs until the test run's end (standard input closed); return a request in a fork."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    children: dict[int, socket.socket] = {}
    stand_ins: dict[int, str | None] = {}
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [], 0.05)
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1):
            for pid in children:
                _kill(pid)
            raise SystemExit(0)
        if listener in readable:
            conn, _ = listener.accept()
            conn.settimeout(10)
            try:
                request, fds = _read_request(conn)
            except (OSError, ValueError) as exc:
                sys.stderr.write(f"forkserver: a hand-over failed: {exc}\n")
                conn.close()
                continue
            record = _record(path, request.get("stand_in"))
            pid = os.fork()
            if pid == 0:
                listener.close()
                for other in children.values():
                    other.close()
                conn.settimeout(None)
                return _become(conn, fds, request, record)
            for fd in fds:
                os.close(fd)
            stand_ins[pid] = record
            try:
                conn.sendall(b"P%d\n" % pid)
            except OSError:
                pass
            children[pid] = conn
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            record = stand_ins.pop(pid, None)
            if record is not None:
                with contextlib.suppress(OSError):
                    os.unlink(record)
            if conn is not None:
                try:
                    conn.sendall(b"S%d\n" % status)
                except OSError:
                    pass
                conn.close()


def _record(path: str, stand_in: object) -> str | None:
    """Where the fork notes which process runs the program of the stand-in ``stand_in`` (for
    :func:`program_pid`); removed here once the program ended."""
    if not isinstance(stand_in, int):
        return None
    return os.path.join(os.path.dirname(path), str(stand_in))


def addresses() -> dict[str, str]:
    """The run's fork servers, from ``VARIABLE``: the prefix of the Python environment each serves -> its
    socket's path. Entries are ``PREFIX|SOCKET``, joined by ``os.pathsep`` (``tests/fork/sitecustomize.py``
    reads them too, with nothing of the tests importable)."""
    found: dict[str, str] = {}
    for entry in os.environ.get(VARIABLE, "").split(os.pathsep):
        prefix, _, socket_path = entry.partition("|")
        if socket_path:
            found[prefix] = socket_path
    return found


def program_pid(pid: int) -> int:
    """The process that runs the program of the process ``pid`` a test started: ``pid`` itself, or the fork
    it handed its program over to."""
    for address in addresses().values():
        with contextlib.suppress(OSError, ValueError):
            return int(Path(address).with_name(str(pid)).read_text())
    return pid


def stand_in_pid(pid: int) -> int:
    """The process a test (or a server it started) started, whose program runs in the process ``pid``: the
    stand-in, whose command line is the program's; ``pid`` itself where nothing was handed over."""
    for address in addresses().values():
        for record in Path(address).parent.iterdir():
            if record.name.isdigit():
                with contextlib.suppress(OSError, ValueError):
                    if int(record.read_text()) == pid:
                        return int(record.name)
    return pid


def passed_on() -> dict[str, str]:
    """The variables a server must be given to hand its program over: none outside a run with a fork server.
    A client that starts a server with an environment of its own choosing (the SDKs' stdio clients, the
    Inspector's ``-e``) is given these."""
    if not addresses():
        return {}
    return {name: os.environ[name] for name in (VARIABLE, "PYTHONPATH") if name in os.environ}


def carry(*, into_lazymcp: bool = True) -> None:
    """Pass the fork server on to what the MCP SDK's stdio client starts, and to what a gateway of this
    run starts: both give a server a few safe variables of their own choice (the SDK's
    ``get_default_environment``, lazymcp's ``SAFE`` base), which would leave these two out. Only the
    variables' names are added to lazymcp's base, so a server still gets them only where the run has a
    fork server; a test that asserts what a server is given sees them only with these names."""
    import mcp.client.stdio as stdio

    if into_lazymcp:  # not in a fork server of another environment: only what its programs import
        with contextlib.suppress(ImportError):  # a program of this run without lazymcp on its path
            import lazymcp.local.environment as environment

            if VARIABLE not in environment.SAFE:
                environment.SAFE = (*environment.SAFE, VARIABLE, "PYTHONPATH")
    default = stdio.get_default_environment
    if getattr(default, "carries_fork_server", False):
        return

    def with_fork_server() -> dict[str, str]:
        env = default()
        for name, value in passed_on().items():
            env.setdefault(name, value)
        return env

    with_fork_server.carries_fork_server = True  # type: ignore[attr-defined]
    stdio.get_default_environment = with_fork_server


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _run(request: dict[str, Any]) -> None:
    """Run the program as ``python ARGV`` would, in this fork."""
    import io
    import runpy

    unbuffered = bool(request["unbuffered"] or os.environ.get("PYTHONUNBUFFERED"))
    for number, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        raw = io.FileIO(number, mode, closefd=False)
        binary: Any = io.BufferedReader(raw) if mode == "r" else raw if unbuffered else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(
            binary,
            encoding="utf-8",
            errors="backslashreplace" if number == 2 else "strict",
            line_buffering=number == 2 or (mode == "w" and raw.isatty()),
            write_through=unbuffered,
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    sys.path[:] = request["path"]
    kind, target, args = request["program"]
    if kind == "module":
        sys.argv = [target, *args]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    elif kind == "script":
        sys.argv = [target, *args]
        runpy.run_path(target, run_name="__main__")
    else:
        import types

        sys.argv = ["-c", *args]
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        exec(compile(target, "<string>", "exec"), main.__dict__)


class ForkServer:
    """The fork server of one test run (on the controller; workers and every child inherit its address)."""

    def __init__(self, python: str = sys.executable, preload: tuple[str, ...] = ()) -> None:
        """A fork server of the environment of ``python``, its copies starting with ``preload`` imported
        (none given: ``PRELOADED``)."""
        self.directory = tempfile.mkdtemp(prefix="lazymcp-forkserver-")
        self.path = os.path.join(self.directory, "socket")
        self.prefix = (
            subprocess.run(
                [python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, check=True, timeout=60
            ).stdout.strip()
            if python != sys.executable
            else sys.prefix
        )
        env = {name: value for name, value in os.environ.items() if name != VARIABLE}
        self.process = subprocess.Popen(
            [python, "-m", "tests.forkserver", self.path, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[1],
            env=env,
            start_new_session=True,
        )

    def ready(self, within: float = 120) -> bool:
        assert self.process.stdout is not None
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.process.stdout], [], [], 1)
            if readable:
                return self.process.stdout.readline().strip() == b"ready"
            if self.process.poll() is not None:
                return False
        return False

    def export(self) -> None:
        """Name this fork server in this process's environment, beside the others, for every process it starts."""
        known = addresses()  # ("on" and "off" name none)
        known[self.prefix] = self.path
        os.environ[VARIABLE] = os.pathsep.join(f"{prefix}|{path}" for prefix, path in known.items())
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if HAND_OVER not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [HAND_OVER, *paths]))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        import shutil

        shutil.rmtree(self.directory, ignore_errors=True)


def main() -> None:
    import gc

    for module in sys.argv[2:] or PRELOADED:
        try:
            __import__(module)
        except ImportError:  # what this install lacks, a copy imports (or not) as the program would
            pass
    # What is loaded now stays out of every copy's garbage collections: a collection that walked it would
    # touch (and so copy) every page of it in each copy.
    gc.collect()
    gc.freeze()
    request = _serve(sys.argv[1])
    _run(request)


if __name__ == "__main__":
    main()
