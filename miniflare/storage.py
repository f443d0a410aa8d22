"""`ctx.storage` of a local Durable Object: SQL on one SQLite file, and alarms."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger(__name__)

# Files closed at once on a stop. Closing a file is its WAL checkpoint, mostly waiting on
# the disk (fsyncs): a hundred objects' files closed one after the other took ~1 s of the
# 2 s a stop may take on a busy machine; SQLite lets go of the GIL meanwhile.
CLOSE_THREADS = 8


class JsArray(list[Any]):
    """A list that, like a Pyodide JsProxy array, converts with `to_py()`."""

    def to_py(self) -> list[Any]:
        return list(self)


class SqlCursor:
    """The result of `sql.exec`: rows plus the counters the platform reports."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        description = cursor.description
        if description is None:
            # A statement without result columns (a write) ran to its end in `execute`.
            self.columnNames: list[str] = []
            self._rows: list[dict[str, Any]] = []
            self.rowsRead = 0
            self.rowsWritten = max(cursor.rowcount, 0)
            return
        self.columnNames = names = [d[0] for d in description]
        # A row has exactly one value per column: zip needs no length check here.
        self._rows = [dict(zip(names, row, strict=False)) for row in cursor.fetchall()]
        self.rowsRead = len(self._rows)
        self.rowsWritten = 0

    def toArray(self) -> JsArray:
        return JsArray(self._rows)

    def one(self) -> dict[str, Any]:
        if len(self._rows) != 1:
            raise ValueError(f"Expected exactly one result from SQL query, got {len(self._rows)}")
        return self._rows[0]

    def raw(self) -> Iterator[list[Any]]:
        return iter([list(r.values()) for r in self._rows])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)


@lru_cache(maxsize=1024)
def _opens_transaction(query: str) -> bool:
    # A handful of constant statements run over and over: classify each text once.
    return query.strip().upper().startswith(("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT"))


@lru_cache(maxsize=1024)
def _is_schema_change(query: str) -> bool:
    """One CREATE, ALTER or DROP statement: nothing but blanks after its end (more than one
    statement goes through `execute`, which refuses it as before)."""
    if not query.lstrip().upper().startswith(("CREATE ", "ALTER ", "DROP ")):
        return False
    end = query.find(";")
    while end != -1:
        # SQLite's own reading: a `;` in a literal, a comment or a trigger's body ends nothing.
        if sqlite3.complete_statement(query[: end + 1]):
            return not query[end + 1 :].strip()
        end = query.find(";", end + 1)
    return True


