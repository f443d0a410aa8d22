"""The write store on PostgreSQL: the same store, reached through a psycopg 3 connection pool.

Chosen by ``DATABASE_URL=postgresql://…`` (`open_store`), so several data-server replicas
share one write store. Everything above the connection is `VaultStore`'s: the same
statements (written with ``?``, sent as ``%s``), the same revisions and publish state;
this adapter supplies connections, transactions, the migrations' PostgreSQL expressions
and the few statements SQLite and PostgreSQL spell differently. psycopg is imported only
here, so an installation without the ``postgres`` extra runs on SQLite alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from data_server.store.migrations import migrate_postgres
from data_server.store.sqlite import UPSERT_VAULT_UPDATE, VAULT_COLUMNS, VaultStore

# The pipeline's run lock: a session-level advisory lock, held by one replica's run.
PIPELINE_LOCK = 0x616C62657270

# Writers take this transaction-level advisory lock first: like SQLite's BEGIN IMMEDIATE,
# one changing transaction at a time, so "the next revision" is read and taken atomically
# by whichever replica writes.
WRITE_LOCK = 0x616C62657275


class _Row:
    """A row readable by column name and by position, as `sqlite3.Row` is."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _named_rows(cursor: Any) -> Any:
    names = [column.name for column in cursor.description or ()]
    index = {name: i for i, name in enumerate(names)}

    def make(values: Sequence[Any]) -> _Row:
        return _Row(values, index)

    return make


def _dialect(sql: str) -> str:
    """The store's `?` placeholders as psycopg's `%s` (a literal `%` doubled first)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _Connection:
    """What `VaultStore` uses of a connection inside a transaction: execute, executemany."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    @property
    def connection(self) -> Any:
        """The psycopg connection, for what only PostgreSQL does (COPY)."""
        return self._conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(_dialect(sql), tuple(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = [tuple(row) for row in rows]
        if batch:
            with self._conn.cursor() as cursor:
                cursor.executemany(_dialect(sql), batch)


class PostgresVaultStore(VaultStore):
    """The write store in a PostgreSQL database; migrates itself on open, like SQLite's."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self._pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"row_factory": _named_rows},
            open=True,
            name="albert-write-store",
        )
        try:
            self._pool.wait(timeout=30)
            with psycopg.connect(url, autocommit=True) as conn:
                self.applied_migrations = migrate_postgres(conn)
        except BaseException:
            self._pool.close()
            raise

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close()

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        with self._pool.connection() as conn:
            return conn.execute(_dialect(sql), tuple(params)).fetchall()

    def _tuples(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        from psycopg.rows import tuple_row

        with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            return cursor.execute(_dialect(sql), tuple(params)).fetchall()

    def _write(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        with self._transaction() as conn:
            cursor = conn.execute(sql, tuple(params))
            return cursor.fetchall() if cursor.description is not None else []

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield _Connection(conn)

    def _write_vault_rows(self, conn: Any, rows: list[tuple[Any, ...]]) -> None:
        """COPY the rows into a session table, then one upsert from it: a statement per
        row, even pipelined, took three times as long as SQLite's. One statement may not
        upsert a row twice, so of a vault listed twice its last row is taken, which is
        what the row-by-row upsert leaves."""
        if not rows:
            return
        raw = conn.connection
        raw.execute(
            "CREATE TEMP TABLE IF NOT EXISTS vault_rows (LIKE vaults, ord INTEGER)"
            " ON COMMIT DELETE ROWS"
        )
        with (
            raw.cursor() as cursor,
            cursor.copy(f"COPY vault_rows ({VAULT_COLUMNS}, ord) FROM STDIN") as copy,
        ):
            for ord_, row in enumerate(rows):
                copy.write_row((*row, ord_))
        raw.execute(
            f"INSERT INTO vaults ({VAULT_COLUMNS}) SELECT DISTINCT ON (id) {VAULT_COLUMNS}"
            " FROM vault_rows ORDER BY id, ord DESC" + _dialect(UPSERT_VAULT_UPDATE)
        )

    @contextmanager
    def pipeline_lock(self) -> Iterator[bool]:
        """Hold the right to run the pipeline, if no replica holds it (True inside the
        block), on a connection of its own: the server drops the advisory lock with the
        session, so a replica that dies mid-run does not keep it."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (PIPELINE_LOCK,)).fetchone()
            acquired = bool(row[0]) if row is not None else False
            try:
                yield acquired
            finally:
                if acquired:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (PIPELINE_LOCK,))

    @contextmanager
    def checkpoints_deferred(self) -> Iterator[None]:
        """Nothing to defer: PostgreSQL checkpoints on its own schedule."""
        yield

    def checkpoint(self) -> None:
        """Nothing to do: PostgreSQL's WAL is the server's to manage."""

    def single_token_namings(self) -> list[tuple[str, str, list[str]]]:
        """(chain, token, asset symbols) of every stored vault of one token with symbols."""
        rows = self._tuples(
            "SELECT chain, doc->'underlying_tokens'->>0, (doc->'asset_symbols')::text"
            " FROM (SELECT id, chain, record::jsonb AS doc FROM vaults) AS v"
            " WHERE CASE WHEN jsonb_typeof(doc->'underlying_tokens') = 'array'"
            " THEN jsonb_array_length(doc->'underlying_tokens') ELSE 0 END = 1"
            " AND CASE WHEN jsonb_typeof(doc->'asset_symbols') = 'array'"
            " THEN jsonb_array_length(doc->'asset_symbols') ELSE 0 END > 0 ORDER BY id"
        )
        return [(r[0], r[1], json.loads(r[2])) for r in rows]
