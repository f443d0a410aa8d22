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
  `rowsRead` and `rowsWritten`. Its rows come as the Workers SDK hands them over: the
  SDK wraps a Durable Object's `ctx.storage` and converts what its methods return, so
  `toArray()` is a Python list of rows of the SDK's own dict type, SQL NULL is None
  and a BLOB a memoryview (seen on workerd: tests/cloudflare/test_on_workerd.py);
- `ctx.storage.transactionSync(callback)` calls the callback at once inside a
  savepoint (nested calls nest) and returns what it returned; when it throws, its
  writes are rolled back and the error is thrown on. A Python exception leaves a
  callback as a JS `PythonError` and comes back as a JsException;
- the Workers SDK wraps a Durable Object's `ctx.storage`: a Python callable passed to
  one of its methods becomes a `create_proxy` that nothing ever destroys (measured on
  workerd: every transactionSync callback stayed alive), and `workers.python_to_rpc`
  hands back the JS object behind the wrapper;
- `new WebSocketPair()` is `WebSocketPair.new()`, `Object.values(pair)` is
  `.object_values()`; `send()` after `close()` throws, `close()` refuses the
  reserved codes 1004-1006 and 1015 and reasons over 123 bytes, and a second
  `close()` does nothing; a socket we closed reads CLOSING (2), and
  `ctx.getWebSockets()` still lists it, until the peer answers; a binary message
  arrives as an ArrayBuffer (`to_bytes()`);
- `ctx.acceptWebSocket(ws, tags)` takes the tags as a JS array only (a Python list
  crosses as a proxy: "parameter 2 is not of type 'Array'");
- `ctx.storage.getAlarm()` resolves to null or a number of ms; the alarm handler
  runs at that time and the alarm is cleared once it succeeds;
- a Python object passed to a JS function (`js_function`) crosses as a *borrowed*
  PyProxy: Pyodide destroys it when the call returns, or, when the call returns a
  Promise, when that Promise settles. Using it afterwards throws "This borrowed
  proxy was automatically destroyed ...". `create_proxy(obj)` makes one that
  lives until its `destroy()`. A PyProxy of an awaitable is a thenable: its first
  `then` schedules the awaitable and destroys the proxy, keeping the promise;
- `ctx.waitUntil(p)` returns at once and adopts `p` as a Promise afterwards (the
  runtime reads its `then` in a later microtask), so a borrowed proxy is already
  gone by then: the fake records that in `ctx.lost_wait_until`;
- awaiting a JS Promise from Python goes through a Future that follows it
  (`python_future`): cancelling that Future leaves the JS work running;
- `new AbortController()` is `AbortController.new()`; `abort(reason?)` sets
  `signal.aborted` and `signal.reason` (an AbortError by default) once and runs
  the signal's "abort" listeners.

Behind the SQL fake is a real SQLite database, so statements behave as SQLite does.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
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


# --- Python objects seen from JS: PyProxy, borrowed or created --------------------------

BORROWED_DESTROYED = (
    "This borrowed proxy was automatically destroyed at the end of a function call. "
    "Try using create_proxy or create_once_callable."
)
BORROWED_DESTROYED_ASYNC = (
    "This borrowed proxy was automatically destroyed at the end of an asynchronous "
    "function call. Try using create_proxy or create_once_callable."
)


