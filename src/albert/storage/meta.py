"""The object's own facts (key → value): above all its identity, tenant and client id.

The one home of the object's identity: the Durable Object glue records the tenant
from the first verified request, analytics the client id, and both are read back
when a hibernated object wakes without a request (a socket message, an alarm).
"""

from __future__ import annotations

from albert.storage.migrations import THREADS, migrate
from albert.storage.ports import SqlStorage

TENANT = "tenant"
CLIENT_ID = "client_id"


class ObjectMeta:
    """Reads and writes `object_meta`; applies pending migrations first."""

    def __init__(self, sql: SqlStorage) -> None:
        migrate(sql, THREADS)
        self._sql = sql

    def get(self, key: str) -> str | None:
        """The value recorded under `key`, if any."""
        rows = self._sql.execute("SELECT value FROM object_meta WHERE key = ?", key)
        return str(rows[0]["value"]) if rows else None

    def set(self, key: str, value: str) -> None:
        """Record `value` under `key`, replacing what was there."""
        self._sql.execute(
            "INSERT INTO object_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            key,
            value,
        )
