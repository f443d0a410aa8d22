"""The storage port on a local object's SQLite file, as an object gets it."""

from __future__ import annotations

from pathlib import Path

from albert.cloudflare.sql import WorkersSql
from miniflare.storage import DurableObjectStorage


def object_sql(path: Path, max_bytes: int | None = None) -> WorkersSql:
    """`ctx.storage.sql` of a local object on `path`, with its `transactionSync`; its
    database held to `max_bytes` as the local runtime's storage limit does."""
    storage = DurableObjectStorage(path, lambda _when: None, max_bytes)
    return WorkersSql(storage.sql, storage)