class PyProxy:
    """What JS holds for a Python object (Pyodide's PyProxy).

    Thenable when the object is awaitable (decided when the proxy is made, as
    Pyodide picks a PyProxy's methods from the object's type).
    """

    def __init__(self, obj: Any, *, borrowed: bool) -> None:
        self._obj = obj
        self.borrowed = borrowed
        self.thenable = inspect.isawaitable(obj)
        self.destroyed_message: str | None = None
        self._promise: asyncio.Future[Any] | None = None

    @property
    def destroyed(self) -> bool:
        return self.destroyed_message is not None

    def destroy(self, message: str = "Object has already been destroyed") -> None:
        """Release the Python object; a second call does nothing, as in Pyodide."""
        if self.destroyed_message is None:
            self.destroyed_message = message
            self._obj = None

    def target(self) -> Any:
        """The proxied object; throws as Pyodide does once the proxy is destroyed."""
        if self.destroyed_message is not None:
            raise JsException(f"Error: {self.destroyed_message}")
        return self._obj

    def __call__(self, *args: Any) -> Any:
        """JS calling the proxied Python function: an exception leaves as a JS error."""
        try:
            return self.target()(*args)
        except JsException:
            raise
        except Exception as exc:
            raise JsException(f"PythonError: {type(exc).__name__}: {exc}") from exc

    def then(
        self,
        on_fulfilled: Callable[[Any], Any] | None = None,
        on_rejected: Callable[[Any], Any] | None = None,
    ) -> asyncio.Future[Any]:
        """Promise.then of an awaitable's proxy: the awaitable is scheduled on first use."""
        if not self.thenable:
            raise JsException("TypeError: proxy.then is not a function")
        if self._promise is None:
            self._promise = asyncio.ensure_future(self.target())
            # Pyodide keeps the promise and lets go of the proxy at this point.
            self.destroy()
        chained: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def settle(done: asyncio.Future[Any]) -> None:
            if chained.done():
                return
            if done.cancelled():
                error: BaseException = JsException("Error: the awaitable was cancelled")
            elif done.exception() is not None:
                error = done.exception()  # type: ignore[assignment]
            else:
                value = done.result()
                chained.set_result(on_fulfilled(value) if on_fulfilled else value)
                return
            if on_rejected is not None:
                chained.set_result(on_rejected(error))
            else:
                chained.set_exception(error)

        self._promise.add_done_callback(settle)
        return chained


class JsDoubleProxy(JsProxy):
    """`create_proxy(obj)`: a JsProxy of a PyProxy whose lifetime Python controls."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj
        self.js = PyProxy(obj, borrowed=False)

    def destroy(self) -> None:
        self.js.destroy()

    def unwrap(self) -> Any:
        return self.js.target()


def create_proxy(obj: Any, **_: Any) -> JsDoubleProxy:
    """pyodide.ffi.create_proxy."""
    return JsDoubleProxy(obj)


def _py_to_js_argument(value: Any, borrowed: list[PyProxy]) -> Any:
    # Primitives and JS values cross as they are; a double proxy gives its PyProxy;
    # any other Python object becomes a borrowed PyProxy owned by this call.
    if value is None or isinstance(value, bool | int | float | str | JsNull):
        return value
    if isinstance(value, JsDoubleProxy):
        return value.js
    if isinstance(value, JsProxy | PyProxy):
        return value
    proxy = PyProxy(value, borrowed=True)
    borrowed.append(proxy)
    return proxy


def python_future(promise: asyncio.Future[Any]) -> asyncio.Future[Any]:
    """What Python gets for a JS Promise: a Future that follows it.

    Cancelling that Future does not stop the JS work behind the Promise (only an
    AbortSignal the work listens to can), exactly as with Pyodide's wrapped Promises.
    """
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def follow(done: asyncio.Future[Any]) -> None:
        if future.done():
            return
        if done.cancelled():
            future.cancel()
        elif done.exception() is not None:
            future.set_exception(done.exception())  # type: ignore[arg-type]
        else:
            future.set_result(done.result())

    promise.add_done_callback(follow)
    return future


def js_function(method: Callable[..., Any]) -> Callable[..., Any]:
    """Give a fake JS method Pyodide's call boundary for its Python arguments."""

    @functools.wraps(method)
    def call(self: Any, *args: Any) -> Any:
        borrowed: list[PyProxy] = []
        js_args = [_py_to_js_argument(a, borrowed) for a in args]
        try:
            result = method(self, *js_args)
        except BaseException:
            for proxy in borrowed:
                proxy.destroy(BORROWED_DESTROYED)
            raise
        if inspect.isawaitable(result):
            # A Promise: Pyodide keeps the arguments alive until it settles.
            promise = asyncio.ensure_future(result)

            def release(_: asyncio.Future[Any]) -> None:
                for proxy in borrowed:
                    proxy.destroy(BORROWED_DESTROYED_ASYNC)

            promise.add_done_callback(release)
            return python_future(promise)
        for proxy in borrowed:
            proxy.destroy(BORROWED_DESTROYED)
        return result

    return call


# --- AbortController ------------------------------------------------------------------


class AbortSignal(JsProxy):
    """An AbortSignal: `aborted`, `reason`, and "abort" listeners."""

    def __init__(self) -> None:
        self.aborted = False
        self.reason: Any = None
        self._listeners: list[Callable[[Any], Any]] = []

    def addEventListener(self, kind: str, listener: Callable[[Any], Any], *_: Any) -> None:
        if kind == "abort":
            self._listeners.append(listener)

    def throwIfAborted(self) -> None:
        if self.aborted:
            raise self.reason

    def _abort(self, reason: Any) -> None:
        if self.aborted:
            return
        self.aborted = True
        self.reason = reason
        for listener in list(self._listeners):
            listener(JsObject({"type": "abort"}))


