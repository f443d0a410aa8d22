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
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from data_server.settings import DatabaseLimits
from data_server.store.migrations import migrate_postgres
from data_server.store.run_lock import RUN_FENCE, PipelineLock, PipelineLockLost
from data_server.store.sqlite import (
    UPSERT_VAULT_UPDATE,
    VAULT_COLUMNS,
    VaultStore,
    note_abandoned,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

# How the lease's own connection names itself in pg_stat_activity.
LEASE_APPLICATION_NAME = "albert-pipeline-lease"

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


def connection_settings(
    url: str, limits: DatabaseLimits, *, statement_timeout: bool = True
) -> dict[str, Any]:
    """libpq parameters every connection of the store takes, over what `url` says.

    Keepalives find a peer that went silent (a dropped NAT entry, a failover) while the
    connection idles or waits for an answer; `tcp_user_timeout` does the same for data
    sent and never acknowledged, which keepalives do not cover. Neither helps against a
    server whose kernel still acknowledges but whose process is stopped: callers bound
    their own wait for that (data_server/store/calls.py).
    """
    from psycopg.conninfo import conninfo_to_dict

    dead_after = limits.keepalives_idle_seconds + (
        limits.keepalives_interval_seconds * limits.keepalives_count
    )
    settings: dict[str, Any] = {
        "connect_timeout": limits.connect_timeout_seconds,
        "keepalives": 1,
        "keepalives_idle": limits.keepalives_idle_seconds,
        "keepalives_interval": limits.keepalives_interval_seconds,
        "keepalives_count": limits.keepalives_count,
        "tcp_user_timeout": dead_after * 1000,
    }
    if statement_timeout:
        # Added to any `options` the URL has, not in place of them.
        options = str(conninfo_to_dict(url).get("options") or "")
        millis = max(1, round(limits.statement_timeout_seconds * 1000))
        settings["options"] = f"{options} -c statement_timeout={millis}".strip()
    return settings


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

    backend = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        limits: DatabaseLimits | None = None,
    ) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self.limits = limits or DatabaseLimits()
        # Connection failures, a statement over `statement_timeout`, a pool that had no
        # connection to give within its timeout (PoolTimeout) all derive from this.
        self.unavailable_errors = (psycopg.OperationalError,)
        self._pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"row_factory": _named_rows, **connection_settings(url, self.limits)},
            open=True,
            name="albert-write-store",
            # A caller waits this long for a free connection: while the server is down it
            # hears so, instead of waiting out psycopg's 30 s.
            timeout=float(self.limits.connect_timeout_seconds),
        )
        try:
            self._pool.wait(timeout=30)
            # No statement timeout: a migration may rewrite a large table.
            migration = connection_settings(url, self.limits, statement_timeout=False)
            with psycopg.connect(url, autocommit=True, **migration) as conn:
                self.applied_migrations = migrate_postgres(conn)
        except BaseException:
            self._pool.close()
            raise

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close()

    def _read(self, use: Callable[[Any], T]) -> T:
        """`use(connection)` on a pooled connection, once more if that one was broken.

        A server that restarted or failed over dropped every pooled connection, and each
        is found broken only on its next use: a read (safe to repeat) then has the pool
        test its idle connections, which replaces the dropped ones, and tries again.
        """
        import psycopg

        for attempt in range(2):
            conn = None
            try:
                with self._pool.connection() as conn:
                    return use(conn)
            except psycopg.OperationalError:
                if attempt or conn is None or not conn.broken:
                    raise
                self._pool.check()
        raise AssertionError("not reached: the loop returns or raises")

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        args = tuple(params)
        return self._read(lambda conn: conn.execute(_dialect(sql), args).fetchall())

    def _tuples(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        from psycopg.rows import tuple_row

        args = tuple(params)

        def read(conn: Any) -> list[tuple[Any, ...]]:
            with conn.cursor(row_factory=tuple_row) as cursor:
                return cursor.execute(_dialect(sql), args).fetchall()

        return self._read(read)

    def _write(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        with self._transaction() as conn:
            cursor = conn.execute(sql, tuple(params))
            return cursor.fetchall() if cursor.description is not None else []

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            # A run's write, made under its lease (RUN_FENCE): refused once the lease is
            # not the run's any more, even when it was stuck in a thread until long after.
            fence = RUN_FENCE.get()
            if fence is not None and conn.execute(_LEASE_HELD, fence).fetchone() is None:
                raise PipelineLockLost("the pipeline lease is no longer this run's")
            yield _Connection(conn)

    def ping(self) -> None:
        """One trivial statement on a pooled connection: raises when it cannot answer."""
        self._rows("SELECT 1")

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

    def acquire_pipeline_lock(self) -> PipelineLock:
        """Take the pipeline lease if no run holds it (a true lock), else a false one.

        A lease, not a session's advisory lock: a session can drop under a run that goes on
        (an idle timeout, a failover, a NAT entry forgotten), and the server then frees
        its lock for another replica while the first still writes. A lease lives in a
        table, so a dropped session only costs the holder a reconnect, and it ends on the
        database's clock when its holder stops renewing it, so a replica that died frees
        it without anyone's help. The holder renews it on a connection of its own and stops
        its run (`on_lost`) well before it could lapse; every write of the run checks it
        too (`fenced_by`), so nothing a stopped run still had on its way lands after that.
        (A liveness check of the session would have to stop the run before the server frees
        the lock, which a dropped session does at once: there is no such moment.)

        Taking it closes the runs left `running` as `abandoned`: with the lease free,
        nothing runs them.
        """
        import psycopg

        holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        lease = self.limits.pipeline_lease_seconds
        conn = self._lease_connection()
        try:
            taken_at = time.monotonic()
            with conn.transaction():
                # Taken after any write under way, never beside it: one (a holder's, or a
                # stopped run's last) makes this a skip, as a held lease does, not a wait.
                free = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (WRITE_LOCK,))
                row = None
                if free.fetchone()[0]:
                    row = conn.execute(_TAKE_LEASE, (holder, lease)).fetchone()
                abandoned = []
                if row is not None:
                    closed = conn.execute(_ABANDON_RUNNING, (time.time(),)).fetchall()
                    abandoned = [r[0] for r in closed]
        except BaseException:
            conn.close()
            raise
        if row is None:
            conn.close()
            return PipelineLock(False)
        token = int(row[0])
        lock = LeaseLock(self, conn, holder, token, taken_at, psycopg.OperationalError)
        lock.abandoned = abandoned
        note_abandoned(abandoned)
        return lock

    def close_abandoned_runs(self) -> int:
        """Close the runs left `running` as `abandoned` unless a live lease may be running
        one of them; how many were closed."""
        rows = self._write(_ABANDON_UNLESS_LEASED, (time.time(),))
        note_abandoned([row[0] for row in rows])
        return len(rows)

    def _lease_connection(self) -> Any:
        """A connection of the lease's own, named in pg_stat_activity."""
        import psycopg

        return psycopg.connect(
            self.url,
            autocommit=True,
            application_name=LEASE_APPLICATION_NAME,
            **connection_settings(self.url, self.limits),
        )

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


# The database's clock, so replicas whose clocks differ agree on when a lease ends.
_NOW = "EXTRACT(EPOCH FROM clock_timestamp())::float8"
_TAKE_LEASE = (
    f"UPDATE pipeline_lease SET holder = %s, token = token + 1, expires_at = {_NOW} + %s"
    f" WHERE id = 1 AND (holder IS NULL OR expires_at <= {_NOW}) RETURNING token"
)
# An expired lease is not renewed even when nobody took it: writes were refused meanwhile,
# so the run may have lost some of them and must stop.
_RENEW_LEASE = (
    f"UPDATE pipeline_lease SET expires_at = {_NOW} + %s"
    f" WHERE id = 1 AND holder = %s AND token = %s AND expires_at > {_NOW} RETURNING token"
)
_GIVE_BACK_LEASE = (
    "UPDATE pipeline_lease SET holder = NULL, expires_at = 0"
    " WHERE id = 1 AND holder = %s AND token = %s"
)
_LEASE_HELD = (
    f"SELECT 1 FROM pipeline_lease WHERE id = 1 AND holder = %s AND token = %s"
    f" AND expires_at > {_NOW}"
)
_ABANDON_RUNNING = (
    "UPDATE runs SET status = 'abandoned', finished_at = %s WHERE status = 'running' RETURNING id"
)
# Written with `?`: it goes through `VaultStore._write`.
_ABANDON_UNLESS_LEASED = (
    "UPDATE runs SET status = 'abandoned', finished_at = ? WHERE status = 'running'"
    " AND NOT EXISTS (SELECT 1 FROM pipeline_lease WHERE id = 1 AND holder IS NOT NULL"
    f" AND expires_at > {_NOW}) RETURNING id"
)


def _first_row(cursor: Any) -> Any:
    """The first row a statement returned; None for one that returns no rows at all."""
    return cursor.fetchone() if cursor.description is not None else None


class LeaseLock(PipelineLock):
    """A held pipeline lease, renewed in a thread of its own until released.

    Renewed every sixth of the lease; given up (`on_lost`) once half of it has gone by
    since the last renewal that worked began: the other half is the run's to stop in,
    before the lease can lapse and another replica take it. A renewal that fails on a
    dropped session reconnects and tries again at once.
    """

    def __init__(
        self,
        store: PostgresVaultStore,
        conn: Any,
        holder: str,
        token: int,
        taken_at: float,
        connection_errors: tuple[type[Exception], ...],
    ) -> None:
        super().__init__(True)
        self.holder = holder
        self.token = token
        self.fence = (holder, token)
        self._store = store
        self._conn: Any | None = conn
        self._errors = connection_errors
        self._lease = store.limits.pipeline_lease_seconds
        self._renewed_at = taken_at
        self._released = threading.Event()
        # One statement at a time on the lease's connection (renewals, the release).
        self._conn_lock = threading.Lock()
        self._attempt: threading.Thread | None = None
        self._keeper = threading.Thread(target=self._keep, name="pipeline-lease", daemon=True)
        self._keeper.start()

    def _keep(self) -> None:
        interval, give_up = self._lease / 6, self._lease / 2
        while not self._released.wait(interval):
            # A renewal stuck on a server that stopped answering is not doubled: the
            # deadline below decides.
            if self._attempt is None or not self._attempt.is_alive():
                self._attempt = threading.Thread(
                    target=self._renew, name="pipeline-lease-renewal", daemon=True
                )
                self._attempt.start()
            if self.lost_reason is not None:
                return
            if time.monotonic() - self._renewed_at > give_up:
                self._lose(f"the lease could not be renewed for {give_up:g} s")
                return

    def _renew(self) -> None:
        started = time.monotonic()
        try:
            row = self._statement(_RENEW_LEASE, (self._lease, self.holder, self.token))
        except Exception as exc:  # the keeper's deadline decides when to give up
            if not self._released.is_set():
                log.warning("pipeline lease not renewed, will retry: %s", exc)
            return
        finally:
            if self._released.is_set():
                # A renewal that outlived the release closes the connection it kept.
                self._close_connection(wait=0)
        if self._released.is_set():
            return
        if row is None:
            self._lose("the lease lapsed or another run took it")
        else:
            self._renewed_at = started

    def _statement(self, sql: str, params: tuple[Any, ...], *, wait: float = -1) -> Any:
        """One statement on the lease's connection, a dropped session reconnected once.

        When that connection is still busy after `wait` seconds (a renewal stuck on a
        server that stopped answering), the statement goes on a connection of its own.
        """
        if not self._conn_lock.acquire(timeout=wait):
            with self._store._lease_connection() as own:
                return _first_row(own.execute(sql, params))
        try:
            for attempt in range(2):
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = self._store._lease_connection()
                    return _first_row(self._conn.execute(sql, params))
                except self._errors:
                    broken, self._conn = self._conn, None
                    if broken is not None:
                        broken.close()
                    if attempt:
                        raise
            return None  # not reached: the loop returns or raises
        finally:
            self._conn_lock.release()

    def _close_connection(self, *, wait: float) -> None:
        if not self._conn_lock.acquire(timeout=wait):
            return  # the renewal holding it closes it when it returns
        try:
            conn, self._conn = self._conn, None
        finally:
            self._conn_lock.release()
        if conn is not None:
            conn.close()

    def release(self) -> None:
        """Give the lease back and close its connection; never raises. A lease that cannot
        be given back (the database unreachable) lapses within `lease` seconds."""
        if self._released.is_set():
            return
        self._released.set()
        try:
            self._statement(_GIVE_BACK_LEASE, (self.holder, self.token), wait=1.0)
        except Exception as exc:
            log.warning(
                "pipeline lease not given back (%s); it lapses within %g s", exc, self._lease
            )
        self._close_connection(wait=0)
