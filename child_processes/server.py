"""A server binary run as one child on a loopback port: what its wrappers would each repeat.

A wrapper (the local chain's anvil, Typesense, PostgreSQL) says what to run (`command`),
how readiness shows (`readiness_probe`), which error a failed start raises (`start_error`)
and, where it needs to, what to do before each launch (`prepare_launch`). This class starts
it through ChildProcess (so every layer of child_processes covers it), waits until it is
ready and listens on its own port, starts it again on another port when a port picked
here was taken first, and stops it as a group.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from child_processes.child import (
    DEFAULT_GRACE_SECONDS,
    ChildProcess,
    ChildStartError,
    read_log_tail,
)
from child_processes.port_races import start_on_free_ports
from child_processes.ports import free_port


class ServerProcess:
    """One server child on `host:port`; `start()` it, `stop()` it, `url` reaches it."""

    # The child's name in logs and errors (a wrapper may set one per instance).
    child_name: str = "server"
    start_error: ClassVar[type[Exception]] = ChildStartError
    # What the child is, once ready ("healthy", "answering"): the start error says it.
    ready_state: ClassVar[str] = "ready"
    start_seconds: ClassVar[float] = 30.0
    stop_seconds: ClassVar[float] = DEFAULT_GRACE_SECONDS
    stop_signal: ClassVar[int] = signal.SIGTERM
    log_lines: ClassVar[int] = 30

    def __init__(self, host: str, port: int, *, movable: bool) -> None:
        """`movable`: the port was picked here, so a start that loses it to a race may take
        another (a port given by the caller never moves)."""
        self.host = host
        self.port = port
        self.movable = movable
        self.child: ChildProcess | None = None

    # --- what a wrapper says ---

    @property
    def log_path(self) -> Path:
        """Where the server's stdout and stderr go."""
        raise NotImplementedError

    def command(self) -> list[str]:
        """The server's command line."""
        raise NotImplementedError

    @contextlib.contextmanager
    def readiness_probe(self) -> Iterator[Callable[[], bool]]:
        """A probe that is true once the server answers as ready (open while it is polled)."""
        raise NotImplementedError
        yield  # pragma: no cover

    def prepare_launch(self) -> None:
        """Runs before each launch (e.g. to check the port again); nothing by default."""

    def repick_port(self) -> None:
        """Take another free port, after the last one was lost to a race."""
        self.port = free_port(self.host)

    def start_failure(self, error: ChildStartError) -> Exception:
        """The wrapper's error for a child that exited or was not ready in time."""
        head, _, log = str(error).partition("\n")
        return self.start_error(f"{head} at {self.url}.\n{log}")

    # --- state ---

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:8108."""
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """Process id of the server, or None before start."""
        return self.child.pid if self.child is not None else None

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self.child is not None and self.child.running

    def log_tail(self, lines: int | None = None) -> str:
        """The last lines of the server's log, for error messages."""
        return read_log_tail(self.log_path, lines or self.log_lines, missing="(no log)")

    # --- start and stop ---

    def start(self, timeout: float | None = None) -> Self:
        """Launch the server and wait until it is ready, at most `timeout` seconds.

        A port picked here (not given) that is taken before the server listens on it is
        picked again (child_processes.port_races).
        """
        if self.running:
            return self
        wait = self.start_seconds if timeout is None else timeout
        start_on_free_ports(
            lambda: self._launch(wait),
            log_path=self.log_path,
            failure=self.start_error,
            movable=self.movable,
            repick=self.repick_port,
        )
        return self

    def _launch(self, timeout: float) -> None:
        self.prepare_launch()
        self.child = ChildProcess(
            self.command(),
            name=self.child_name,
            log_path=self.log_path,
            stop_signal=self.stop_signal,
            grace=self.stop_seconds,
        ).start()
        try:
            with self.readiness_probe() as probe:
                self.child.wait_ready(probe, timeout, self.ready_state, port=self.port)
        except ChildStartError as exc:
            self._stop_child(None)
            raise self.start_failure(exc) from exc
        except BaseException:
            self._stop_child(None)
            raise

    def _stop_child(self, timeout: float | None) -> None:
        child, self.child = self.child, None
        if child is not None:
            child.stop(grace=self.stop_seconds if timeout is None else timeout)

    def stop(self, timeout: float | None = None) -> None:
        """The stop signal to the server's group, up to `timeout` seconds (by default its
        `stop_seconds`), then SIGKILL."""
        self._stop_child(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
