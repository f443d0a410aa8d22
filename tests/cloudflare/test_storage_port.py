"""The SQL storage port (albert.storage.ports.SqlStorage) on both runtimes.

Contract (src/albert/cloudflare/sql.py): None/bytes/bool bindings, plain-dict rows
in column order, NULL → None, BLOB → bytes, failed statements change nothing,
explicit transactions refused, `transaction(work)` all or nothing.
"""

from __future__ import annotations

import pytest

from albert.cloudflare.sql import SqlError, TransactionRefused, WorkersSql
from albert.storage.migrations import THREADS, migrate
from albert.storage.threads import ThreadStore
from tests.cloudflare.platform import Platform


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
    sql = WorkersSql(platform.ctx.storage.sql, platform.ctx.storage)
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


async def test_full_text_search_with_fts5(platform: Platform) -> None:
    # Thread search indexes questions and answers with FTS5 (albert.storage.migrations).
    sql = _sql(platform)
    sql.execute("CREATE VIRTUAL TABLE docs USING fts5(body, thread UNINDEXED)")
    sql.execute("INSERT INTO docs (body, thread) VALUES (?, ?)", "USDC vaults on Base", "a")
    sql.execute("INSERT INTO docs (body, thread) VALUES (?, ?)", "PEPE is a meme token", "b")
    found = sql.execute(
        "SELECT thread, snippet(docs, 0, '[', ']', '…', 4) AS s FROM docs WHERE docs MATCH ?",
        '"vaults"',
    )
    assert found == [{"thread": "a", "s": "USDC [vaults] on Base"}]


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


def _names(sql: WorkersSql) -> list[str]:
    return [r["name"] for r in sql.execute("SELECT name FROM t ORDER BY id")]


async def test_a_transaction_commits_its_writes_and_returns_the_work_s_value(
    platform: Platform,
) -> None:
    sql = _sql(platform)

    def work() -> dict[str, int]:
        sql.execute("INSERT INTO t (id, name) VALUES (1, 'a')")
        sql.execute("INSERT INTO t (id, name) VALUES (2, 'b')")
        # The work reads its own writes.
        return {"seen": len(sql.execute("SELECT id FROM t"))}

    assert sql.transaction(work) == {"seen": 2}
    assert _names(sql) == ["a", "b"]
    woken = WorkersSql(platform.wake().storage.sql)
    assert _names(woken) == ["a", "b"]


class _Fault(Exception):
    """Raised by a test in the middle of a transaction."""


async def test_a_transaction_that_raises_leaves_nothing_and_raises_its_own_error(
    platform: Platform,
) -> None:
    sql = _sql(platform)
    sql.execute("INSERT INTO t (id, name) VALUES (1, 'kept')")
    fault = _Fault("midway")

    def work() -> None:
        sql.execute("INSERT INTO t (id, name) VALUES (2, 'half')")
        sql.execute("UPDATE t SET score = 9 WHERE id = 1")
        raise fault

    with pytest.raises(_Fault) as caught:
        sql.transaction(work)
    assert caught.value is fault
    assert sql.execute("SELECT id, name, score FROM t") == [
        {"id": 1, "name": "kept", "score": None}
    ]
    # The adapter is usable afterwards, in and out of transactions.
    sql.transaction(lambda: sql.execute("INSERT INTO t (id, name) VALUES (3, 'c')"))
    assert _names(sql) == ["kept", "c"]


async def test_a_failing_statement_rolls_back_the_whole_transaction(platform: Platform) -> None:
    sql = _sql(platform)
    sql.execute("INSERT INTO t (id, name) VALUES (1, 'a')")

    def work() -> None:
        sql.execute("INSERT INTO t (id, name) VALUES (2, 'b')")
        sql.execute("INSERT INTO t (id, name) VALUES (3, 'a')")  # UNIQUE

    with pytest.raises(SqlError) as caught:
        sql.transaction(work)
    assert "UNIQUE" in str(caught.value)
    assert _names(sql) == ["a"]


async def test_transactions_nest(platform: Platform) -> None:
    sql = _sql(platform)

    def inner() -> None:
        sql.execute("INSERT INTO t (id, name) VALUES (2, 'inner')")
        raise _Fault("inner only")

    def outer() -> None:
        sql.execute("INSERT INTO t (id, name) VALUES (1, 'outer')")
        with pytest.raises(_Fault):
            sql.transaction(inner)
        sql.transaction(lambda: sql.execute("INSERT INTO t (id, name) VALUES (3, 'later')"))

    sql.transaction(outer)
    assert _names(sql) == ["outer", "later"]


async def test_explicit_transactions_stay_refused_inside_one(platform: Platform) -> None:
    sql = _sql(platform)
    with pytest.raises(TransactionRefused):
        sql.transaction(lambda: sql.execute("COMMIT"))
    sql.execute("INSERT INTO t (id, name) VALUES (1, 'a')")
    assert _names(sql) == ["a"]


async def test_no_transaction_without_the_storage_object(platform: Platform) -> None:
    sql = WorkersSql(platform.ctx.storage.sql)
    with pytest.raises(TransactionRefused):
        sql.transaction(lambda: None)


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
