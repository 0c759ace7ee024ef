"""The fork server the test run starts its Python processes from (``tests/forkserver.py``): a program handed
over behaves, for the test that started it, as the process it started would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ..forkserver import VARIABLE, program_pid
from ..raw import children, gone

pytestmark = [
    pytest.mark.skipif(
        "|" not in os.environ.get(VARIABLE, ""),
        reason="the fork server is off (LAZYMCP_TEST_FORKSERVER=off, or not Linux)",
    ),
    pytest.mark.skipif(
        any(name in os.environ for name in ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")),
        reason="under coverage every process starts the ordinary way (tests/fork/sitecustomize.py)",
    ),
]


def test_a_program_runs_in_a_fork_with_its_own_arguments_directory_environment_and_exit_status(tmp_path) -> None:
    code = "import os, sys; print(os.getpid(), os.getcwd(), os.environ['GIVEN'], sys.argv[1:], sys.stdin.read())"
    done = subprocess.run(
        [sys.executable, "-c", code + "; sys.exit(7)", "a", "b"],
        input="piped",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "GIVEN": "yes"},
        timeout=60,
    )
    pid, cwd, given, args, piped = done.stdout.split(" ", 4)
    assert done.returncode == 7, done.stderr
    assert (cwd, given, args, piped.strip()) == (str(tmp_path), "yes", "['a',", "'b'] piped")
    assert int(pid) > 0


SLEEPER = [sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(600)"]
"""A program that says its process id and sleeps."""


def ended(program: int) -> bool:
    """Whether the process ``program`` is gone within 30 s."""
    deadline = time.monotonic() + 30
    while not gone(program) and time.monotonic() < deadline:
        time.sleep(0.05)
    return gone(program)


def test_signals_reach_the_program_and_its_death_by_signal_is_the_stand_ins() -> None:
    with subprocess.Popen(SLEEPER, stdout=subprocess.PIPE, text=True) as started:
        try:
            assert started.stdout is not None
            program = int(started.stdout.readline())
            assert program != started.pid and program_pid(started.pid) == program  # handed over, and found
            started.send_signal(signal.SIGTERM)
            assert started.wait(60) == -signal.SIGTERM
        finally:
            started.kill()  # not left to sleep out its ten minutes when an assertion failed
    assert ended(program)


def test_a_stand_in_killed_outright_takes_its_program_with_it() -> None:
    with subprocess.Popen(SLEEPER, stdout=subprocess.PIPE, text=True) as started:
        assert started.stdout is not None
        program = int(started.stdout.readline())
        started.kill()
        started.wait(60)
    assert ended(program)


def test_a_program_that_never_lets_a_thread_run_still_dies_with_its_stand_in() -> None:
    """The kernel ends the program when its stand-in's connection closes: no thread of the program has to
    run first (one summing a huge range in C holds the interpreter throughout), so the pipes the program
    held are closed soon after the test sees the stand-in killed."""
    code = "import os; print(os.getpid(), flush=True); sum(range(10**15))"
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as started:
        assert started.stdout is not None
        program = int(started.stdout.readline())
        started.kill()
        started.wait(60)
    assert ended(program)


def test_children_are_seen_through_the_stand_in() -> None:
    code = (
        "import subprocess, sys, time;"
        " child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
        " print(child.pid, flush=True); time.sleep(600)"
    )
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as started:
        assert started.stdout is not None
        child = int(started.stdout.readline())
        try:
            deadline = time.monotonic() + 30
            while program_pid(child) == child and time.monotonic() < deadline:  # until it has handed over
                time.sleep(0.05)
            assert children(started.pid) == [program_pid(child)] != [child]
        finally:
            os.kill(child, signal.SIGKILL)
            started.kill()
            started.wait(60)


def test_a_stream_the_program_closes_is_closed_for_the_test_while_the_program_runs_on() -> None:
    code = "import os, sys, time; print('first', flush=True); os.close(1); sys.stdin.read()"
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as started:
        assert started.stdout is not None and started.stdin is not None
        assert started.stdout.read() == "first\n"  # the end of its output while it still waits for input
        assert started.poll() is None
        started.stdin.close()
        assert started.wait(60) == 0
