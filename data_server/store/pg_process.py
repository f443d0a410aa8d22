"""A throwaway PostgreSQL server: `initdb` into a directory of its own, `postgres` on a free
port bound to 127.0.0.1, its unix socket inside that directory, stopped as a process group.

The binaries are Debian's (`apt-get install postgresql`), found on PATH or under
`/usr/lib/postgresql/<version>/bin` (where Debian puts them, off PATH). PostgreSQL refuses to
run as root; started by root, both `initdb` and `postgres` run as `nobody` through `setpriv`
(which also re-arms the parent-death signal, cleared by the change of user).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from child_processes import LOOPBACK, ChildStartError, ServerProcess, free_port

HOST = LOOPBACK
SUPERUSER = "postgres"
UNPRIVILEGED = "nobody"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine, or they could not start."""


def binary_dir() -> Path:
    """The folder holding `initdb` and `postgres`: PATH first, else Debian's newest version."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(found).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not versions:
        raise PostgresUnavailable(
            "PostgreSQL server binaries not found (apt-get install postgresql)"
        )
    return versions[-1].parent


def _as_unprivileged(args: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return args
    user = pwd.getpwnam(UNPRIVILEGED)
    return [
        "setpriv",
        f"--reuid={user.pw_uid}",
        f"--regid={user.pw_gid}",
        "--clear-groups",
        "--pdeathsig=KILL",
        *args,
    ]


class PostgresProcess(ServerProcess):
    """One PostgreSQL server child process; `start()` it, `stop()` it, `url` reaches it."""

    child_name = "postgres"
    start_error = PostgresUnavailable
    ready_state = "accepting connections"
    start_seconds = 30.0
    stop_seconds = 10.0
    #: postgres' "fast" shutdown, no waiting on clients
    stop_signal = signal.SIGINT

    def __init__(self, *, root: Path | None = None, durable: bool = False) -> None:
        """`root` is an empty folder to own (a new temporary one when None); `durable` False
        turns off fsync, for tests and benchmarks whose data may be lost."""
        super().__init__(HOST, 0, movable=True)
        self._owns_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="albert-pg-")) if root is None else root
        self.data_dir = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.durable = durable

    @property
    def log_path(self) -> Path:
        """Where the server's output goes."""
        return self.root / "postgres.log"

    @property
    def url(self) -> str:
        """A libpq URL of the server's `postgres` database as its superuser."""
        return self.database_url("postgres")

    def database_url(self, database: str) -> str:
        """A libpq URL of one database on this server."""
        return f"postgresql://{SUPERUSER}@{HOST}:{self.port}/{database}"

    def start(self, timeout: float | None = None) -> PostgresProcess:
        """initdb (first time only), then start and wait until a connection is accepted."""
        if self.running:
            return self
        binary_dir()  # no binaries: PostgresUnavailable, before anything is written
        self.root.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            for path in (self.root, self.socket_dir):
                shutil.chown(path, UNPRIVILEGED)
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb(self.start_seconds if timeout is None else timeout)
        return super().start(timeout)

    def _initdb(self, timeout: float) -> None:
        init = _as_unprivileged(
            [
                str(binary_dir() / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                *([] if self.durable else ["--no-sync"]),
            ]
        )
        done = subprocess.run(init, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {done.stdout}{done.stderr}")

    def prepare_launch(self) -> None:
        """A port picked afresh for each launch."""
        self.port = free_port(self.host)

    def command(self) -> list[str]:
        """`postgres` on the port, its socket in the root; fsync off unless durable."""
        options = [
            "-D", str(self.data_dir),
            "-h", HOST,
            "-p", str(self.port),
            "-k", str(self.socket_dir),
            "-c", "max_connections=200",
        ]  # fmt: skip
        if not self.durable:
            # What a crash may lose here is rebuilt by the next test or bench run.
            options += ["-c", "fsync=off", "-c", "synchronous_commit=off"]
            options += ["-c", "full_page_writes=off"]
        return _as_unprivileged([str(binary_dir() / "postgres"), *options])

    @contextlib.contextmanager
    def readiness_probe(self) -> Iterator[Callable[[], bool]]:
        """True once a connection is accepted."""
        yield self._accepts

    def start_failure(self, error: ChildStartError) -> Exception:
        """PostgresUnavailable, with the child's message and log tail."""
        return PostgresUnavailable(str(error))

    def _accepts(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url, connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def create_database(self, name: str) -> str:
        """Create an empty database and return its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, ending its sessions first."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self, timeout: float | None = None) -> None:
        """Fast shutdown (SIGINT), then SIGKILL after `timeout` s; remove a temporary root."""
        super().stop(timeout)
        if self._owns_root:
            deadline = time.monotonic() + (self.stop_seconds if timeout is None else timeout)
            while self.root.exists() and time.monotonic() < deadline:
                shutil.rmtree(self.root, ignore_errors=True)
