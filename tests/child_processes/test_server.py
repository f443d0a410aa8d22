"""ServerProcess, the plumbing the anvil, Typesense and PostgreSQL wrappers share: a child on
a loopback port, ready once it answers on its own port, started again on another port when a
port picked for it was taken first, and stopped as a group."""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from child_processes import LOOPBACK, ServerProcess, free_port


class ServeError(RuntimeError):
    """The test server did not start."""


class StaticServer(ServerProcess):
    """Python's own HTTP server, as a wrapper would declare it."""

    child_name = "http.server"
    start_error = ServeError
    ready_state = "answering"
    start_seconds = 20.0
    stop_seconds = 2.0

    def __init__(self, folder: Path, port: int | None = None, *, exit_code: int | None = None):
        super().__init__(LOOPBACK, port or free_port(), movable=port is None)
        self.folder = folder
        self.exit_code = exit_code

    @property
    def log_path(self) -> Path:
        return self.folder / "server.log"

    def command(self) -> list[str]:
        if self.exit_code is not None:
            return [sys.executable, "-c", f"print('broken'); raise SystemExit({self.exit_code})"]
        return [
            sys.executable, "-m", "http.server", str(self.port),
            "--bind", self.host, "--directory", str(self.folder),
        ]  # fmt: skip

    @contextlib.contextmanager
    def readiness_probe(self) -> Iterator[Callable[[], bool]]:
        with httpx.Client(timeout=1.0) as client:

            def answers() -> bool:
                try:
                    return client.get(self.url).status_code == 200
                except httpx.TransportError:
                    return False

            yield answers


def test_it_starts_answers_and_stops_with_its_group(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("hello")
    with StaticServer(tmp_path) as server:
        assert server.running and server.pid is not None
        assert httpx.get(f"{server.url}/index.html").text == "hello"
    assert not server.running and server.child is None


def test_a_failed_start_is_the_wrappers_error_with_its_log(tmp_path: Path) -> None:
    server = StaticServer(tmp_path, exit_code=3)
    with pytest.raises(ServeError, match="exited with code 3") as info:
        server.start()
    assert f"at {server.url}." in str(info.value) and "broken" in str(info.value)
    assert not server.running and server.child is None


def test_a_picked_port_taken_first_is_picked_again_and_a_given_one_is_not(
    tmp_path: Path,
) -> None:
    with socket.create_server((LOOPBACK, 0)) as taken:
        lost = taken.getsockname()[1]
        picked = StaticServer(tmp_path)
        picked.port = lost  # as if another server took it between the pick and the bind
        with picked:
            assert picked.port != lost
            assert httpx.get(picked.url).status_code == 200
        assert "address already in use" in picked.log_path.read_text().lower()
        given = StaticServer(tmp_path, port=lost)
        with pytest.raises(ServeError):
            given.start(timeout=10)
        assert given.port == lost and not given.running
