"""A loopback port whose last connection lingers in TIME_WAIT, as after a quick restart."""

from __future__ import annotations

import socket
import time
from pathlib import Path

TIME_WAIT = "06"  # the state's number in /proc/net/tcp


def lingering_port() -> int:
    """A port nothing listens on whose server side just closed a connection (TIME_WAIT)."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = int(server.getsockname()[1])
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the server side closes first: it keeps the TIME_WAIT
        time.sleep(0.05)
        client.close()
    return port


def in_time_wait(port: int) -> bool:
    """True when a connection whose local port is `port` is in TIME_WAIT (Linux, /proc)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state == TIME_WAIT and int(local.rsplit(":", 1)[1], 16) == port:
                return True
    return False