class AbortController(JsProxy):
    """The `AbortController` global; `new AbortController()` is `AbortController.new()`."""

    def __init__(self) -> None:
        self.signal = AbortSignal()
        self.abort_calls = 0

    @staticmethod
    def new() -> AbortController:
        return AbortController()

    def abort(self, reason: Any = None) -> None:
        self.abort_calls += 1
        if reason is None:
            reason = JsException("AbortError: The operation was aborted.")
        elif not isinstance(reason, BaseException):
            reason = JsException(f"AbortError: {reason}")
        self.signal._abort(reason)


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


class SdkRow(dict[str, Any]):
    """A row as the Workers SDK converts one (its `workers.rpc.JsDict`): a dict subclass."""


def _sdk_value(value: Any) -> Any:
    return memoryview(value) if isinstance(value, bytes) else value


class SqlStorageCursor(JsProxy):
    """The cursor `sql.exec()` returns, through the SDK's wrapper of `ctx.storage`."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        names = [d[0] for d in cursor.description or []]
        self.columnNames = JsArray(names)
        self._rows = [[_sdk_value(v) for v in row] for row in cursor.fetchall()]
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

    def toArray(self) -> list[SdkRow]:
        return [SdkRow(zip(self._names, row, strict=True)) for row in self._take()]

    def one(self) -> SdkRow:
        rows = self._take()
        if len(rows) != 1:
            raise JsException(f"Error: Expected exactly one result from SQL query, got {len(rows)}")
        return SdkRow(zip(self._names, rows[0], strict=True))

    def raw(self) -> Iterator[list[Any]]:
        return iter([list(row) for row in self._take()])

    def __iter__(self) -> Iterator[SdkRow]:
        return iter([SdkRow(zip(self._names, row, strict=True)) for row in self._take()])


class SqlStorage(JsProxy):
    """`ctx.storage.sql` on a real SQLite file."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA foreign_keys=ON")
        self._depth = 0

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

    def savepoint(self, callback: Any) -> Any:
        """What transactionSync does with the database: all of `callback`, or none of it."""
        self._depth += 1
        name = f"_cf_savepoint_{self._depth}"
        self._db.execute(f"SAVEPOINT {name}")
        try:
            result = callback()
            self._db.execute(f"RELEASE {name}")
        except BaseException:
            self._db.execute(f"ROLLBACK TO {name}")
            self._db.execute(f"RELEASE {name}")
            raise
        finally:
            self._depth -= 1
        return result

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

    @js_function
    def transactionSync(self, callback: Any) -> Any:
        if not callable(callback):
            raise JsException("TypeError: transactionSync() expects a function")
        return self.sql.savepoint(callback)

    async def getAlarm(self) -> Any:
        return jsnull if self._alarm is None else _number(self._alarm)

    async def setAlarm(self, scheduled_time: Any) -> None:
        if not isinstance(scheduled_time, int | float) or isinstance(scheduled_time, bool):
            raise JsException(
                "TypeError: Failed to execute 'setAlarm' on 'DurableObjectStorage': "
                "parameter 1 is not of type 'date'."
            )
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


class SdkStorage:
    """`ctx.storage` as the Workers SDK wraps it: calls go to the JS object, converted."""

    def __init__(self, storage: DurableObjectStorage) -> None:
        self.js_storage = storage
        # The proxies the wrapper made of callables: the SDK never destroys them.
        self.kept: list[JsDoubleProxy] = []

    def transactionSync(self, callback: Any) -> Any:
        if callable(callback) and not isinstance(callback, JsProxy):
            callback = create_proxy(callback)
            self.kept.append(callback)
        return self.js_storage.transactionSync(callback)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.js_storage, name)


def python_to_rpc(value: Any) -> Any:
    """workers.python_to_rpc, for what the adapters pass it: the JS object of a wrapper."""
    return value.js_storage if isinstance(value, SdkStorage) else value


