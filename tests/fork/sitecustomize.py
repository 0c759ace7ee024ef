"""At the start of every Python process a test runs: hand the program over to the test run's fork server
(``tests/forkserver.py``) and stand in for it. Anything this cannot mirror starts the ordinary way."""

from __future__ import annotations


def _program(argv: list[str]) -> tuple[list[object], bool] | None:
    """``(kind, target, args)`` of ``python [-u] [-B] (-m MODULE | -c CODE | SCRIPT) ARGS``, and -u."""
    unbuffered = False
    index = 1
    while index < len(argv) and argv[index] in ("-u", "-B"):
        unbuffered = unbuffered or argv[index] == "-u"
        index += 1
    if index + 1 > len(argv):
        return None
    first = argv[index]
    if first in ("-m", "-c"):
        if index + 1 >= len(argv):
            return None
        kind = "module" if first == "-m" else "code"
        return [kind, argv[index + 1], argv[index + 2 :]], unbuffered
    if first.startswith("-"):
        return None
    return ["script", first, argv[index + 1 :]], unbuffered


def _hand_over() -> None:
    import os
    import sys

    address = ""
    for entry in os.environ.get("LAZYMCP_TEST_FORKSERVER", "").split(os.pathsep):
        prefix, _, path = entry.partition("|")
        if prefix == sys.prefix:
            address = path
    if not address or "COVERAGE_PROCESS_START" in os.environ:
        return
    if "COVERAGE_PROCESS_CONFIG" in os.environ:
        return
    parsed = _program(list(getattr(sys, "orig_argv", [])))
    if parsed is None:
        return
    program, unbuffered = parsed
    kind, target = program[0], str(program[1])
    if kind == "code" and "sys.stdin.readline()" in target:  # a pytest-xdist worker's bootstrap
        return
    if kind == "module" and target in ("pytest", "pip", "venv"):  # a run of its own, which imports its own way
        return
    if kind == "script" and not os.path.exists(target):
        return
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return
    import json
    import socket
    import struct

    path0 = os.getcwd() if kind == "module" else "" if kind == "code" else os.path.dirname(os.path.realpath(target))
    request = json.dumps(
        {
            "program": program,
            "unbuffered": unbuffered,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "path": [path0, *sys.path],
            "stand_in": os.getpid(),
        }
    ).encode()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.connect(address)
        server.settimeout(120)
        message = struct.pack(">I", len(request)) + request
        sent = socket.send_fds(server, [message[:4096]], [0, 1, 2])
        server.sendall(message[sent:])
    except OSError:
        server.close()
        return  # not handed over: start the ordinary way
    _stand_in(server)


def _stand_in(server: object) -> None:
    import os
    import signal
    import sys

    reader = server.makefile("rb")  # type: ignore[attr-defined]
    try:
        first = reader.readline()
    except OSError:
        first = b""
    if not first.startswith(b"P"):
        sys.stderr.write("tests: the fork server did not start this program\n")
        os._exit(1)
    pid = int(first[1:])
    server.settimeout(None)  # type: ignore[attr-defined]
    # The program holds the streams now; a copy kept here would keep a pipe open after the program closed
    # its end (no end of file for the reader, no broken pipe for the writer) until this process exits.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)

    def forward(number: int, frame: object) -> None:
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, forward)
    line = reader.readline()
    status = int(line[1:]) if line.startswith(b"S") else 1 << 8
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


_hand_over()
