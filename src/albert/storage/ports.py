"""The SQL storage port: what the core needs from a Durable Object's SQLite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

Row = dict[str, Any]
T = TypeVar("T")


class SqlStorage(Protocol):
    """Synchronous SQL, as `ctx.storage.sql.exec` is on Cloudflare.

    Statements run in autocommit mode and the core never issues BEGIN/COMMIT itself
    (the platform refuses them). Writes that must land together go through
    `transaction`, the platform's `ctx.storage.transactionSync`.
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
