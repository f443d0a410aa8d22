"""The relational write store: vaults, their daily history, the run log and publications.

One SQLite file (stdlib ``sqlite3``, WAL mode so readers are not blocked by the pipeline).
Vaults are upserted by their stable id; a row changes only when its content changes, and
each changing write takes the next store *revision*, so "what changed since the last
publish" is a single comparison. History points are keyed by ``(vault_id, timestamp)``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import sqlite3
import statistics
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from pydantic import BaseModel, Field

from data_server.store.migrations import migrate
from data_server.store.run_lock import FileLock, PipelineLock, ThreadLock
from data_server.vaults.model import HistoryPoint, Vault

# `abandoned`: a run found `running` by a later one that holds the run lock, so nothing
# runs it any more (its process was killed, or it lost the lock and could not say so).
RunStatus = Literal["running", "ok", "partial", "failed", "abandoned"]

_ABANDON_RUNNING = (
    "UPDATE runs SET status = 'abandoned', finished_at = ? WHERE status = 'running' RETURNING id"
)

log = logging.getLogger(__name__)


def note_abandoned(run_ids: list[str]) -> None:
    """Log the runs a lock holder closed as abandoned."""
    if run_ids:
        log.warning(
            "pipeline runs left running by a run that stopped mid-way, closed as abandoned: %s",
            ", ".join(sorted(run_ids)),
        )


class UpsertCounts(BaseModel):
    """What an upsert did."""

    inserted: int = 0
    updated: int = 0
    unchanged: int = 0


class SourceRun(BaseModel):
    """One source's part of a pipeline run."""

    source: str
    ok: bool
    vaults: int = 0
    history_points: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0


class Publication(BaseModel):
    """What was pushed to the serving index, and a fingerprint to check it against later."""

    id: int | None = None
    run_id: str | None = None
    collection: str
    published_at: float
    count: int
    newest_updated_at: int | None
    revision: int = Field(description="Store revision the publish started from")
    checksum: str
    sample: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None


class RunRecord(BaseModel):
    """A pipeline run with its per-source results and its publication."""

    id: str
    started_at: float
    finished_at: float | None
    status: RunStatus
    sources: list[SourceRun] = Field(default_factory=list)
    publication: Publication | None = None


class StoreCounts(BaseModel):
    """Sizes of the store."""

    vaults: int
    history_points: int
    by_source: dict[str, int]
    by_chain: dict[str, int]
    by_status: dict[str, int]


class ProtocolSummary(BaseModel):
    """One protocol across its vaults."""

    protocol: str
    vaults: int
    chains: list[str]
    sources: list[str]
    tvl_usd: float | None = Field(description="Sum of known vault TVLs")
    median_apy: float | None = Field(description="Percent, over vaults with an APY")
    max_apy: float | None
    mean_security_score: float | None


class StoreFingerprint(BaseModel):
    """Count, newest data time, revision and checksum of the vaults table."""

    count: int
    newest_updated_at: int | None
    revision: int
    checksum: str


def content_hash(vault: Vault) -> str:
    """Hash of a vault's full normalised content (deterministic field order)."""
    return _digest(vault.model_dump_json())


def _digest(record: str) -> str:
    return hashlib.sha256(record.encode()).hexdigest()


VAULT_COLUMNS = (
    "id, source, protocol, chain, name, status, apy, tvl_usd, security_score, risk_rating,"
    " stablecoin, updated_at, record, content_hash, revision, first_seen_at, changed_at"
)
UPSERT_VAULT_UPDATE = """
    ON CONFLICT (id) DO UPDATE SET
        source = excluded.source, protocol = excluded.protocol, chain = excluded.chain,
        name = excluded.name, status = excluded.status, apy = excluded.apy,
        tvl_usd = excluded.tvl_usd, security_score = excluded.security_score,
        risk_rating = excluded.risk_rating, stablecoin = excluded.stablecoin,
        updated_at = excluded.updated_at, record = excluded.record,
        content_hash = excluded.content_hash, revision = excluded.revision,
        changed_at = excluded.changed_at
"""
# A duplicate id later in the same batch updates the row written earlier, as one loop would.
_UPSERT_VAULT = (
    f"INSERT INTO vaults ({VAULT_COLUMNS}) VALUES ({', '.join('?' * 17)})" + UPSERT_VAULT_UPDATE
)


