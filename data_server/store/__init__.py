"""The SQLite write store of the data server."""

from data_server.store.migrations import MIGRATIONS, Migration, migrate
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

__all__ = [
    "MIGRATIONS",
    "Migration",
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
]
