"""A port picked free may be taken by anyone before the child binds it: start again on others.

uvicorn, Typesense, anvil and PostgreSQL all say "address already in use" (in their own
case) in their log when that happens, so the log tells such a loss from any other failure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
# Starts of a child on freshly picked ports, when the ports it was given are lost to a race.
PORT_ATTEMPTS = 3


def log_size(path: Path) -> int:
    """Bytes in a log so far (0 when there is none): where the next start's lines begin."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def lost_its_port(log_path: Path, since: int) -> bool:
    """Whether the log, from byte `since` on, says a port to listen on was already taken."""
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
