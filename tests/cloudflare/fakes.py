"""Faithful fakes of the JS objects a Python Durable Object sees under Pyodide.

Shapes follow the Workers runtime's documented API and Pyodide's conversion
rules, because that is what the Cloudflare adapters must cope with:

- a JS object or array reaches Python as a proxy: attribute access, iteration,
  `to_py()` for a deep conversion (in which JS `null` stays `jsnull`);
- Python None crosses into JS as `undefined`, bytes as an opaque proxy (only
  `to_js(bytes)` gives a Uint8Array), a JS number comes back as int when it holds
  a safe integer, else float;
- `ctx.storage.sql.exec(query, ...bindings)` binds numbers, strings, null and
  ArrayBuffer/typed arrays, refuses `undefined` and transaction statements, and
  returns a cursor with `toArray()`, `one()`, `raw()`, iteration, `columnNames`,
  `rowsRead` and `rowsWritten`; SQL NULL is `null`, a BLOB is an ArrayBuffer;
- `new WebSocketPair()` is `WebSocketPair.new()`, `Object.values(pair)` is
  `.object_values()`; `send()` after `close()` throws, `close()` refuses the
  reserved codes 1004-1006 and 1015 and reasons over 123 bytes; a binary message
  arrives as an ArrayBuffer (`to_bytes()`);
- `ctx.storage.getAlarm()` resolves to null or a number of ms; the alarm handler
  runs at that time and the alarm is cleared once it succeeds.

Behind the SQL fake is a real SQLite database, so statements behave as SQLite does.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import types
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1


class JsException(Exception):
    """What a thrown JS error becomes in Python (pyodide.ffi.JsException)."""


class JsNull:
    """JS `null` as Pyodide shows it (pyodide.ffi.jsnull)."""

    _instance: JsNull | None = None

    def __new__(cls) -> JsNull:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "jsnull"


jsnull = JsNull()


def _number(value: int | float) -> int | float:
    # A JS number crossing into Python: int when it is a safe integer, else float.
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    return value


class JsProxy:
    """Base of every fake proxy."""


class JsArrayBuffer(JsProxy):
    """An ArrayBuffer (or typed array) proxy."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self.byteLength = len(self._data)

    def to_bytes(self) -> bytes:
        return self._data

    def to_py(self) -> memoryview:
        return memoryview(self._data)


class JsUint8Array(JsArrayBuffer):
    """A Uint8Array proxy (what `to_js(bytes)` gives)."""


class JsArray(JsProxy):
    """A JS array proxy: iterable, indexable, `length`, `to_py()`."""

    def __init__(self, items: list[Any]) -> None:
        self._items = list(items)
        self.length = len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __getitem__(self, index: int) -> Any:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def to_py(self) -> list[Any]:
        return [_deep_to_py(v) for v in self._items]


class JsObject(JsProxy):
    """A plain JS object proxy: attribute access, `to_py()` gives a dict."""

    def __init__(self, entries: dict[str, Any]) -> None:
        object.__setattr__(self, "_entries", dict(entries))

    def __getattr__(self, name: str) -> Any:
        entries = object.__getattribute__(self, "_entries")
        if name in entries:
            return entries[name]
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._entries[name] = value

    def object_keys(self) -> list[str]:
        return list(self._entries)

    def to_py(self) -> dict[str, Any]:
        return {k: _deep_to_py(v) for k, v in self._entries.items()}


class JsMap(JsObject):
    """What `to_js(dict)` gives without a dict_converter: a Map, not an Object."""


def _deep_to_py(value: Any) -> Any:
    # Pyodide's to_py converts arrays and plain objects, leaves buffers as memoryview
    # and null as jsnull.
    if isinstance(value, JsArray | JsObject):
        return value.to_py()
    if isinstance(value, JsArrayBuffer):
        return value.to_py()
    return value


def to_js(value: Any, *, dict_converter: Callable[..., Any] | None = None, **_: Any) -> Any:
    """pyodide.ffi.to_js: bytes → Uint8Array, list → Array, dict → Map (or Object)."""
    if value is None:
        raise AssertionError("to_js(None) gives undefined; the adapters must send jsnull")
    if isinstance(value, JsProxy | JsNull):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return JsUint8Array(bytes(value))
    if isinstance(value, list | tuple):
        return JsArray([to_js(v, dict_converter=dict_converter) for v in value])
    if isinstance(value, dict):
        entries = {str(k): to_js(v, dict_converter=dict_converter) for k, v in value.items()}
        if dict_converter is None:
            return JsMap(entries)
        return dict_converter(list(entries.items()))
    return value


