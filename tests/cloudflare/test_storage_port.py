"""The SQL storage port (albert.storage.ports.SqlStorage) on both runtimes.

Contract (src/albert/cloudflare/sql.py): None/bytes/bool bindings, plain-dict rows
in column order, NULL → None, BLOB → bytes, failed statements change nothing,
explicit transactions refused.
"""

from __future__ import annotations

import pytest

from albert.cloudflare.sql import SqlError, TransactionRefused, WorkersSql
from albert.storage.migrations import THREADS, migrate
from albert.storage.threads import ThreadStore
from tests.cloudflare.conftest import Platform


class _StepClock:
    """A clock that moves one second per reading, so orderings are exact."""

    def __init__(self) -> None:
        self._now = 1_764_000_000_000

    def now_ms(self) -> int:
        self._now += 1000
        return self._now

    def monotonic(self) -> float:
        return self._now / 1000


def _sql(platform: Platform) -> WorkersSql:
    sql = WorkersSql(platform.ctx.storage.sql)
    sql.execute(
        "CREATE TABLE t "
        "(id INTEGER PRIMARY KEY, name TEXT UNIQUE, score REAL, blob BLOB, flag INTEGER)"
    )
    return sql


async def test_values_round_trip_as_plain_python(platform: Platform) -> None:
    sql = _sql(platform)
    sql.execute(
        "INSERT INTO t (id, name, score, blob, flag) VALUES (?, ?, ?, ?, ?)",
        1,
        "zoë ✓",
        2.5,
        b"\x00\xffbin",
        True,
    )
    sql.execute(
        "INSERT INTO t (id, name, score, blob, flag) VALUES (?, ?, ?, ?, ?)",
        2,
        None,
        None,
        None,
        False,
    )
    rows = sql.execute("SELECT id, name, score, blob, flag FROM t ORDER BY id")
    assert rows == [
        {"id": 1, "name": "zoë ✓", "score": 2.5, "blob": b"\x00\xffbin", "flag": 1},
        {"id": 2, "name": None, "score": None, "blob": None, "flag": 0},
    ]
    for row in rows:
        assert type(row) is dict
        assert list(row) == ["id", "name", "score", "blob", "flag"]
    assert type(rows[0]["id"]) is int and type(rows[0]["blob"]) is bytes


async def test_null_binding_is_sql_null_not_a_rejected_undefined(platform: Platform) -> None:
    sql = _sql(platform)
    sql.execute("INSERT INTO t (id, name) VALUES (?, ?)", 7, None)
    assert sql.execute("SELECT COUNT(*) AS n FROM t WHERE name IS NULL") == [{"n": 1}]


async def test_large_integers_and_whole_reals(platform: Platform) -> None:
    sql = _sql(platform)
    millis = 1_764_000_000_123
    sql.execute("INSERT INTO t (id, score) VALUES (?, ?)", millis, 3.0)
    [row] = sql.execute("SELECT id, score FROM t")
    assert row["id"] == millis and type(row["id"]) is int
    # A whole REAL may come back as int on Cloudflare: the contract is equality.
    assert row["score"] == 3.0


async def test_write_statements_return_no_rows_and_returning_does(platform: Platform) -> None:
    sql = _sql(platform)
    assert sql.execute("INSERT INTO t (id, name) VALUES (?, ?)", 1, "a") == []
    assert sql.rows_written >= 1
    returned = sql.execute("INSERT INTO t (id, name) VALUES (?, ?) RETURNING id, name", 2, "b")
    assert returned == [{"id": 2, "name": "b"}]
    assert sql.execute("SELECT * FROM t WHERE id = ?", 99) == []
    before = sql.rows_read
    sql.execute("SELECT * FROM t")
    assert sql.rows_read >= before + 2


async def test_failed_statement_raises_and_changes_nothing(platform: Platform) -> None:
    sql = _sql(platform)
    sql.execute("INSERT INTO t (id, name) VALUES (1, 'a')")
    with pytest.raises(SqlError) as caught:
        sql.execute("INSERT INTO t (id, name) VALUES (2, 'a')")
    assert "UNIQUE" in str(caught.value)
    with pytest.raises(SqlError):
        sql.execute("SELEC nonsense")
    assert sql.execute("SELECT id FROM t") == [{"id": 1}]


@pytest.mark.parametrize("statement", ["BEGIN", "begin transaction", "  COMMIT", "SAVEPOINT s1"])
async def test_explicit_transactions_are_refused(platform: Platform, statement: str) -> None:
    sql = _sql(platform)
    with pytest.raises(TransactionRefused):
        sql.execute(statement)


async def test_the_thread_store_runs_on_the_adapter(platform: Platform) -> None:
    """The core's real migrations and thread store, end to end through the port."""
    sql = WorkersSql(platform.ctx.storage.sql)
    migrate(sql, THREADS)
    migrate(sql, THREADS)  # idempotent
    store = ThreadStore(sql, _StepClock())
    for n in range(3):
        store.create_thread(f"thread-{n}", None if n == 0 else f"title {n}")
    store.touch("thread-0")
    first, cursor = store.list_threads(limit=2)
    rest, end = store.list_threads(limit=2, cursor=cursor)
    assert first[0].id == "thread-0"
    assert len(first) == 2 and len(rest) == 1 and end is None
    assert {t.id for t in [*first, *rest]} == {"thread-0", "thread-1", "thread-2"}
    store.delete_thread("thread-1")
    assert store.count_threads() == 2 and not store.has_thread("thread-1")
