"""Filling an object's SQLite file up to its storage limit, and giving the space back.

The object's own connection caps its database (`max_page_count`, the local runtime's
per-object limit: `miniflare.objects.STORAGE_LIMIT_ENV`); another connection on the same
file, as another writer on a disk would, takes every page left under that cap. From then
on a write of the object that needs a new page fails with SQLITE_FULL ("database or disk
is full"), as on a full disk, until `free` gives the pages back.

A write that fits in the free room of pages it already has needs no new page and still
succeeds: tests make the writes that must fail larger than a page (4 KiB), which SQLite
stores in new overflow pages.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# Larger than a page's room for one row: stored in overflow pages, so it needs new ones.
OVER_A_PAGE = 5_000


class StorageFiller:
    """Another writer on the SQLite file at `path`, capped at `max_bytes` like its object."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes

    def _connect(self) -> sqlite3.Connection:
        # Waits out a write of the object in progress instead of failing it.
        db = sqlite3.connect(self.path, isolation_level=None, timeout=10)
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {self.max_bytes // page_size}")
        return db

    def fill(self) -> int:
        """Take every page left under the cap; the database's page count then."""
        db = self._connect()
        try:
            db.execute("CREATE TABLE IF NOT EXISTS filler (b BLOB)")
            size = 1 << 16
            while size:
                try:
                    db.execute("INSERT INTO filler VALUES (zeroblob(?))", (size,))
                except sqlite3.OperationalError as exc:
                    assert "full" in str(exc), exc
                    size //= 2
            return int(db.execute("PRAGMA page_count").fetchone()[0])
        finally:
            db.close()

    def free(self) -> None:
        """Give the filled pages back (they become the database's free pages)."""
        db = self._connect()
        try:
            db.execute("DROP TABLE IF EXISTS filler")
        finally:
            db.close()
