"""Loopback ports: picking a free one, checking one, and holding one until a server serves."""

from __future__ import annotations

import errno
import socket

LOOPBACK = "127.0.0.1"
# uvicorn's default backlog: the reserved socket is the one the server then serves on.
LISTEN_BACKLOG = 2048


class PortTaken(SystemExit):
    """A port given on the command line is in use; the message says which and what to do."""


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nothing listens on right now on `host` (the OS picks it)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
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
