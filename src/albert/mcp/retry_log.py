"""Each server's place in its recovery cycle, kept in the object's SQLite.

An evicted or restarted object would otherwise begin every cycle anew: a server
that failed its 4th retry would be tried at once and then 1, 2, 4 … s later again,
and a `failed` server past its retries would be hammered with a fresh cycle on
every wake-up. With the attempt count, the next retry time and the time the cycle
was spent on disk, the recovery scheduler (albert.mcp.retry_scheduler) carries on where it
was: the alarm (which the platform keeps across eviction) runs the retry that is
due, and a `failed` server waits out its half-open cool-down.

A row is keyed by server name and remembers the URL it was written for, so a config
replaced while the object slept starts a fresh cycle. A successful connection, a
changed or removed config delete the row. A retry in flight when the object dies
is not counted: its row still says it is due, so it runs again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert.mcp.config_store import MCP_SCHEMA
from albert.storage.migrations import migrate
from albert.storage.ports import SqlStorage

if TYPE_CHECKING:
    from albert.mcp.retry_policy import RetryState

MAX_ERROR_CHARS = 500


class RetryLog:
    """Reads and writes `mcp_retry_state`: one row per server in a recovery cycle."""

    def __init__(self, sql: SqlStorage) -> None:
        migrate(sql, MCP_SCHEMA)
        self._sql = sql

    def save(self, name: str, url: str, retry: RetryState, last_error: str | None) -> None:
        """Record where a server is in its cycle (a reset state removes the row)."""
        if retry.next_at is None and retry.failed_at is None:
            self.forget(name)
            return
        self._sql.execute(
            "INSERT INTO mcp_retry_state "
            "(name, url, attempts, next_at, failed_at, last_error, final, authorize) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
            "url = excluded.url, attempts = excluded.attempts, next_at = excluded.next_at, "
            "failed_at = excluded.failed_at, last_error = excluded.last_error, "
            "final = excluded.final, authorize = excluded.authorize",
            name,
            url,
            retry.attempts,
            retry.next_at,
            retry.failed_at,
            (last_error or "")[:MAX_ERROR_CHARS] or None,
            int(retry.final),
            int(retry.authorize),
        )

    def load(self, name: str, url: str) -> tuple[RetryState, str | None] | None:
        """The cycle a server of this URL was in, with its last error; None if none."""
        rows = self._sql.execute(
            "SELECT url, attempts, next_at, failed_at, last_error, final, authorize "
            "FROM mcp_retry_state "
            "WHERE name = ?",
            name,
        )
        if not rows or rows[0]["url"] != url:
            return None
        # Loaded with the recovery machinery (albert.mcp.manager), never at start.
        from albert.mcp.retry_policy import RetryState

        row = rows[0]
        retry = RetryState(
            attempts=int(row["attempts"]),
            next_at=None if row["next_at"] is None else float(row["next_at"]),
            failed_at=None if row["failed_at"] is None else float(row["failed_at"]),
            final=bool(row["final"]),
            authorize=bool(row["authorize"]),
        )
        if retry.next_at is None and retry.failed_at is None:
            return None
        error = row["last_error"]
        return retry, None if error is None else str(error)

    def forget(self, name: str) -> None:
        """The server is up, or its config changed or went: no cycle to resume."""
        self._sql.execute("DELETE FROM mcp_retry_state WHERE name = ?", name)