class _ObjectCtor:
    """The JS `Object` global, for `Object.fromEntries`."""

    @staticmethod
    def fromEntries(entries: list[tuple[str, Any]]) -> JsObject:
        return JsObject(dict(entries))


# --- SQL ------------------------------------------------------------------------------


def _js_binding(value: Any) -> Any:
    if isinstance(value, JsNull):
        return None
    if value is None:
        raise JsException("TypeError: Unsupported binding type: undefined")
    if isinstance(value, bool):
        raise JsException("TypeError: Unsupported binding type: boolean")
    if isinstance(value, JsArrayBuffer):
        return value.to_bytes()
    if isinstance(value, int | float | str):
        if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
            raise JsException("TypeError: Unsupported binding type: bigint")
        return value
    # bytes, dicts, ... arrive as PyProxy objects, which SQL cannot bind.
    raise JsException(f"TypeError: Unsupported binding type: PyProxy({type(value).__name__})")


def _js_value(value: Any) -> Any:
    if value is None:
        return jsnull
    if isinstance(value, bytes):
        return JsArrayBuffer(value)
    if isinstance(value, int | float):
        return _number(float(value)) if isinstance(value, float) else value
    return value


class SqlStorageCursor(JsProxy):
    """The cursor `sql.exec()` returns."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        names = [d[0] for d in cursor.description or []]
        self.columnNames = JsArray(names)
        self._rows = [[_js_value(v) for v in row] for row in cursor.fetchall()]
        self._names = names
        self._consumed = 0
        self._written = max(cursor.rowcount, 0) if not names else 0

    @property
    def rowsRead(self) -> int:
        return self._consumed

    @property
    def rowsWritten(self) -> int:
        return self._written

    def _take(self) -> list[list[Any]]:
        rows = self._rows[self._consumed :]
        self._consumed = len(self._rows)
        return rows

    def toArray(self) -> JsArray:
        return JsArray([JsObject(dict(zip(self._names, row, strict=True))) for row in self._take()])

    def one(self) -> JsObject:
        rows = self._take()
        if len(rows) != 1:
            raise JsException(f"Error: Expected exactly one result from SQL query, got {len(rows)}")
        return JsObject(dict(zip(self._names, rows[0], strict=True)))

    def raw(self) -> Iterator[JsArray]:
        return iter([JsArray(row) for row in self._take()])

    def __iter__(self) -> Iterator[JsObject]:
        return iter([JsObject(dict(zip(self._names, row, strict=True))) for row in self._take()])


class SqlStorage(JsProxy):
    """`ctx.storage.sql` on a real SQLite file."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA foreign_keys=ON")

    def exec(self, query: str, *bindings: Any) -> SqlStorageCursor:
        words = query.strip().split(None, 1)
        if words and words[0].upper() in ("BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT"):
            raise JsException(
                "Error: To execute a transaction, please use the state.storage.transaction() "
                "or state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION "
                "or SAVEPOINT statements."
            )
        values = [_js_binding(b) for b in bindings]
        try:
            return SqlStorageCursor(self._db.execute(query, values))
        except sqlite3.Error as exc:
            raise JsException(f"Error: {exc}: SQLITE_ERROR") from exc

    @property
    def databaseSize(self) -> int:
        pages = self._db.execute("PRAGMA page_count").fetchone()[0]
        return int(pages * self._db.execute("PRAGMA page_size").fetchone()[0])

    def close(self) -> None:
        self._db.close()


# --- alarms and the object's state -----------------------------------------------------


class DurableObjectStorage(JsProxy):
    """`ctx.storage`: the SQL API and the alarm."""

    def __init__(self, path: Path, on_alarm: Callable[[], Awaitable[None]]) -> None:
        self.sql = SqlStorage(path)
        self._alarm: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._on_alarm = on_alarm
        self._running: set[asyncio.Task[None]] = set()

    async def getAlarm(self) -> Any:
        return jsnull if self._alarm is None else _number(self._alarm)

    async def setAlarm(self, scheduled_time: Any) -> None:
        if not isinstance(scheduled_time, int | float) or isinstance(scheduled_time, bool):
            raise JsException("TypeError: setAlarm() expects a number of milliseconds or a Date")
        # JS numbers are doubles: whatever Python sent, the platform keeps a double.
        self._alarm = float(scheduled_time)
        self._arm()

    async def deleteAlarm(self) -> None:
        self._alarm = None
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._alarm is None:
            return
        when = self._alarm
        delay = max(0.0, when / 1000 - time.time())
        self._timer = asyncio.get_running_loop().call_later(delay, self._ring, when)

    def _ring(self, when: float) -> None:
        async def run() -> None:
            await self._on_alarm()
            # A successful handler clears the alarm unless it set a new one.
            if self._alarm == when:
                self._alarm = None

        task = asyncio.ensure_future(run())
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.sql.close()


