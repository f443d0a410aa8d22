"""Schema migrations of the write store: a versioned list, applied in order, recorded once.

Each step is written once per backend: `sql` for SQLite, `postgres` for PostgreSQL, the same
tables, columns and meaning in each dialect. Append new migrations at the end with the next
version number and both expressions; never edit an applied one.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Migration:
    """One schema step, in SQLite's dialect (`sql`) and in PostgreSQL's (`postgres`)."""

    version: int
    name: str
    sql: str
    postgres: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "vaults and history",
        """
        CREATE TABLE vaults (
            id TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            protocol TEXT NOT NULL,
            chain TEXT NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL,
            apy REAL,
            tvl_usd REAL,
            security_score REAL,
            risk_rating TEXT,
            stablecoin INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            record TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            revision INTEGER NOT NULL,
            first_seen_at REAL NOT NULL,
            changed_at REAL NOT NULL
        );
        CREATE INDEX vaults_protocol ON vaults (protocol);
        CREATE INDEX vaults_chain ON vaults (chain);
        CREATE INDEX vaults_revision ON vaults (revision);
        CREATE TABLE history (
            vault_id TEXT NOT NULL,
            timestamp INTEGER NOT NULL,
            apy REAL,
            tvl_usd REAL,
            PRIMARY KEY (vault_id, timestamp)
        ) WITHOUT ROWID;
        """,
        """
        CREATE TABLE vaults (
            id TEXT COLLATE "C" PRIMARY KEY,
            source TEXT NOT NULL,
            protocol TEXT NOT NULL,
            chain TEXT NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL,
            apy DOUBLE PRECISION,
            tvl_usd DOUBLE PRECISION,
            security_score DOUBLE PRECISION,
            risk_rating TEXT,
            stablecoin INTEGER NOT NULL,
            updated_at BIGINT NOT NULL,
            record TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            revision INTEGER NOT NULL,
            first_seen_at DOUBLE PRECISION NOT NULL,
            changed_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX vaults_protocol ON vaults (protocol);
        CREATE INDEX vaults_chain ON vaults (chain);
        CREATE INDEX vaults_revision ON vaults (revision);
        -- A year of daily points for 20,000+ vaults is 7+ million rows: hashed over 16
        -- partitions by vault, a vault's points sit in one small index.
        CREATE TABLE history (
            vault_id TEXT COLLATE "C" NOT NULL,
            timestamp BIGINT NOT NULL,
            apy DOUBLE PRECISION,
            tvl_usd DOUBLE PRECISION,
            PRIMARY KEY (vault_id, timestamp)
        ) PARTITION BY HASH (vault_id);
        """
        + "".join(
            f"CREATE TABLE history_p{i} PARTITION OF history"
            f" FOR VALUES WITH (MODULUS 16, REMAINDER {i});\n"
            for i in range(16)
        ),
    ),
    Migration(
        2,
        "run log",
        """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            started_at REAL NOT NULL,
            finished_at REAL,
            status TEXT NOT NULL
        );
        CREATE TABLE run_sources (
            run_id TEXT NOT NULL REFERENCES runs (id),
            source TEXT NOT NULL,
            ok INTEGER NOT NULL,
            vaults INTEGER NOT NULL DEFAULT 0,
            history_points INTEGER NOT NULL DEFAULT 0,
            inserted INTEGER NOT NULL DEFAULT 0,
            updated INTEGER NOT NULL DEFAULT 0,
            unchanged INTEGER NOT NULL DEFAULT 0,
            warnings TEXT NOT NULL DEFAULT '[]',
            error TEXT,
            duration_s REAL NOT NULL DEFAULT 0,
            PRIMARY KEY (run_id, source)
        );
        """,
        """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            started_at DOUBLE PRECISION NOT NULL,
            finished_at DOUBLE PRECISION,
            status TEXT NOT NULL
        );
        CREATE TABLE run_sources (
            run_id TEXT NOT NULL REFERENCES runs (id),
            source TEXT NOT NULL,
            ok INTEGER NOT NULL,
            vaults INTEGER NOT NULL DEFAULT 0,
            history_points INTEGER NOT NULL DEFAULT 0,
            inserted INTEGER NOT NULL DEFAULT 0,
            updated INTEGER NOT NULL DEFAULT 0,
            unchanged INTEGER NOT NULL DEFAULT 0,
            warnings TEXT NOT NULL DEFAULT '[]',
            error TEXT,
            duration_s DOUBLE PRECISION NOT NULL DEFAULT 0,
            PRIMARY KEY (run_id, source)
        );
        """,
    ),
    Migration(
        3,
        "publications",
        """
        CREATE TABLE publications (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT,
            collection TEXT NOT NULL,
            published_at REAL NOT NULL,
            count INTEGER NOT NULL,
            newest_updated_at INTEGER,
            revision INTEGER NOT NULL,
            checksum TEXT NOT NULL,
            sample TEXT NOT NULL DEFAULT '[]',
            error TEXT
        );
        CREATE INDEX publications_collection ON publications (collection, id);
        """,
        """
        CREATE TABLE publications (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            run_id TEXT,
            collection TEXT NOT NULL,
            published_at DOUBLE PRECISION NOT NULL,
            count INTEGER NOT NULL,
            newest_updated_at BIGINT,
            revision INTEGER NOT NULL,
            checksum TEXT NOT NULL,
            sample TEXT NOT NULL DEFAULT '[]',
            error TEXT
        );
        CREATE INDEX publications_collection ON publications (collection, id);
        """,
    ),
    Migration(
        4,
        "superseded records",
        # A vault row replaced by a changed one, kept while the index may still hold a
        # document built from it: documents carry the store revision of the row they were
        # built from, and the tools read the fields they only display from that row's
        # record (the current row, or this copy). A publish that succeeds drops the rows
        # no document refers to any more.
        """
        CREATE TABLE superseded_records (
            vault_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (vault_id, revision)
        ) WITHOUT ROWID;
        """,
        """
        CREATE TABLE superseded_records (
            vault_id TEXT COLLATE "C" NOT NULL,
            revision INTEGER NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (vault_id, revision)
        );
        """,
    ),
    Migration(
        5,
        "publish state",
        # Which replaced rows an index may hold documents of: any while a publish is open
        # (begun, not yet finished with success: its documents may be in the index, a
        # failed one's too), else those up to the store revision at the last success.
        # A store migrated with publications or superseded rows is taken as open (what its
        # index holds is not known) until its next publish succeeds.
        """
        CREATE TABLE publish_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            open INTEGER NOT NULL,
            through INTEGER NOT NULL
        );
        INSERT INTO publish_state (id, open, through) SELECT 1,
            EXISTS (SELECT 1 FROM publications) OR EXISTS (SELECT 1 FROM superseded_records),
            0;
        """,
        """
        CREATE TABLE publish_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            open INTEGER NOT NULL,
            through INTEGER NOT NULL
        );
        INSERT INTO publish_state (id, open, through) SELECT 1,
            CASE WHEN EXISTS (SELECT 1 FROM publications)
                OR EXISTS (SELECT 1 FROM superseded_records) THEN 1 ELSE 0 END,
            0;
        """,
    ),
    Migration(
        6,
        "pipeline lease",
        # Who may run the pipeline on a shared PostgreSQL database, until when (the
        # database's clock, epoch seconds); `token` grows with every taking, so a holder
        # that lost it cannot mistake a later holder's lease for its own. SQLite's run lock
        # is a lock file (run_lock.py); the table is there too, as every table is in both.
        """
        CREATE TABLE pipeline_lease (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            holder TEXT,
            token INTEGER NOT NULL,
            expires_at REAL NOT NULL
        );
        INSERT INTO pipeline_lease (id, holder, token, expires_at) VALUES (1, NULL, 0, 0);
        """,
        """
        CREATE TABLE pipeline_lease (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            holder TEXT,
            token BIGINT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        );
        INSERT INTO pipeline_lease (id, holder, token, expires_at) VALUES (1, NULL, 0, 0);
        """,
    ),
)


def applied_versions(conn: sqlite3.Connection) -> list[int]:
    """Versions already recorded in the database, ascending."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    return [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[int]:
    """Apply every migration not yet recorded, in order, each in its own transaction.

    Returns the versions applied by this call (empty when the schema was current).
    """
    versions = [m.version for m in migrations]
    if versions != sorted(set(versions)):
        raise ValueError("migration versions must be unique and ascending")
    done = set(applied_versions(conn))
    applied: list[int] = []
    for migration in migrations:
        if migration.version in done:
            continue
        # executescript commits first; the explicit BEGIN keeps each step all-or-nothing.
        script = (
            "BEGIN;\n"
            + migration.sql
            + "\nINSERT INTO schema_migrations (version, name, applied_at) VALUES "
            + f"({migration.version}, '{migration.name.replace(chr(39), '')}', {time.time()});"
            + "\nCOMMIT;"
        )
        try:
            conn.executescript(script)
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        applied.append(migration.version)
    return applied


# Any number taken as the key of the advisory lock that serialises migrations across
# replicas starting at the same time ("albert" in ASCII).
MIGRATION_LOCK = 0x616C62657274


def migrate_postgres(conn: Any, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[int]:
    """Apply every migration not yet recorded to a PostgreSQL database (a psycopg
    connection), in order, each in its own transaction; the `postgres` expressions.

    Replicas starting together take turns: each step runs under a transaction-level
    advisory lock and re-reads what is applied first. Returns the versions applied here.
    """
    versions = [m.version for m in migrations]
    if versions != sorted(set(versions)):
        raise ValueError("migration versions must be unique and ascending")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at DOUBLE PRECISION NOT NULL)"
        )
    applied: list[int] = []
    for migration in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = %s", (migration.version,)
            ).fetchone()
            if done is not None:
                continue
            conn.execute(migration.postgres)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                (migration.version, migration.name, time.time()),
            )
        applied.append(migration.version)
    return applied
