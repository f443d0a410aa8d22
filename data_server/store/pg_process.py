"""A throwaway PostgreSQL server: `initdb` into a directory of its own, `postgres` on a free
port bound to 127.0.0.1, its unix socket inside that directory, stopped as a process group.

The binaries are Debian's (`apt-get install postgresql`), found on PATH or under
`/usr/lib/postgresql/<version>/bin` (where Debian puts them, off PATH). PostgreSQL refuses to
run as root; started by root, both `initdb` and `postgres` run as `nobody` through `setpriv`
(which also re-arms the parent-death signal, cleared by the change of user).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from miniflare.process import ChildProcess, ChildStartError, free_port

HOST = "127.0.0.1"
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


class PostgresProcess:
    """One PostgreSQL server child process; `start()` it, `stop()` it, `url` reaches it."""

    def __init__(self, *, root: Path | None = None, durable: bool = False) -> None:
        """`root` is an empty folder to own (a new temporary one when None); `durable` False
        turns off fsync, for tests and benchmarks whose data may be lost."""
        self._owns_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="albert-pg-")) if root is None else root
        self.data_dir = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.log_path = self.root / "postgres.log"
        self.durable = durable
        self.port = 0
        self.child: ChildProcess | None = None

    @property
    def url(self) -> str:
        """A libpq URL of the server's `postgres` database as its superuser."""
        return self.database_url("postgres")

    def database_url(self, database: str) -> str:
        """A libpq URL of one database on this server."""
        return f"postgresql://{SUPERUSER}@{HOST}:{self.port}/{database}"

    @property
    def running(self) -> bool:
        """True while the server process is alive."""
        return self.child is not None and self.child.running

    def start(self, timeout: float = 30.0) -> None:
        """initdb (first time only), then start and wait until a connection is accepted."""
        if self.running:
            return
        bin_dir = binary_dir()
        self.root.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            for path in (self.root, self.socket_dir):
                shutil.chown(path, UNPRIVILEGED)
        if not (self.data_dir / "PG_VERSION").exists():
            init = _as_unprivileged(
                [
                    str(bin_dir / "initdb"),
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
        self.port = free_port()
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
        args = _as_unprivileged([str(bin_dir / "postgres"), *options])
        self.child = ChildProcess(args, name="postgres", log_path=self.log_path).start()
        try:
            self.child.wait_ready(self._accepts, timeout, "accepting connections", port=self.port)
        except ChildStartError as exc:
            raise PostgresUnavailable(str(exc)) from exc

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

    def stop(self, grace: float = 10.0) -> None:
        """Fast shutdown (SIGINT), then SIGKILL after `grace` s; remove a temporary root."""
        child, self.child = self.child, None
        if child is not None:
            child.stop_signal = signal.SIGINT  #: postgres' "fast" shutdown, no waiting on clients
            child.stop(grace=grace)
        if self._owns_root:
            deadline = time.monotonic() + grace
            while self.root.exists() and time.monotonic() < deadline:
                shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
