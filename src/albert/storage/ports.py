"""The SQL storage port: what the core needs from a Durable Object's SQLite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

Row = dict[str, Any]
T = TypeVar("T")


class StorageError(RuntimeError):
    """A statement or a commit failed in storage (a full disk or object, an I/O error, a
    refused statement): nothing of it was written.

    The adapters raise it (or a subclass) for every failure of the storage itself, so the
    core can tell the user what was not kept instead of claiming it was.
    """


class SqlStorage(Protocol):
    """Synchronous SQL, as `ctx.storage.sql.exec` is on Cloudflare.

    Statements run in autocommit mode and the core never issues BEGIN/COMMIT itself
    (the platform refuses them). Writes that must land together go through
    `transaction`, the platform's `ctx.storage.transactionSync`. A statement or commit
    that fails raises `StorageError`.
    """

    def execute(self, sql: str, *params: Any) -> list[Row]:
        """Run one statement with `?` bindings and return its rows as dicts."""
        ...

    def transaction(self, work: Callable[[], T]) -> T:
        """Run `work` (synchronous, statements through `execute`) as one transaction.

        Its writes commit together when it returns, and none of them stays when it
        raises (the exception is re-raised). Calls nest.
        """
        ...
