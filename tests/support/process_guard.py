"""The suite leaves nothing running: a session-level guard, and /proc helpers for tests.

At the start of a session the guard adds a token of its own to `ALBERT_TEST_SESSIONS` in
this process's environment. Every process the suite starts inherits it, and so does
everything those start, however they detach: a double fork that reparents to init, a new
session, a new process group. At the end, after every fixture is torn down, the guard reads
`/proc/*/environ` (and, for children that were given an environment of their own, the
parent links in `/proc/*/stat`): whatever still carries the token, or still descends from
this process, survived. The guard waits a bounded moment for processes that are still
exiting, then kills the rest and fails the run, naming each.

The guard also makes SIGTERM unwind the session like Ctrl-C, so fixtures stop what they
started then too.

Nested sessions (a test that runs pytest) append their own token, so each guard sees only
its own session's processes, and the outer one also sees what the inner one left.

Linux only (it needs /proc); elsewhere the guard reports that it did not run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from child_processes import descendants, exit_on_signals

MARKER_VAR = "ALBERT_TEST_SESSIONS"
EXIT_WAIT_SECONDS = 5.0
PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessInfo:
    """One process as /proc shows it."""

    pid: int
    ppid: int
    state: str
    cmdline: str

    def describe(self) -> str:
        return f"pid {self.pid} (parent {self.ppid}): {self.cmdline or '?'}"


def read_process(pid: int) -> ProcessInfo | None:
    """The process's parent, state and command line; None if it is gone."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        raw_cmd = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or parentheses.
    rest = stat[stat.rindex(")") + 2 :].split()
    cmdline = raw_cmd.replace(b"\0", b" ").decode(errors="replace").strip()
    return ProcessInfo(pid=pid, ppid=int(rest[1]), state=rest[0], cmdline=cmdline)


def all_pids() -> list[int]:
    """Every process id visible in /proc."""
    return [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]


def is_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (dead, waiting to be reaped)."""
    info = read_process(pid)
    return info is not None and info.state not in ("Z", "X")


def environ_has(pid: int, name: str, token: str) -> bool:
    """True when the process's environment holds `token` in the list variable `name`."""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    prefix = f"{name}=".encode()
    for entry in raw.split(b"\0"):
        if entry.startswith(prefix):
            return token in entry[len(prefix) :].decode(errors="replace").split(":")
    return False


def marked(token: str, name: str = MARKER_VAR) -> set[int]:
    """Living processes that carry `token` in their environment, this one excepted."""
    me = os.getpid()
    return {
        pid for pid in all_pids() if pid != me and environ_has(pid, name, token) and is_alive(pid)
    }


def wait_gone(pids: Iterable[int], timeout: float) -> set[int]:
    """Wait until these processes are gone (or zombies); the ones still alive after `timeout`."""
    left = set(pids)
    deadline = time.monotonic() + timeout
    while True:
        left = {pid for pid in left if is_alive(pid)}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


class ProcessGuard:
    """Marks the session's processes at the start; finds and ends survivors at the end."""

    def __init__(self) -> None:
        self.token = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.enabled = PROC.is_dir() and (PROC / str(os.getpid()) / "environ").exists()

    def mark(self) -> None:
        """Add this session's token to the environment every child inherits."""
        outer = os.environ.get(MARKER_VAR, "")
        os.environ[MARKER_VAR] = f"{outer}:{self.token}" if outer else self.token

    def survivors(self) -> set[int]:
        """The session's processes still alive: marked, or descending from this process."""
        return marked(self.token) | descendants(os.getpid())

    def end_survivors(self) -> list[ProcessInfo]:
        """Wait for exiting processes, then SIGKILL and report the ones that stayed."""
        left = wait_gone(self.survivors(), EXIT_WAIT_SECONDS)
        left |= self.survivors()  # anything started while we waited
        found = [info for pid in sorted(left) if (info := read_process(pid)) is not None]
        for info in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(info.pid, signal.SIGKILL)
        wait_gone(left, EXIT_WAIT_SECONDS)
        return found


_guard = ProcessGuard()


def pytest_configure(config: pytest.Config) -> None:
    if _guard.enabled:
        _guard.mark()
    # SIGTERM (a CI runner, a closed terminal) unwinds pytest the way Ctrl-C does, so every
    # fixture stops what it started; SIGKILL is covered by the children's parent-death signal.
    exit_on_signals()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every fixture is torn down: fail the run if any of its processes survived."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str, **markup: bool) -> None:
        if reporter is not None:
            reporter.write_line(line, **markup)

    if not _guard.enabled:
        say("process guard: /proc is not available, leftover processes were not checked")
        return
    found = _guard.end_survivors()
    if not found:
        return
    say("")
    say(f"process guard: {len(found)} process(es) of this test session survived it:", red=True)
    for info in found:
        say(f"  {info.describe()}", red=True)
    say("They were killed now; whatever started them did not stop them.", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