class WebSocket(JsProxy):
    """One end of a WebSocketPair."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.closed = False
        self.readyState = 1
        self._attachment: Any = None

    def serializeAttachment(self, value: Any) -> None:
        # Structured clone: strings cross as they are; a Python dict would not.
        if not isinstance(value, str | int | float | bool | type(None)):
            raise JsException("DataCloneError: value could not be cloned")
        self._attachment = value

    def deserializeAttachment(self) -> Any:
        return self._attachment

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
        reserved = (1004, 1005, 1006, 1015)
        if not isinstance(code, int) or not (1000 <= code <= 4999) or code in reserved:
            raise JsException(f"InvalidAccessError: Invalid WebSocket close code: {code}.")
        if len(reason.encode()) > 123:
            raise JsException(
                "SyntaxError: WebSocket close reason must not be longer than 123 bytes "
                "when UTF-8 encoded."
            )
        if self.closed:
            return
        self.closed = True
        # CLOSING until the peer answers, which no peer of these fakes does.
        self.readyState = 2
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
        self.storage = SdkStorage(DurableObjectStorage(path, on_alarm))
        self._sockets: list[tuple[WebSocket, list[str]]] = []
        # The Promises the object is kept alive for, as the runtime adopted them.
        self.waited: list[asyncio.Future[Any]] = []
        # waitUntil values whose `then` threw when the runtime adopted them.
        self.lost_wait_until: list[JsException] = []

    @js_function
    def acceptWebSocket(self, ws: WebSocket, tags: Any = None) -> None:
        failed = "TypeError: Failed to execute 'acceptWebSocket' on 'DurableObjectState'"
        if not isinstance(ws, WebSocket):
            raise JsException(f"{failed}: parameter 1 is not of type 'WebSocket'.")
        if tags is not None and not isinstance(tags, JsArray):
            raise JsException(f"{failed}: parameter 2 is not of type 'Array'.")
        self._sockets.append((ws, [str(tag) for tag in tags or []]))

    def getWebSockets(self, tag: str | None = None) -> JsArray:
        # A socket we closed stays listed while CLOSING; no peer of these fakes answers.
        return JsArray([ws for ws, tags in self._sockets if tag is None or tag in tags])

    @js_function
    def waitUntil(self, promise: Any) -> None:
        if not (isinstance(promise, PyProxy) and promise.thenable):
            raise JsException("TypeError: waitUntil() expects a Promise")
        loop = asyncio.get_running_loop()
        adopted: asyncio.Future[Any] = loop.create_future()
        self.waited.append(adopted)
        # The call returns first; the runtime reads `then` in a later microtask.
        loop.call_soon(self._adopt, promise, adopted)

    def _adopt(self, promise: PyProxy, adopted: asyncio.Future[Any]) -> None:
        def fulfilled(value: Any) -> None:
            if not adopted.done():
                adopted.set_result(value)

        def rejected(error: Any) -> None:
            if not adopted.done():
                adopted.set_exception(
                    error if isinstance(error, BaseException) else JsException(str(error))
                )

        try:
            promise.then(fulfilled, rejected)
        except JsException as exc:
            self.lost_wait_until.append(exc)
            rejected(exc)


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

    @property
    def js_object(self) -> Response:
        """The JS Response (the SDK's public attribute); here the response itself."""
        return self

    @property
    def webSocket(self) -> Any:
        """The JS Response's client end of an accepted WebSocket."""
        return self.web_socket


def modules() -> dict[str, types.ModuleType]:
    """Stand-ins for sys.modules: `js`, `pyodide`, `pyodide.ffi` and `workers`."""
    js = types.ModuleType("js")
    js.WebSocketPair = WebSocketPair  # type: ignore[attr-defined]
    js.Object = _ObjectCtor  # type: ignore[attr-defined]
    js.AbortController = AbortController  # type: ignore[attr-defined]
    pyodide = types.ModuleType("pyodide")
    ffi = types.ModuleType("pyodide.ffi")
    ffi.jsnull = jsnull  # type: ignore[attr-defined]
    ffi.to_js = to_js  # type: ignore[attr-defined]
    ffi.create_proxy = create_proxy  # type: ignore[attr-defined]
    ffi.JsProxy = JsProxy  # type: ignore[attr-defined]
    ffi.JsException = JsException  # type: ignore[attr-defined]
    pyodide.ffi = ffi  # type: ignore[attr-defined]
    workers = types.ModuleType("workers")
    workers.Response = Response  # type: ignore[attr-defined]
    workers.python_to_rpc = python_to_rpc  # type: ignore[attr-defined]
    return {"js": js, "pyodide": pyodide, "pyodide.ffi": ffi, "workers": workers}