class SqlStorage:
    """`ctx.storage.sql`: synchronous, autocommit, one statement per call.

    `max_bytes` caps the database as the platform caps an object's storage: a write that
    needs more space fails with SQLITE_FULL ("database or disk is full"), the error a full
    disk gives. None: no cap.
    """

    def __init__(self, path: Path, max_bytes: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL with NORMAL sync survives a crash of this process (not of the machine);
        # a full fsync per autocommitted statement made local turns disk-bound.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        # One cursor for every statement: `connection.execute` makes a cursor per call, and
        # the connection keeps a weak reference to each one it made, dropping the dead ones
        # only every 200 cursors; with a thousand objects that was ~100 collector-tracked
        # weak references per object that every full garbage collection walked. Each
        # statement's rows are read before the next statement runs (all on one thread).
        self._cursor = self._db.cursor()
        self._depth = 0
        if max_bytes is not None:
            page_size = self._cursor.execute("PRAGMA page_size").fetchone()[0]
            # SQLite keeps a cap below the current size at the current size.
            self._cursor.execute(f"PRAGMA max_page_count = {max(1, max_bytes // page_size)}")

    def exec(self, query: str, *bindings: Any) -> SqlCursor:
        if _opens_transaction(query):
            # The platform refuses explicit transactions (it makes each event atomic itself).
            raise NotImplementedError("explicit transactions are not allowed in ctx.storage.sql")
        if not bindings and _is_schema_change(query) and not self._db.in_transaction:
            # A schema statement runs once per object (its migrations, each wake's `CREATE
            # TABLE IF NOT EXISTS`): kept out of sqlite3's statement cache, where the
            # compiled triggers and tables held ~90 KiB of RSS per object for good. `executescript`
            # prepares it afresh and commits nothing (no transaction is open).
            return SqlCursor(self._cursor.executescript(query))
        return SqlCursor(self._cursor.execute(query, bindings))

    def run_transaction(self, callback: Callable[[], T]) -> T:
        """`ctx.storage.transactionSync`: `callback` commits as a whole or not at all.

        A savepoint, so calls nest as on the platform; the outermost one commits.
        """
        self._depth += 1
        name = f"tx{self._depth}"
        cursor = self._cursor
        cursor.execute(f"SAVEPOINT {name}")
        try:
            result = callback()
            cursor.execute(f"RELEASE {name}")
        except BaseException:
            # SQLite may have rolled the whole transaction back itself (e.g. a full disk).
            if self._db.in_transaction:
                cursor.execute(f"ROLLBACK TO {name}")
                cursor.execute(f"RELEASE {name}")
            raise
        finally:
            self._depth -= 1
        return result

    @property
    def databaseSize(self) -> int:
        page_count = self._cursor.execute("PRAGMA page_count").fetchone()[0]
        page_size = self._cursor.execute("PRAGMA page_size").fetchone()[0]
        return int(page_count * page_size)

    def close(self) -> None:
        self._db.close()


def close_all(storages: Sequence[SqlStorage]) -> None:
    """Close many objects' files, several at once; one that fails is logged, the rest
    are closed all the same."""

    def close(storage: SqlStorage) -> None:
        try:
            storage.close()
        except Exception:
            log.exception("an object's storage failed to close")

    if len(storages) < 2:
        for storage in storages:
            close(storage)
        return
    workers = min(CLOSE_THREADS, len(storages))
    with ThreadPoolExecutor(workers, thread_name_prefix="storage-close") as pool:
        for _ in pool.map(close, storages):
            pass


class DurableObjectStorage:
    """`ctx.storage`: the SQL API and the alarm, nothing else (the project uses nothing else)."""

    def __init__(
        self,
        path: Path,
        on_alarm_change: Callable[[int | None], None],
        max_bytes: int | None = None,
    ) -> None:
        self.sql = SqlStorage(path, max_bytes)
        self._alarm_file = path.with_suffix(".alarm.json")
        self._on_alarm_change = on_alarm_change

    def transactionSync(self, callback: Callable[[], T]) -> T:
        """Run `callback` as one transaction: rolled back, and re-raised, if it raises."""
        return self.sql.run_transaction(callback)

    async def getAlarm(self) -> int | None:
        return self.stored_alarm()

    async def setAlarm(self, scheduled_time_ms: int | float) -> None:
        """Set the alarm to a time in Unix ms (a number; workerd refuses anything else)."""
        if isinstance(scheduled_time_ms, bool) or not isinstance(scheduled_time_ms, int | float):
            raise TypeError(
                "Failed to execute 'setAlarm' on 'DurableObjectStorage': "
                "parameter 1 is not of type 'date'."
            )
        when = int(scheduled_time_ms)
        self._alarm_file.write_text(json.dumps({"at": when}))
        self._on_alarm_change(when)

    async def deleteAlarm(self) -> None:
        self._alarm_file.unlink(missing_ok=True)
        self._on_alarm_change(None)

    def stored_alarm(self) -> int | None:
        """The persisted alarm time (Unix ms), surviving restarts."""
        try:
            return int(json.loads(self._alarm_file.read_text())["at"])
        except (FileNotFoundError, ValueError, KeyError):
            return None

    def clear_fired_alarm(self, when: int) -> None:
        """Drop the alarm once it ran, unless the handler set a new one."""
        if self.stored_alarm() == when:
            self._alarm_file.unlink(missing_ok=True)

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"the local runtime does not implement ctx.storage.{name}")
