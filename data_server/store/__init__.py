"""The write store of the data server: SQLite by default, PostgreSQL by `DATABASE_URL`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from data_server.store.migrations import MIGRATIONS, Migration, migrate, migrate_postgres
from data_server.store.run_lock import PipelineLock, PipelineLockLost
from data_server.store.sqlite import (
    ProtocolSummary,
    Publication,
    RunRecord,
    SourceRun,
    StoreCounts,
    StoreFingerprint,
    UpsertCounts,
    VaultStore,
    content_hash,
)

if TYPE_CHECKING:
    from data_server.settings import DatabaseLimits


def open_store(
    database_url: str = "", db_path: str | Path = "", *, limits: DatabaseLimits | None = None
) -> VaultStore:
    """The write store a URL names: PostgreSQL for postgresql://…, else the SQLite file.

    psycopg (the ``postgres`` extra) is imported only for a PostgreSQL URL; `limits` (its
    timeouts, keepalives and pipeline lease) apply to it alone.
    """
    if database_url.startswith(("postgresql://", "postgres://")):
        from data_server.store.postgres import PostgresVaultStore

        return PostgresVaultStore(database_url, limits=limits)
    if database_url.startswith("sqlite:///"):
        return VaultStore(database_url.removeprefix("sqlite:///"))
    if database_url:
        raise ValueError("DATABASE_URL must be postgresql://… or sqlite:///path")
    if not str(db_path):
        raise ValueError("no write store: set DATABASE_URL or a SQLite path")
    return VaultStore(db_path)


__all__ = [
    "MIGRATIONS",
    "Migration",
    "PipelineLock",
    "PipelineLockLost",
    "ProtocolSummary",
    "Publication",
    "RunRecord",
    "SourceRun",
    "StoreCounts",
    "StoreFingerprint",
    "UpsertCounts",
    "VaultStore",
    "content_hash",
    "migrate",
    "migrate_postgres",
    "open_store",
]
