"""SqlStorage over a Durable Object's `ctx.storage.sql`."""

from __future__ import annotations

from typing import Any

try:
    from pyodide.ffi import jsnull
except ImportError:  # older Pyodide: None already crosses as null
    jsnull = None

from albert.storage.ports import Row


def _binding(value: Any) -> Any:
    # Python None crosses into JS as `undefined`, which SQL bindings reject: send null.
    return jsnull if value is None else value


def _to_py(value: Any) -> Any:
    convert = getattr(value, "to_py", None)
    return convert() if convert is not None else value


class WorkersSql:
    """The storage port on the platform's synchronous SQL API."""

    def __init__(self, sql: Any) -> None:
        self._sql = sql

    def execute(self, sql: str, *params: Any) -> list[Row]:
        cursor = self._sql.exec(sql, *(_binding(p) for p in params))
        rows = _to_py(cursor.toArray())
        return [dict(_to_py(row)) for row in rows]
