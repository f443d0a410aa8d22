"""SqlStorage over a Durable Object's `ctx.storage.sql`.

The contract both runtimes are held to (tests/cloudflare/test_storage_port.py):

- bindings: None is SQL NULL, bytes is a BLOB, bool is 0/1, int/float/str as is;
- rows are plain dicts keyed by column name, in the statement's column order;
- NULL comes back as None, BLOB as bytes, TEXT as str, INTEGER as int (the Workers SDK's
  wrapper of `ctx.storage` hands rows over as its own dict type, BLOBs as memoryview);
- a REAL that holds a whole number may come back as int on Cloudflare (a JS
  number has no int/float distinction): compare REALs by value, never by type;
- a statement that fails raises SqlError and changes nothing; explicit transactions
  (BEGIN/COMMIT/ROLLBACK/SAVEPOINT) are refused, as the platform refuses them;
- `transaction(work)` runs `work` through `ctx.storage.transactionSync`: its writes
  commit together, or none stays and `work`'s own exception is raised again; nothing
  of `work` stays alive after the call (the Workers SDK's wrapper of `ctx.storage` would
  keep every callback for good, so the call goes to the JS object behind it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

from albert.cloudflare.ffi import create_proxy, js_binding, js_null, py_value, to_js_bytes
from albert.storage.ports import Row, StorageError

T = TypeVar("T")
_UNSET: Any = object()
# Bindings the platform takes unchanged: nearly every one (bool is not among them).
_AS_IS = frozenset({str, int, float})
_TRANSACTION_WORDS = ("BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")


class SqlError(StorageError):
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
        array = to_array()
        if len(array) == 0:
            return []  # a write: nothing to convert
        if isinstance(array, list):
            # Rows that are Python already (the local runtime's: a JS array is a proxy,
            # never a list): fresh dicts of SQLite's own values, made for this statement.
            # Converting them would only copy every row once more.
            return array
        return list(py_value(array) or [])
    return [py_value(row) for row in cursor]


class WorkersSql:
    """The storage port on the platform's synchronous SQL API."""

    def __init__(self, sql: Any, storage: Any = None) -> None:
        """`sql` is `ctx.storage.sql`; `storage`, `ctx.storage`, gives transactions."""
        self._sql = sql
        # The SDK's wrapper would turn each callback into a proxy that is never destroyed.
        self._storage = None if storage is None else js_binding(storage)
        self._null: Any = _UNSET
        self._as_is = _AS_IS
        self.rows_read = 0
        self.rows_written = 0

    def transaction(self, work: Callable[[], T]) -> T:
        """Run `work` as one transaction (`ctx.storage.transactionSync`)."""
        if self._storage is None:
            raise TransactionRefused("no ctx.storage was given, so no transactionSync")
        # transactionSync calls back before it returns, so the callback's proxy is
        # destroyed right after: nothing of `work` (a turn's state) outlives the call.
        # What comes back across the boundary is kept here instead: the value as Python
        # made it, and the exception `work` raised rather than the JS error carrying it.
        results: list[T] = []
        failures: list[BaseException] = []

        def run() -> None:
            try:
                results.append(work())
            except BaseException as exc:
                failures.append(exc)
                raise

        proxy = create_proxy(run)
        try:
            self._storage.transactionSync(run if proxy is None else proxy)
        except BaseException as exc:
            if failures:
                raise failures[0] from None
            if isinstance(exc, Exception) and not isinstance(exc, SqlError):
                # The commit itself failed (a JsException on Cloudflare).
                raise SqlError(str(exc)) from exc
            raise
        finally:
            if proxy is not None:
                proxy.destroy()
        return results[0]

    def execute(self, sql: str, *params: Any) -> list[Row]:
        """Run one statement with `?` bindings and return its rows as plain dicts."""
        if _manages_transaction(sql):
            raise TransactionRefused(
                "explicit transactions are not allowed on ctx.storage.sql; "
                "each event handler's writes are already atomic"
            )
        null = self._null
        if null is _UNSET:
            # Looked up once per adapter (an import each time is a cost per statement).
            null = self._null = js_null()
            # Where `null` is None (no JS boundary) a None binding goes as it is too.
            self._as_is = _AS_IS | {type(None)} if null is None else _AS_IS
        as_is = self._as_is
        for param in params:
            if type(param) not in as_is:
                params = tuple(p if type(p) in as_is else sql_binding(p, null) for p in params)
                break
        try:
            cursor = self._sql.exec(sql, *params)
            # py_value already made each row a fresh dict. Rows the Workers SDK converted
            # (its wrapper of ctx.storage) are dicts of its own type with each BLOB as a
            # memoryview: those are made plain, BLOBs bytes.
            rows = [row if type(row) is dict else py_value(row) for row in _rows(cursor)]
        except SqlError:
            raise
        except Exception as exc:
            # sqlite3.Error locally, a JsException on Cloudflare: one type for the core.
            raise SqlError(str(exc)) from exc
        # The counters grow as the cursor is consumed, so read them afterwards.
        self.rows_read += int(py_value(getattr(cursor, "rowsRead", 0)) or 0)
        self.rows_written += int(py_value(getattr(cursor, "rowsWritten", 0)) or 0)
        return rows
