"""Every process the project starts goes through this runner, so none outlives its starter.

A child is started in a process group (and session) of its own, so a terminal's Ctrl-C
reaches only its starter, and stopping it reaches everything it started in its group.
Four layers end it, from the most graceful to the last resort:

1. `ChildProcess.stop()` (also on `with` exit): its stop signal (SIGTERM unless told
   otherwise) to the whole group, `grace` seconds, then SIGKILL to the group.
2. `stop_all()` at interpreter exit (`atexit`): every child still registered is stopped
   the same way, all signalled first and then waited for within one shared deadline.
3. `exit_on_signals()` in a command's `main`: SIGTERM and SIGHUP unwind the program the way
   Ctrl-C does (KeyboardInterrupt), so `finally` blocks and layer 2 run.
4. When the starter dies without unwinding (SIGKILL, a crash), the kernel kills the child:
   on Linux every child is started with `prctl(PR_SET_PDEATHSIG, SIGKILL)` (via ctypes).
   Each level arms its own children, so the chain cascades: pytest → `albert dev` →
   Typesense all go when the first one is SIGKILLed.

Why a parent-death signal and not a watchdog pipe: a pipe only helps a child that reads it.
Typesense (and a local chain such as anvil) are foreign binaries, so a pipe would need a
Python watchdog process between starter and child: one more interpreter per child, and one
more process that can itself be left behind. PR_SET_PDEATHSIG costs nothing, works for any
binary and is delivered even when the starter is SIGKILLed. Its one catch: the "parent" is
the *thread* that forked the child, so a child started from a short-lived thread would be
killed when that thread ends. The signal is therefore armed only for children started from
the main thread; others still have layers 1-3. Where `prctl` does not exist (not Linux),
layer 4 is absent too.

Registering another child is one line, and it is then covered by every layer above:

    anvil = ChildProcess(["anvil", "--port", str(port)], name="anvil",
                         log_path=state_dir / "anvil.log").start()

Wait for it with `wait_ready(answers_http(url))`. A stack that owns several children keeps
them in a `Children` (`children.spawn([...], name=...)`), which stops them newest first
within one deadline (what `albert dev` does on SIGTERM).

`LocalProcess` below is `albert serve` / `albert dev` as such a child, for tests, the
evaluation and the benchmarks.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

import httpx

PROJECT_DIR = Path(__file__).resolve().parent.parent
T = TypeVar("T")
DEFAULT_GRACE_SECONDS = 5.0
POLL_SECONDS = 0.05


class ChildStartError(RuntimeError):
    """A child exited, or was not ready in time, during start-up; the message ends with its log."""


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when a server could listen on `host:port` now.

    Bound as the servers bind (`SO_REUSEADDR`, as uvicorn and Typesense do), so a port
    whose last connections still linger in TIME_WAIT after a quick restart counts as
    free; a port another process listens on does not.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


class PortTaken(SystemExit):
    """A port given on the command line is in use; the message says which and what to do."""


# uvicorn's default backlog: the reserved socket is the one the server then serves on.
LISTEN_BACKLOG = 2048


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on `host:port` (0: any free port), bound as uvicorn binds.

    Raises OSError when it cannot be had. Listening, not just bound: two sockets that both
    set SO_REUSEADDR may bind the same port as long as neither listens, so only a listening
    socket keeps the port.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on sockets whose `proto` says
    # TCP, and accepted connections inherit it; with the default 0 every response written
    # in two sends (head, body) waited ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def reserve_port(host: str, port: int, option: str, instead: str = "") -> socket.socket:
    """The listening socket of `host:port`, given as `option`, or a PortTaken that says why
    (and, for a port in use, what to do `instead`: by default, pick another with `option`).

    A server is handed this socket instead of binding its port itself, so the port is held
    from the check on: nothing started in between (Typesense, the local chains, the demo
    data's seconds of seeding, another program) can take it.
    """
    try:
        return listening_socket(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortTaken(
                f"{option} {port}: address already in use ({host}:{port} is taken by another "
                f"process); stop it, or {instead or f'pick another port with {option}'}"
            ) from None
        raise PortTaken(
            f"{option} {port}: cannot listen on {host}:{port} ({exc.strerror or exc})"
        ) from None


# Starts of a child on freshly picked ports, when the ports it was given are lost to a race.
PORT_ATTEMPTS = 3


def log_size(path: Path) -> int:
    """Bytes in a log so far (0 when there is none): where the next start's lines begin."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def lost_its_port(log_path: Path, since: int) -> bool:
    """Whether the log, from byte `since` on, says a port to listen on was already taken.

    A free port is picked before the child binds it, and anything may bind it in between;
    uvicorn, Typesense and anvil all say "address already in use" (in their own case).
    """
    try:
        with log_path.open("rb") as log:
            log.seek(since)
            return b"address already in use" in log.read().lower()
    except OSError:
        return False


def start_on_free_ports(
    start: Callable[[], T],
    *,
    log_path: Path,
    failure: type[Exception],
    movable: bool,
    repick: Callable[[], None],
) -> T:
    """`start()`; when it raises `failure` because a port was taken before the child could
    listen on it (its log says so), `repick()` the ports and start again, up to
    PORT_ATTEMPTS times. Ports that are not `movable` (given by the user, or already known
    to clients) are never moved: that failure is raised at once.
    """
    attempt = 1
    while True:
        log_start = log_size(log_path)
        try:
            return start()
        except failure:
            if not (movable and attempt < PORT_ATTEMPTS and lost_its_port(log_path, log_start)):
                raise
        attempt += 1
        repick()


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


_TCP_LISTEN = "0A"


def descendants(root: int) -> set[int]:
    """Living processes whose chain of parents leads to `root` (not `root` itself), from
    /proc (none where it cannot be read)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return set()
    for entry in entries:
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: parse after its end.
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] not in ("Z", "X"):
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    queue = [root]
    while queue:
        for child in parents.get(queue.pop(), []):
            if child not in found:
                found.add(child)
                queue.append(child)
    return found


def _listening_ports(inodes: set[str]) -> set[int]:
    """Ports of the listening TCP sockets among these socket inodes, read from /proc/net."""
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == _TCP_LISTEN and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


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
        """`env` is added to this process's environment (never replaces it); output goes to
        `log_path` (appended), else to `stdout` (e.g. subprocess.PIPE), else nowhere."""
        self.args = [str(a) for a in args]
        self.name = name or Path(self.args[0]).name
        self.cwd = cwd or PROJECT_DIR
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
        if not Path("/proc/self/fd").is_dir():
            return True
        inodes: set[str] = set()
        for member in {pid} | descendants(pid):
            try:
                fds = os.listdir(f"/proc/{member}/fd")
                links = [os.readlink(f"/proc/{member}/fd/{fd}") for fd in fds]
            except OSError:
                continue  # gone, or not ours to read
            inodes.update(link[8:-1] for link in links if link.startswith("socket:["))
        return port in _listening_ports(inodes)

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


# --- layers 2 and 3: at exit and on signals ---------------------------------------------------

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


def stop_children(children: Sequence[ChildProcess], grace: float | None = None) -> None:
    """Signal all, newest first, then wait for each within one shared deadline."""
    ordered = list(reversed(children))
    for child in ordered:
        child.send_stop()
    longest = max((c.grace for c in ordered), default=0.0) if grace is None else grace
    deadline = time.monotonic() + longest
    for child in ordered:
        child.finish_stop(deadline)


def stop_all(grace: float | None = None) -> None:
    """Stop every child this process started and has not stopped (runs at exit)."""
    stop_children(live_children(), grace)


atexit.register(stop_all)


def _unwind(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def exit_on_signals(signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP)) -> None:
    """Make these signals unwind the program like Ctrl-C, so cleanup and `atexit` run.

    Only signals still at their default action are taken over, and only from the main
    thread (the only one that may set handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in signals:
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _unwind)


class Children:
    """The children of one owner (e.g. `albert dev`): started with `spawn`, stopped together."""

    def __init__(self) -> None:
        self._children: list[ChildProcess] = []

    def add(self, child: ChildProcess) -> ChildProcess:
        """Own a child started elsewhere."""
        self._children.append(child)
        return child

    def spawn(self, args: Sequence[str], **options: Any) -> ChildProcess:
        """Start and own a child; `options` are ChildProcess's keyword arguments."""
        return self.add(ChildProcess(args, **options).start())

    def send_stop(self) -> None:
        """Signal every child to stop, newest first, without waiting."""
        for child in reversed(self._children):
            child.send_stop()

    def finish_stop(self, deadline: float) -> None:
        """Wait for every child until `deadline`, then SIGKILL what is left."""
        for child in reversed(self._children):
            child.finish_stop(deadline)

    def stop(self, grace: float | None = None) -> None:
        """Stop every child within one shared deadline."""
        stop_children(self._children, grace)

    def __iter__(self) -> Iterator[ChildProcess]:
        return iter(self._children)


# --- `albert serve` / `albert dev` as a child ---------------------------------------------------


# workerd's first start may build its Pyodide bundle and vendor the worker's packages.
START_SECONDS = {"local": 60.0, "workerd": 240.0}


class LocalProcess:
    """The local runtime (`serve`) or the whole local stack (`dev`) on free ports.

    `runtime="workerd"` runs the worker on Cloudflare's workerd instead (workerd_dev).
    """

    def __init__(
        self,
        state_dir: Path,
        variables: dict[str, str] | None = None,
        port: int | None = None,
        *,
        command: str = "serve",
        log_name: str = "albert.log",
        grace: float = 10.0,
        data_port: int | None = None,
        env: dict[str, str] | None = None,
        runtime: str = "local",
    ) -> None:
        self.state_dir = state_dir
        self.env = dict(env or {})
        self.command = command
        self.runtime = runtime
        self.variables = dict(variables or {})
        self.port = port or free_port()
        self.data_port = data_port or free_port()
        # Ports picked here may be taken by anyone between the pick and the child's bind;
        # until the first start succeeds, such a loss is retried on fresh ports.
        self._ports_movable = port is None and data_port is None
        self.log_path = state_dir / log_name
        self.grace = grace
        self.child: ChildProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def data_url(self) -> str:
        """The data server of `albert dev` (MCP at /mcp, platform services at /platform)."""
        return f"http://127.0.0.1:{self.data_port}"

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    @property
    def running(self) -> bool:
        return self.child is not None and self.child.running

    def args(self) -> list[str]:
        """The command line of the child."""
        args = [sys.executable, "-m", "miniflare.cli", self.command]
        if self.command == "dev":
            args += ["--data-port", str(self.data_port)]
        args += ["--port", str(self.port), "--state-dir", str(self.state_dir)]
        if self.runtime != "local":
            args += ["--runtime", self.runtime]
        for key, value in self.variables.items():
            args += ["--var", f"{key}={value}"]
        return args

    def start(self, timeout: float | None = None) -> LocalProcess:
        """Start and wait until the worker answers /healthz, at most `timeout` seconds
        (by default START_SECONDS of the runtime).

        A second start while it runs is a no-op (never a second process on the same port).
        """
        if self.running:
            return self
        if timeout is None:
            timeout = START_SECONDS[self.runtime]

        def repick() -> None:
            self.port, self.data_port = free_port(), free_port()

        try:
            start_on_free_ports(
                lambda: self._start_once(timeout),
                log_path=self.log_path,
                failure=ChildStartError,
                movable=self._ports_movable,
                repick=repick,
            )
        except ChildStartError as exc:
            raise RuntimeError(f"albert {self.command}: {exc}") from exc
        self._ports_movable = False  # restarts keep the port the clients know
        return self

    def _start_once(self, timeout: float) -> None:
        if self.child is not None:
            self.child.kill()  # it died (or was killed): clear what is left of its group
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.child = ChildProcess(
            self.args(),
            name=f"albert {self.command}",
            env={"PYTHONUNBUFFERED": "1", **self.env},
            log_path=self.log_path,
            grace=self.grace,
        ).start()
        self.child.wait_ready(
            answers_http(f"{self.url}/healthz", healthy_only=True),
            timeout,
            "healthy",
            port=self.port,
        )

    def stop(self) -> int | None:
        """SIGTERM (the clean stop), then SIGKILL of its group after the grace; the exit code."""
        if self.child is None:
            return None
        code = self.child.stop()
        self.child = None
        return code

    def kill(self) -> None:
        """SIGKILL the process alone, as a crash would: its own children must die with it.

        `start()` starts it again; `stop()` (or leaving the `with` block) clears what is
        left of its group.
        """
        if self.child is not None and self.child.running:
            os.kill(self.child.popen.pid, signal.SIGKILL)
            self.child.popen.wait(timeout=10)

    def restart(self) -> None:
        """Stop and start again on the same port and state folder."""
        self.stop()
        self.start()

    def object_files(self, class_name: str) -> list[Path]:
        """The SQLite files of a Durable Object class's objects, wherever the runtime keeps them."""
        if self.runtime == "workerd":
            # wrangler's --persist-to layout: v3/do/<worker name>-<class>/<id>.sqlite
            folders = (self.state_dir / "workerd" / "state" / "v3" / "do").glob(f"*-{class_name}")
        else:
            folders = iter([self.state_dir / "do" / class_name])
        return sorted(
            path
            for folder in folders
            for path in folder.glob("*.sqlite")
            if path.name != "metadata.sqlite"
        )

    def typesense_url(self) -> str:
        """The Typesense URL `albert dev` printed at start-up."""
        match = re.search(r"Typesense on (http://\S+)", self.log_path.read_text(errors="replace"))
        if not match:
            raise RuntimeError("albert dev did not report its Typesense URL")
        return match.group(1)

    def chain_urls(self) -> dict[str, str]:
        """Chain → JSON-RPC URL of the local chains `albert dev` printed at start-up."""
        text = self.log_path.read_text(errors="replace")
        return dict(re.findall(r"chain (\w+) \(id \d+\) on (http://[\d.]+:\d+)", text))

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the process log."""
        return read_log_tail(self.log_path, lines)

    def __enter__(self) -> LocalProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
