"""One child process in a process group of its own, stopped as a group and never left behind.

Layers 1 and 4 of the package's four (see child_processes): `ChildProcess.stop()` ends the
whole group within a grace, and on Linux the kernel kills the child when its starter dies
without unwinding. Every child started here is also registered, so layers 2 and 3
(child_processes.group) can stop it at exit.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import httpx

from child_processes.proc import can_read_fds, descendants, listening_ports, socket_inodes

DEFAULT_GRACE_SECONDS = 5.0
POLL_SECONDS = 0.05


class ChildStartError(RuntimeError):
    """A child exited, or was not ready in time, during start-up; the message ends with its log."""


def read_log_tail(path: Path, lines: int, missing: str = "") -> str:
    """The last `lines` lines of a log file, for error messages; `missing` if it can't be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return missing
    return "\n".join(text.splitlines()[-lines:])


def answers_http(url: str, *, healthy_only: bool = False) -> Callable[[], bool]:
    """A readiness probe: true once `url` answers HTTP (with 200 when `healthy_only`)."""

    def probe() -> bool:
        try:
            status = httpx.get(url, timeout=1.0).status_code
        except httpx.TransportError:
            return False
        return status == 200 if healthy_only else True

    return probe


# --- layer 4: the kernel kills the child when its starter dies --------------------------------

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


# Resolved once, in the parent: the forked child must not load libraries or import anything.
_PRCTL = _load_prctl()


def _die_with(parent_pid: int) -> Callable[[], None] | None:
    """A preexec_fn arming SIGKILL on parent death, or None where that is not possible."""
    if _PRCTL is None or threading.current_thread() is not threading.main_thread():
        return None
    prctl = _PRCTL

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The starter may have died between fork and prctl: then nobody will signal us.
        if os.getppid() != parent_pid:
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


def parent_death_signal_available() -> bool:
    """True when children started from this thread die with their starter (layer 4)."""
    return _PRCTL is not None and threading.current_thread() is threading.main_thread()


# --- the children started and not stopped yet (what layers 2 and 3 stop) ----------------------

_live: dict[int, ChildProcess] = {}
_live_lock = threading.Lock()


def _register(child: ChildProcess) -> None:
    with _live_lock:
        _live[id(child)] = child


def _unregister(child: ChildProcess) -> None:
    with _live_lock:
        _live.pop(id(child), None)


def live_children() -> list[ChildProcess]:
    """Children started by this process and not stopped yet, oldest first."""
    with _live_lock:
        return list(_live.values())


# --- one child -----------------------------------------------------------------------------


class ChildProcess:
    """One child process in its own process group; stopped as a group, never left behind."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        name: str | None = None,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        log_path: Path | str | None = None,
        stdout: int | IO[Any] | None = None,
        stop_signal: int = signal.SIGTERM,
        grace: float = DEFAULT_GRACE_SECONDS,
    ) -> None:
        """`cwd` is where it runs (by default this process's current directory); `env` is
        added to this process's environment (never replaces it); output goes to `log_path`
        (appended), else to `stdout` (e.g. subprocess.PIPE), else nowhere."""
        self.args = [str(a) for a in args]
        self.name = name or Path(self.args[0]).name
        self.cwd = cwd
        self.env = dict(env or {})
        self.log_path = Path(log_path) if log_path is not None else None
        self.stdout = stdout
        self.stop_signal = stop_signal
        self.grace = grace
        self._proc: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None

    # --- state ---

    @property
    def pid(self) -> int | None:
        """Process id (also the group id), or None before start."""
        return self._proc.pid if self._proc is not None else None

    @property
    def popen(self) -> subprocess.Popen[bytes]:
        """The running Popen (e.g. to read a piped stdout)."""
        if self._proc is None:
            raise RuntimeError(f"{self.name} is not running")
        return self._proc

    @property
    def running(self) -> bool:
        """True while the child process itself is alive."""
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the child's log, for error messages."""
        return read_log_tail(self.log_path, lines) if self.log_path is not None else ""

    # --- start ---

    def start(self) -> ChildProcess:
        """Launch the child (not waiting for readiness; see `wait_ready`)."""
        if self.running:
            return self
        log: IO[bytes] | None = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = self.log_path.open("ab")
        out: Any = log if log is not None else self.stdout
        try:
            self._proc = subprocess.Popen(
                self.args,
                cwd=self.cwd,
                env={**os.environ, **self.env},
                stdin=subprocess.DEVNULL,
                stdout=out if out is not None else subprocess.DEVNULL,
                stderr=subprocess.STDOUT if out is not None else subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with(os.getpid()),
            )
        finally:
            if log is not None:
                log.close()  # the child has its own copy of the descriptor
        self.returncode = None
        _register(self)
        return self

    def listens_on(self, port: int) -> bool:
        """Whether this child, or a process it started, holds a listening TCP socket on
        `port` (true where /proc can't tell).

        Free ports are picked before a child binds them, so another server can take the port
        first and answer our readiness probe; only a socket the child owns proves it is ours.
        A descendant counts: `albert serve --runtime workerd` serves through wrangler's
        workerd, two processes down.
        """
        pid = self.pid
        if pid is None:
            return False
        if not can_read_fds():
            return True
        return port in listening_ports(socket_inodes({pid} | descendants(pid)))

    def wait_ready(
        self,
        probe: Callable[[], bool],
        timeout: float,
        what: str = "ready",
        port: int | None = None,
    ) -> ChildProcess:
        """Poll `probe` until it is true; stop the child and raise if it exits or times out.

        With `port`, a probe that answers counts only once the child listens on that port.
        """
        deadline = time.monotonic() + timeout
        while True:
            code = self.popen.poll()
            if code is not None:
                self.stop()
                raise ChildStartError(
                    f"{self.name} exited with code {code} before it was {what}\n{self.log_tail()}"
                )
            # The deadline is checked before each probe, so a timeout of 0 never waits.
            if time.monotonic() >= deadline:
                self.stop()
                raise ChildStartError(
                    f"{self.name} was not {what} after {timeout:g} s\n{self.log_tail()}"
                )
            if probe() and (port is None or self.listens_on(port)):
                if self.running:
                    return self
                continue  # another process answered: ours is gone, report that above
            time.sleep(POLL_SECONDS)

    # --- stop ---

    def send_stop(self) -> None:
        """Send the stop signal to the child's whole group, without waiting."""
        if self._proc is not None and self._proc.poll() is None:
            self._signal_group(self.stop_signal)

    def finish_stop(self, deadline: float) -> int | None:
        """Wait for the child until `deadline` (monotonic), then SIGKILL its group."""
        proc = self._proc
        if proc is None:
            return self.returncode
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        # Whatever is left of the group (the child, or grandchildren it left behind) goes now.
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        self.returncode = proc.returncode
        if proc.stdout is not None:
            proc.stdout.close()
        self._proc = None
        _unregister(self)
        return self.returncode

    def stop(self, grace: float | None = None) -> int | None:
        """Stop signal to the group, up to `grace` seconds, then SIGKILL; returns the exit code."""
        self.send_stop()
        return self.finish_stop(time.monotonic() + (self.grace if grace is None else grace))

    def kill(self) -> int | None:
        """SIGKILL the whole group at once, as a crash would."""
        return self.finish_stop(time.monotonic())

    def _signal_group(self, signum: int) -> None:
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signum)
        if self._proc.poll() is None:
            # Not a group leader any more (it called setsid/setpgid itself): signal it directly.
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(signum)

    def __enter__(self) -> ChildProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.running else "stopped"
        return f"ChildProcess({self.name!r}, {state})"
