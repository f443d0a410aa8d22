"""SqlStorage over a Durable Object's `ctx.storage.sql`.

The contract both runtimes are held to (tests/cloudflare/test_storage_port.py):

- bindings: None is SQL NULL, bytes is a BLOB, bool is 0/1, int/float/str as is;
- rows are plain dicts keyed by column name, in the statement's column order;
- NULL comes back as None, BLOB as bytes, TEXT as str, INTEGER as int;
- a REAL that holds a whole number may come back as int on Cloudflare (a JS
  number has no int/float distinction): compare REALs by value, never by type;
- a statement that fails raises SqlError and changes nothing; explicit transactions
  (BEGIN/COMMIT/ROLLBACK/SAVEPOINT) are refused, as the platform refuses them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from albert.cloudflare.ffi import js_null, py_value, to_js_bytes
from albert.storage.ports import Row

_TRANSACTION_WORDS = ("BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")


class SqlError(RuntimeError):
    """A statement failed (syntax, constraint, type); the platform's message is kept."""


class TransactionRefused(SqlError):
    """The core tried to manage a transaction; the platform makes each event atomic itself."""


def sql_binding(value: Any, null: Any = None) -> Any:
    """One `?` binding as the platform's SQL API accepts it."""
    if value is None:
        # Python None crosses into JS as `undefined`, which bindings reject: send null.
        return null
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return to_js_bytes(value)
    return value


@lru_cache(maxsize=1024)
def _manages_transaction(sql: str) -> bool:
    # Statements are a few constant strings: classify each once.
    first = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
    return first in _TRANSACTION_WORDS


def _rows(cursor: Any) -> list[Any]:
    to_array = getattr(cursor, "toArray", None)
    if to_array is not None:
        return list(py_value(to_array()) or [])
    return [py_value(row) for row in cursor]


class WorkersSql:
    """The storage port on the platform's synchronous SQL API."""

    def __init__(self, sql: Any) -> None:
        self._sql = sql
        self.rows_read = 0
        self.rows_written = 0

    def execute(self, sql: str, *params: Any) -> list[Row]:
        """Run one statement with `?` bindings and return its rows as plain dicts."""
        if _manages_transaction(sql):
            raise TransactionRefused(
                "explicit transactions are not allowed on ctx.storage.sql; "
                "each event handler's writes are already atomic"
            )
        null = js_null()
        try:
            cursor = self._sql.exec(sql, *(sql_binding(p, null) for p in params))
            # py_value already made each row a fresh dict; anything else is copied into one.
            rows = [row if type(row) is dict else dict(row) for row in _rows(cursor)]
        except SqlError:
            raise
        except Exception as exc:
            # sqlite3.Error locally, a JsException on Cloudflare: one type for the core.
            raise SqlError(str(exc)) from exc
        # The counters grow as the cursor is consumed, so read them afterwards.
        self.rows_read += int(py_value(getattr(cursor, "rowsRead", 0)) or 0)
        self.rows_written += int(py_value(getattr(cursor, "rowsWritten", 0)) or 0)
        return rows
