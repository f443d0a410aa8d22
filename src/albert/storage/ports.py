"""The SQL storage port: what the core needs from a Durable Object's SQLite."""

from __future__ import annotations

from typing import Any, Protocol

Row = dict[str, Any]


class SqlStorage(Protocol):
    """Synchronous SQL, as `ctx.storage.sql.exec` is on Cloudflare.

    Statements run in autocommit mode; the platform makes each event handler's
    writes atomic, so the core never issues BEGIN/COMMIT itself.
    """

    def execute(self, sql: str, *params: Any) -> list[Row]:
        """Run one statement with `?` bindings and return its rows as dicts."""
        ...
