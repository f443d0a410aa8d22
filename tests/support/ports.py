"""Loopback ports for servers started by tests.

A port picked with `free_port()` and bound later can be taken in between by any other
server binding port 0 (the other test worker starts hundreds). A server in this process
is therefore handed a socket that already listens (`reserve()`), a port that must refuse
connections is held bound but never listening (`closed_port`), and only a child that binds
its port itself (and starts again elsewhere when it lost it) uses `free_port()`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from child_processes import listening_socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def reserve(port: int = 0) -> socket.socket:
    """A socket listening on 127.0.0.1:`port` (0: a free one), for a server to serve on."""
    return listening_socket("127.0.0.1", port)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses every connection for the whole test.

    The socket is bound and never listens: a connection to it is refused at once, and no
    other server can take the port while the test expects nothing there.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
