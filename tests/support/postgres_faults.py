"""Faults of a real PostgreSQL server for tests: frozen (SIGSTOP), sessions killed.

A frozen server is what a hung host, a stalled disk or a paused VM looks like from a
client: connections stay open, the kernel still acknowledges, nothing answers. Keepalives
and `statement_timeout` cannot end that; only the client's own bounds can.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

from child_processes import descendants
from data_server.store.pg_process import PostgresProcess


@contextlib.contextmanager
def frozen(server: PostgresProcess) -> Iterator[None]:
    """The server's postmaster and every backend stopped for the block, continued after it
    whatever happened inside."""
    root = server.child.pid if server.child is not None else None
    assert root is not None, "the server is not running"
    stopped: list[int] = []
    try:
        os.kill(root, signal.SIGSTOP)
        stopped.append(root)
        # Read after the postmaster stopped: it forks no backend any more.
        for pid in sorted(descendants(root)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
        yield
    finally:
        # Backends first, so none finds its postmaster still stopped.
        for pid in reversed(stopped):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def terminate_sessions(url: str, application_name: str) -> int:
    """End every session of the database at `url` named `application_name`, as an
    administrator (or a failover) would; how many were ended."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            (application_name,),
        ).fetchall()
    return sum(1 for row in rows if row[0])


def session_pids(url: str, application_name: str) -> list[int]:
    """Backend pids of the sessions of the database at `url` named `application_name`."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database() ORDER BY pid",
            (application_name,),
        ).fetchall()
    return [int(row[0]) for row in rows]