# What the tools read for a document's display fields: the record of the row revision it
# was built from, whether the row is current or superseded (see migration 4).
_SELECT_RECORDS_AT = (
    "SELECT id, revision, record FROM vaults WHERE id IN ({marks})"
    " UNION ALL SELECT vault_id, revision, record FROM superseded_records"
    " WHERE vault_id IN ({marks})"
)


WAL_SIZE_LIMIT = 4 * 1024 * 1024
BUSY_TIMEOUT_MS = 5000


class VaultStore:
    """The SQLite write store; create with a path, it migrates itself on open."""

    backend = "sqlite"
    # What a call raises when the database cannot answer (locked past the busy timeout,
    # an I/O error): the callers then say the store is unavailable.
    unavailable_errors: tuple[type[Exception], ...] = (sqlite3.OperationalError,)

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection shared under a lock: the pipeline and the MCP server may use the
        # store from different threads (e.g. asyncio.to_thread).
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._run_lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            # In WAL mode NORMAL still keeps the file consistent after a crash; a power
            # loss can drop the last commits, which the next pipeline run writes again.
            # FULL would fsync every commit of the run log (~3 ms each here).
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            # SQLite keeps a WAL file at the largest size it reached, for reuse. `checkpoint`
            # empties it when it can; when it could not (a reader was on it), the first
            # commit after a later complete checkpoint cuts it back to this, about the WAL
            # of one automatic checkpoint, so normal use never truncates.
            self._conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            self.applied_migrations = migrate(self._conn)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> VaultStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # The four ways the store reaches its database; the PostgreSQL adapter
    # (`data_server.store.postgres`) overrides these and the SQL only SQLite speaks. Every
    # statement is written with `?` placeholders.

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Rows of one statement, readable by column name and by position."""
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def _tuples(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one statement as plain tuples (no row object per row, for bulk reads)."""
        with self._lock:
            cursor = self._conn.cursor()
            cursor.row_factory = None
            return cursor.execute(sql, tuple(params)).fetchall()

    def _write(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Run one changing statement in a transaction of its own; its RETURNING rows."""
        with self._transaction() as conn:
            return conn.execute(sql, tuple(params)).fetchall()

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """The connection, under the lock, inside one write transaction: committed when the
        block ends, rolled back when it raises."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def checkpoints_deferred(self) -> Iterator[None]:
        """Commits in the block leave their pages in the WAL: no automatic checkpoint.

        A checkpoint copies the WAL into the database file and syncs both (~4 MB at a
        time by default); in a bulk write it stalls the commit that triggers it, several
        times per run. The caller runs `checkpoint` once, where waiting costs nothing.
        The earlier setting comes back when the block ends.
        """
        with self._lock:
            before = int(self._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
            self._conn.execute("PRAGMA wal_autocheckpoint=0")
        try:
            yield
        finally:
            with self._lock:
                self._conn.execute(f"PRAGMA wal_autocheckpoint={before}")

    def checkpoint(self) -> None:
        """Copy the WAL into the database file now, then empty the WAL file; never waits.

        PASSIVE copies what no reader still needs. When that was all of it, TRUNCATE cuts
        the file to nothing (after a pipeline run it holds the whole run, 32 MB at the
        bench's size, which SQLite would otherwise keep on disk for reuse) unless a reader
        is on the WAL: it is tried once, without the busy timeout, and then left to
        `journal_size_limit`. Freeing the file's pages costs ~15 ms; the pipeline runs this
        while Typesense imports, not in the commit after it.
        """
        with self._lock:
            busy, frames, copied = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if busy or frames != copied:
                return
            self._conn.execute("PRAGMA busy_timeout=0")
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

    def ping(self) -> None:
        """One trivial statement: raises when the database cannot answer."""
        self._rows("SELECT 1")

    def acquire_pipeline_lock(self) -> PipelineLock:
        """Try for the right to run the pipeline on this store; never waits for it.

        The lock is true when this caller has it, false when another run (any process)
        does; give it back with `release`. A lock file beside the database: the kernel
        drops it with its holder. Whoever takes it closes the runs left `running` as
        `abandoned`: with the lock free, nothing runs them any more.
        """
        if str(self.path) == ":memory:":
            lock: PipelineLock = ThreadLock(self._run_lock)
        else:
            lock_path = self.path.with_name(self.path.name + ".pipeline.lock")
            handle = lock_path.open("a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                return FileLock(None)
            except BaseException:
                handle.close()
                raise
            lock = FileLock(handle)
        if lock:
            try:
                lock.abandoned = [row[0] for row in self._write(_ABANDON_RUNNING, (time.time(),))]
            except BaseException:
                lock.release()
                raise
            note_abandoned(lock.abandoned)
        return lock

    @contextmanager
    def pipeline_lock(self) -> Iterator[PipelineLock]:
        """`acquire_pipeline_lock` for the block: the lock (true if held), released after."""
        lock = self.acquire_pipeline_lock()
        try:
            yield lock
        finally:
            lock.release()

    def close_abandoned_runs(self) -> int:
        """Close the runs left `running` as `abandoned` if no run holds the lock now (one
        that does is live); how many were closed."""
        with self.pipeline_lock() as lock:
            return len(lock.abandoned)

    # -- writes -------------------------------------------------------------------------

    def revision(self) -> int:
        """The store revision: it grows with every write that changes a vault."""
        row = self._rows("SELECT COALESCE(MAX(revision), 0) FROM vaults")[0]
        return int(row[0])

    def next_revision(self) -> int:
        """The revision the next changing write takes: above every row's, a removed
        vault's kept record included, so revisions never go back."""
        with self._transaction() as conn:
            return _revision_above_all(conn, 0)

    def upsert_vaults(
        self,
        vaults: Iterable[Vault],
        *,
        records: list[str] | None = None,
        revision: int | None = None,
        row_revisions: dict[str, int] | None = None,
    ) -> UpsertCounts:
        """Insert new vaults and update changed ones, in one transaction.

        ``records`` are the vaults' JSON when the caller already has it (``model_dump_json``
        of each, in the same order), so one serialisation serves the row, its hash and the
        caller's own use. ``revision`` writes the changed rows under that revision instead of
        the next one: the pipeline writes one source in several transactions under one
        revision, as a single call would. ``row_revisions``, when given, receives the
        revision of each vault's row after the write (an unchanged row keeps its own).

        A changed row's earlier record is kept in ``superseded_records`` while an index
        document may have been built from it (a publish is open, or the last one that
        succeeded could have read it) until a publish drops it. A record is never
        replaced under the revision it was written at, so (vault id, revision) names one
        record: a change to a row that this revision (or a later one) wrote takes a revision
        above every stored one, reported in ``row_revisions`` like any other.
        """
        inserted = updated = unchanged = 0
        now = time.time()
        batch = list(vaults)
        if records is not None and len(records) != len(batch):
            raise ValueError("one record per vault")
        with self._transaction() as conn:
            # Only the stored rows this batch can match, by id: a slice of a source
            # (in any order) reads its own rows, not the source's whole id range.
            ids = list({vault.id: None for vault in batch})
            existing: dict[str, tuple[str, int]] = {}
            for marks, chunk in _id_chunks(ids):
                sql = f"SELECT id, content_hash, revision FROM vaults WHERE id IN ({marks})"
                for row in conn.execute(sql, chunk):
                    existing[row[0]] = (row[1], row[2])
            if revision is None:
                next_revision = _revision_above_all(conn, 0)
            else:
                next_revision = revision
            rows: list[tuple[Any, ...]] = []
            superseded: list[tuple[str, int]] = []  # (vault id, stored row's revision)
            rewritten: int | None = None  # what rows rewritten at their own revision take
            written: set[str] = set()
            for index, vault in enumerate(batch):
                # The stored record and its hash come from one serialisation.
                record = vault.model_dump_json() if records is None else records[index]
                digest = _digest(record)
                old = existing.get(vault.id)
                if old is not None and old[0] == digest:
                    unchanged += 1
                    if row_revisions is not None:
                        row_revisions[vault.id] = old[1]
                    continue
                row_revision = next_revision
                if old is not None and vault.id not in written:
                    # The stored row (a vault twice in a batch commits only its last record).
                    superseded.append((vault.id, old[1]))
                    if old[1] >= next_revision:
                        if rewritten is None:
                            rewritten = _revision_above_all(conn, next_revision)
                        row_revision = rewritten
                elif old is not None:
                    row_revision = old[1]
                written.add(vault.id)
                rows.append(
                    (
                        vault.id,
                        vault.source,
                        vault.protocol,
                        vault.chain,
                        vault.name,
                        vault.status,
                        vault.apy,
                        vault.tvl_usd,
                        vault.security_score,
                        vault.risk_rating,
                        int(vault.stablecoin),
                        vault.updated_at,
                        record,
                        digest,
                        row_revision,
                        now,
                        now,
                    )
                )
                existing[vault.id] = (digest, row_revision)
                if row_revisions is not None:
                    row_revisions[vault.id] = row_revision
                if old is None:
                    inserted += 1
                else:
                    updated += 1
            kept = _maybe_published(conn, superseded) if superseded else []
            for marks, chunk in _id_chunks(kept):
                conn.execute(
                    "INSERT INTO superseded_records (vault_id, revision, record)"
                    f" SELECT id, revision, record FROM vaults WHERE id IN ({marks})"
                    " ON CONFLICT DO NOTHING",
                    chunk,
                )
            self._write_vault_rows(conn, rows)
        return UpsertCounts(inserted=inserted, updated=updated, unchanged=unchanged)

    def _write_vault_rows(self, conn: Any, rows: list[tuple[Any, ...]]) -> None:
        """Upsert vault rows (the columns of `VAULT_COLUMNS`, in order) in a transaction."""
        conn.executemany(_UPSERT_VAULT, rows)

    def remove_vaults(self, vault_ids: Iterable[str]) -> int:
        """Delete vaults a source no longer lists; how many went. Their history stays.

        A removed row an index may still hold a document of is kept in
        `superseded_records`, like a replaced one, until a publish drops it.
        """
        ids = sorted(set(vault_ids))
        removed = 0
        with self._transaction() as conn:
            for marks, chunk in _id_chunks(ids):
                rows = conn.execute(
                    f"SELECT id, revision FROM vaults WHERE id IN ({marks})", chunk
                ).fetchall()
                kept = _maybe_published(conn, [(row[0], row[1]) for row in rows])
                for kept_marks, kept_chunk in _id_chunks(kept):
                    conn.execute(
                        "INSERT INTO superseded_records (vault_id, revision, record)"
                        f" SELECT id, revision, record FROM vaults WHERE id IN ({kept_marks})"
                        " ON CONFLICT DO NOTHING",
                        kept_chunk,
                    )
                conn.execute(f"DELETE FROM vaults WHERE id IN ({marks})", chunk)
                removed += len(rows)
        return removed

    def upsert_history(self, points: Iterable[HistoryPoint]) -> int:
        """Insert or replace history points keyed by (vault_id, timestamp); returns how many."""
        rows = [(p.vault_id, p.timestamp, p.apy, p.tvl_usd) for p in points]
        with self._transaction() as conn:
            conn.executemany(
                "INSERT INTO history (vault_id, timestamp, apy, tvl_usd) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (vault_id, timestamp) DO UPDATE SET"
                " apy = excluded.apy, tvl_usd = excluded.tvl_usd",
                rows,
            )
        return len(rows)

    def publish_begins(self) -> None:
        """Note that a publish is about to send documents: until one succeeds, every
        replaced row is kept (`upsert_vaults`), as the index may hold a document of it."""
        with self._transaction() as conn:
            conn.execute("UPDATE publish_state SET open = 1 WHERE id = 1")

    def drop_superseded(self, published: dict[str, int]) -> int:
        """Remove superseded rows no index document was built from; how many went.

        Called once a publish has succeeded: the index then holds only that publish's
        documents, vault id -> row revision as in `published`. A superseded row that is
        one of them (its vault changed after the publish read it) stays. The publish is
        closed: a row replaced later is kept only if this publish could have read it.
        """
        with self._transaction() as conn:
            conn.execute(
                "UPDATE publish_state SET open = 0,"
                " through = (SELECT COALESCE(MAX(revision), 0) FROM vaults) WHERE id = 1"
            )
            rows = conn.execute("SELECT vault_id, revision FROM superseded_records").fetchall()
            stale = [(row[0], row[1]) for row in rows if published.get(row[0]) != row[1]]
            conn.executemany(
                "DELETE FROM superseded_records WHERE vault_id = ? AND revision = ?", stale
            )
        return len(stale)

    def records_at(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """Record JSON by (vault id, row revision), current or superseded; keys the store no
        longer has are left out. Rows were validated when written."""
        wanted = set(keys)
        ids = list({vault_id: None for vault_id, _ in wanted})
        out: dict[tuple[str, int], str] = {}
        for marks, chunk in _id_chunks(ids):
            rows = self._tuples(_SELECT_RECORDS_AT.format(marks=marks), chunk * 2)
            for vault_id, revision, record in rows:
                if (vault_id, revision) in wanted:
                    out[(vault_id, revision)] = record
        return out

    def published_records(self, vault_ids: Iterable[str]) -> list[tuple[str, str, int]]:
        """(id, record JSON, row revision) of the given vaults that the store has, by id."""
        ids = sorted(set(vault_ids))
        out: list[tuple[str, str, int]] = []
        for marks, chunk in _id_chunks(ids):
            sql = f"SELECT id, record, revision FROM vaults WHERE id IN ({marks}) ORDER BY id"
            out.extend((r[0], r[1], r[2]) for r in self._rows(sql, chunk))
        return out

    # -- run log ------------------------------------------------------------------------

    def start_run(self) -> str:
        """Open a run in the log and return its id."""
        run_id = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:8]}"
        self._write(
            "INSERT INTO runs (id, started_at, status) VALUES (?, ?, 'running')",
            (run_id, time.time()),
        )
        return run_id

    def record_source(self, run_id: str, result: SourceRun) -> None:
        """Record one source's outcome within a run."""
        self._write(
            """
            INSERT INTO run_sources (run_id, source, ok, vaults, history_points,
                inserted, updated, unchanged, warnings, error, duration_s)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (run_id, source) DO UPDATE SET ok = excluded.ok,
                vaults = excluded.vaults, history_points = excluded.history_points,
                inserted = excluded.inserted, updated = excluded.updated,
                unchanged = excluded.unchanged, warnings = excluded.warnings,
                error = excluded.error, duration_s = excluded.duration_s
            """,
            (
                run_id,
                result.source,
                int(result.ok),
                result.vaults,
                result.history_points,
                result.inserted,
                result.updated,
                result.unchanged,
                json.dumps(result.warnings),
                result.error,
                result.duration_s,
            ),
        )

    def finish_run(self, run_id: str, status: RunStatus) -> None:
        """Close a run with its final status."""
        self._write(
            "UPDATE runs SET finished_at = ?, status = ? WHERE id = ?",
            (time.time(), status, run_id),
        )

    def record_publication(self, publication: Publication) -> Publication:
        """Store what a publish pushed; returns it with its id."""
        rows = self._write(
            """
            INSERT INTO publications (run_id, collection, published_at, count,
                newest_updated_at, revision, checksum, sample, error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            RETURNING id
            """,
            (
                publication.run_id,
                publication.collection,
                publication.published_at,
                publication.count,
                publication.newest_updated_at,
                publication.revision,
                publication.checksum,
                json.dumps(publication.sample),
                publication.error,
            ),
        )
        return publication.model_copy(update={"id": int(rows[0][0])})

    def last_publication(self, collection: str, *, successful: bool = True) -> Publication | None:
        """The newest publication to a collection (by default only one without error)."""
        sql = "SELECT * FROM publications WHERE collection = ?"
        if successful:
            sql += " AND error IS NULL"
        rows = self._rows(sql + " ORDER BY id DESC LIMIT 1", (collection,))
        return _publication(rows[0]) if rows else None

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run with its sources and its publication."""
        rows = self._rows("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            return None
        run = rows[0]
        sources = [
            SourceRun(
                source=r["source"],
                ok=bool(r["ok"]),
                vaults=r["vaults"],
                history_points=r["history_points"],
                inserted=r["inserted"],
                updated=r["updated"],
                unchanged=r["unchanged"],
                warnings=json.loads(r["warnings"]),
                error=r["error"],
                duration_s=r["duration_s"],
            )
            for r in self._rows(
                "SELECT * FROM run_sources WHERE run_id = ? ORDER BY source", (run_id,)
            )
        ]
        pubs = self._rows(
            "SELECT * FROM publications WHERE run_id = ? ORDER BY id DESC LIMIT 1", (run_id,)
        )
        return RunRecord(
            id=run["id"],
            started_at=run["started_at"],
            finished_at=run["finished_at"],
            status=run["status"],
            sources=sources,
            publication=_publication(pubs[0]) if pubs else None,
        )

    def runs(self, limit: int = 20) -> list[RunRecord]:
        """The newest runs, newest first."""
        ids = [
            r[0]
            for r in self._rows(
                "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT ?", (limit,)
            )
        ]
        return [run for run_id in ids if (run := self.get_run(run_id)) is not None]

    # -- queries ------------------------------------------------------------------------

    def get_vault(self, vault_id: str) -> Vault | None:
        """One vault by its stable id."""
        rows = self._rows("SELECT record FROM vaults WHERE id = ?", (vault_id,))
        return Vault.model_validate_json(rows[0][0]) if rows else None

    def get_vaults(self, vault_ids: Iterable[str]) -> list[Vault]:
        """Vaults by id (missing ids are skipped), in the order asked."""
        ids = list(dict.fromkeys(vault_ids))
        found: dict[str, Vault] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._rows(f"SELECT record FROM vaults WHERE id IN ({marks})", chunk):
                vault = Vault.model_validate_json(row[0])
                found[vault.id] = vault
        return [found[i] for i in ids if i in found]

    def iter_vaults(
        self, *, source: str | None = None, since_revision: int | None = None
    ) -> Iterator[Vault]:
        """Every vault (optionally of one source, or changed after a revision), by id."""
        where, params = _vault_filter(source, since_revision)
        for row in self._rows(f"SELECT record FROM vaults{where} ORDER BY id", params):
            yield Vault.model_validate_json(row[0])

    def records(self, *, after_id: str | None = None, limit: int = 1000) -> list[tuple[str, str]]:
        """Up to `limit` (id, record JSON) pairs after `after_id`, by id.

        The record is the vault's JSON exactly as written; rows were validated when they
        were written, so bulk readers (the publish) can use them without a model per row.
        """
        if after_id is None:
            rows = self._rows("SELECT id, record FROM vaults ORDER BY id LIMIT ?", (limit,))
        else:
            rows = self._rows(
                "SELECT id, record FROM vaults WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit)
            )
        return [(r[0], r[1]) for r in rows]

    def single_token_namings(self) -> list[tuple[str, str, list[str]]]:
        """(chain, token, asset symbols) of every stored vault of one token with symbols.

        What enrichment needs of the store, read by SQLite from the stored JSON: no model
        per stored vault (the records were validated when written).
        """
        rows = self._rows(
            "SELECT chain, json_extract(record, '$.underlying_tokens[0]'),"
            " json_extract(record, '$.asset_symbols') FROM vaults"
            " WHERE json_array_length(record, '$.underlying_tokens') = 1"
            " AND json_array_length(record, '$.asset_symbols') > 0 ORDER BY id"
        )
        return [(r[0], r[1], json.loads(r[2])) for r in rows]

    def vault_ids(
        self, *, source: str | None = None, since_revision: int | None = None
    ) -> list[str]:
        """Vault ids (optionally of one source, or of rows changed after a revision), sorted."""
        where, params = _vault_filter(source, since_revision)
        return [r[0] for r in self._rows(f"SELECT id FROM vaults{where} ORDER BY id", params)]

    def history(
        self,
        vault_id: str,
        *,
        since: int | None = None,
        until: int | None = None,
        limit: int | None = None,
    ) -> list[HistoryPoint]:
        """Daily points of one vault, oldest first (``limit`` keeps the newest N)."""
        sql, params = "SELECT * FROM history WHERE vault_id = ?", [vault_id]
        if since is not None:
            sql += " AND timestamp >= ?"
            params.append(since)
        if until is not None:
            sql += " AND timestamp <= ?"
            params.append(until)
        sql += " ORDER BY timestamp DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        points = [
            HistoryPoint(
                vault_id=r["vault_id"], timestamp=r["timestamp"], apy=r["apy"], tvl_usd=r["tvl_usd"]
            )
            for r in self._rows(sql, params)
        ]
        points.reverse()
        return points

    def protocols_summary(self, *, protocol: str | None = None) -> list[ProtocolSummary]:
        """Per-protocol vault counts, chains, TVL and APY figures, largest TVL first."""
        sql = "SELECT protocol, chain, source, apy, tvl_usd, security_score FROM vaults"
        params: list[Any] = []
        if protocol is not None:
            sql += " WHERE protocol = ?"
            params.append(protocol.lower())
        groups: dict[str, list[Any]] = {}
        for row in self._rows(sql, params):
            groups.setdefault(row["protocol"], []).append(row)
        out = []
        for name, rows in groups.items():
            apys = [r["apy"] for r in rows if r["apy"] is not None]
            tvls = [r["tvl_usd"] for r in rows if r["tvl_usd"] is not None]
            scores = [r["security_score"] for r in rows if r["security_score"] is not None]
            out.append(
                ProtocolSummary(
                    protocol=name,
                    vaults=len(rows),
                    chains=sorted({r["chain"] for r in rows}),
                    sources=sorted({r["source"] for r in rows}),
                    tvl_usd=sum(tvls) if tvls else None,
                    median_apy=statistics.median(apys) if apys else None,
                    max_apy=max(apys) if apys else None,
                    mean_security_score=round(statistics.fmean(scores), 1) if scores else None,
                )
            )
        out.sort(key=lambda s: (-(s.tvl_usd or 0.0), s.protocol))
        return out

    def counts(self) -> StoreCounts:
        """Vault and history counts, by source, chain and status."""

        def grouped(column: str) -> dict[str, int]:
            return {
                r[0]: r[1]
                for r in self._rows(
                    f"SELECT {column}, COUNT(*) FROM vaults GROUP BY {column} ORDER BY {column}"
                )
            }

        return StoreCounts(
            vaults=int(self._rows("SELECT COUNT(*) FROM vaults")[0][0]),
            history_points=int(self._rows("SELECT COUNT(*) FROM history")[0][0]),
            by_source=grouped("source"),
            by_chain=grouped("chain"),
            by_status=grouped("status"),
        )

    def fingerprint(self) -> StoreFingerprint:
        """Count, newest updated_at, revision and a checksum over (id, content hash)."""
        digest = hashlib.sha256()
        count = 0
        for row in self._rows("SELECT id, content_hash FROM vaults ORDER BY id"):
            digest.update(f"{row[0]}\t{row[1]}\n".encode())
            count += 1
        stats = self._rows("SELECT MAX(updated_at), COALESCE(MAX(revision), 0) FROM vaults")[0]
        return StoreFingerprint(
            count=count,
            newest_updated_at=stats[0],
            revision=int(stats[1]),
            checksum=digest.hexdigest(),
        )

    def changed_since(self, revision: int) -> int:
        """How many vaults changed after a given revision."""
        return int(self._rows("SELECT COUNT(*) FROM vaults WHERE revision > ?", (revision,))[0][0])


def _maybe_published(conn: Any, rows: list[tuple[str, int]]) -> list[str]:
    """The ids of those (vault id, row revision) rows an index may hold a document of
    (see migration 5)."""
    state = conn.execute("SELECT open, through FROM publish_state WHERE id = 1").fetchone()
    if state is None or state[0]:
        return [vault_id for vault_id, _ in rows]
    through = int(state[1])
    return [vault_id for vault_id, revision in rows if revision <= through]


def _revision_above_all(conn: Any, at_least: int) -> int:
    """A revision no vault row and no superseded record has, and above `at_least`."""
    tops = conn.execute(
        "SELECT (SELECT COALESCE(MAX(revision), 0) FROM vaults),"
        " (SELECT COALESCE(MAX(revision), 0) FROM superseded_records)"
    ).fetchone()
    return max(int(tops[0]), int(tops[1]), at_least) + 1


def _publication(row: Any) -> Publication:
    return Publication(
        id=row["id"],
        run_id=row["run_id"],
        collection=row["collection"],
        published_at=row["published_at"],
        count=row["count"],
        newest_updated_at=row["newest_updated_at"],
        revision=row["revision"],
        checksum=row["checksum"],
        sample=json.loads(row["sample"]),
        error=row["error"],
    )


# Ids per `IN (…)` list: far below SQLite's limit on bound parameters.
_IDS_PER_QUERY = 500


def _id_chunks(ids: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(placeholders, ids) for `WHERE id IN (…)` over `ids`, a bounded number at a time."""
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = ids[start : start + _IDS_PER_QUERY]
        yield ",".join("?" * len(chunk)), chunk


def _vault_filter(source: str | None, since_revision: int | None) -> tuple[str, list[Any]]:
    """The WHERE clause (with its leading space, or empty) and parameters of a vault read
    limited to one source and/or to rows changed after a revision."""
    clauses: list[str] = []
    params: list[Any] = []
    if source is not None:
        clauses.append("source = ?")
        params.append(source)
    if since_revision is not None:
        clauses.append("revision > ?")
        params.append(since_revision)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params
