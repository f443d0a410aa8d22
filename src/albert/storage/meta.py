"""Small key-value facts about the object itself."""

from __future__ import annotations

from albert.storage.migrations import migrate
from albert.storage.ports import SqlStorage


class ObjectMeta:
    """Reads and writes `object_meta`; applies pending migrations first."""

    def __init__(self, sql: SqlStorage) -> None:
        migrate(sql)
        self._sql = sql

    def get(self, key: str) -> str | None:
        rows = self._sql.execute("SELECT value FROM object_meta WHERE key = ?", key)
        return str(rows[0]["value"]) if rows else None

    def set(self, key: str, value: str) -> None:
        self._sql.execute(
            "INSERT INTO object_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            key,
            value,
        )