class WebSocket(JsProxy):
    """One end of a WebSocketPair."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.closed = False
        self.readyState = 1

    def send(self, message: Any) -> None:
        if self.closed:
            raise JsException("TypeError: Can't call WebSocket send() after close().")
        if isinstance(message, str):
            self.sent.append(("text", message))
        elif isinstance(message, JsArrayBuffer):
            self.sent.append(("bytes", message.to_bytes()))
        else:
            raise JsException("TypeError: Failed to execute 'send': unsupported message type")

    def close(self, code: int = 1000, reason: str = "") -> None:
        if self.closed:
            raise JsException("TypeError: Can't call WebSocket close() after close().")
        reserved = (1004, 1005, 1006, 1015)
        if not isinstance(code, int) or not (1000 <= code <= 4999) or code in reserved:
            raise JsException(f"TypeError: Invalid WebSocket close code: {code}.")
        if len(reason.encode()) > 123:
            raise JsException("TypeError: Reason too long for a WebSocket close frame.")
        self.closed = True
        self.readyState = 3
        self.sent.append(("close", (code, reason)))


class _WebSocketPairInstance(JsProxy):
    def __init__(self) -> None:
        self._client = WebSocket()
        self._server = WebSocket()

    def object_values(self) -> JsArray:
        """`Object.values(pair)`: [client, server]."""
        return JsArray([self._client, self._server])


class WebSocketPair:
    """The `WebSocketPair` global; `new WebSocketPair()` is `WebSocketPair.new()`."""

    @staticmethod
    def new() -> _WebSocketPairInstance:
        return _WebSocketPairInstance()


class DurableObjectState(JsProxy):
    """`ctx` of a Durable Object."""

    def __init__(self, path: Path, on_alarm: Callable[[], Awaitable[None]]) -> None:
        self.storage = DurableObjectStorage(path, on_alarm)
        self._sockets: list[tuple[WebSocket, list[str]]] = []
        self.waited: list[Awaitable[Any]] = []

    def acceptWebSocket(self, ws: WebSocket, tags: Any = None) -> None:
        if not isinstance(ws, WebSocket):
            raise JsException("TypeError: acceptWebSocket() expects a WebSocket")
        self._sockets.append((ws, list(tags or [])))

    def getWebSockets(self, tag: str | None = None) -> JsArray:
        return JsArray(
            [ws for ws, tags in self._sockets if not ws.closed and (tag is None or tag in tags)]
        )

    def waitUntil(self, promise: Any) -> None:
        # Pyodide passes an asyncio future to JS as a Promise; anything else is an error.
        if not asyncio.isfuture(promise):
            raise JsException("TypeError: waitUntil() expects a Promise")
        self.waited.append(promise)


class Response:
    """The SDK's `workers.Response`, as far as the adapters use it."""

    def __init__(
        self,
        body: Any = None,
        status: int = 200,
        headers: Any = None,
        web_socket: Any = None,
        **_: Any,
    ) -> None:
        self.body = body
        self.status = status
        self.headers = dict(headers or {})
        self.web_socket = web_socket


def modules() -> dict[str, types.ModuleType]:
    """Stand-ins for sys.modules: `js`, `pyodide`, `pyodide.ffi` and `workers`."""
    js = types.ModuleType("js")
    js.WebSocketPair = WebSocketPair  # type: ignore[attr-defined]
    js.Object = _ObjectCtor  # type: ignore[attr-defined]
    pyodide = types.ModuleType("pyodide")
    ffi = types.ModuleType("pyodide.ffi")
    ffi.jsnull = jsnull  # type: ignore[attr-defined]
    ffi.to_js = to_js  # type: ignore[attr-defined]
    ffi.JsProxy = JsProxy  # type: ignore[attr-defined]
    ffi.JsException = JsException  # type: ignore[attr-defined]
    pyodide.ffi = ffi  # type: ignore[attr-defined]
    workers = types.ModuleType("workers")
    workers.Response = Response  # type: ignore[attr-defined]
    return {"js": js, "pyodide": pyodide, "pyodide.ffi": ffi, "workers": workers}
