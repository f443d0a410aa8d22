"""Makes the DNS lookups of some names slow on purpose in a process started with this
folder on PYTHONPATH.

Python imports `sitecustomize` at start-up. This one wraps `socket.getaddrinfo`: a name
ending in ALBERT_TEST_SLOW_DNS_SUFFIX waits ALBERT_TEST_SLOW_DNS_SECONDS, then fails as
a lookup whose name server never answered does (EAI_AGAIN); every other name resolves
as usual. asyncio runs each lookup on a thread of its loop (`loop.getaddrinfo`), so the
process holds threads busy that long, as it does with an MCP server whose name server
is unreachable (the system resolver's timeout is 5 s per try).
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

SUFFIX = os.environ.get("ALBERT_TEST_SLOW_DNS_SUFFIX", "")
DELAY_SECONDS = float(os.environ.get("ALBERT_TEST_SLOW_DNS_SECONDS", "0") or 0)

_getaddrinfo = socket.getaddrinfo


def _slow_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    name = host.decode() if isinstance(host, bytes) else str(host or "")
    if SUFFIX and name.endswith(SUFFIX):
        time.sleep(DELAY_SECONDS)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    return _getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _slow_getaddrinfo
