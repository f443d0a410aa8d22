"""The local runtime's outbound HTTP/1.1 transport for objects: lean, over asyncio, one
keep-alive pool per process (the runtime installs it: `albert.outbound.shared_pool`).

Why it stays, in the local runtime only (never uploaded; the product's own code is on httpx's
transport): with 1,000 clients connected, the added latency per turn at p99 was 16.9 ms with
it and 105–240 ms on httpx's default (httpcore + h11), against a target of 50 ms
(`python -m bench --only concurrency`). A streamed model answer is one HTTP chunk per token,
and h11 turns each into events, objects and context managers; here a body is decoded with
bytes operations over whatever one socket read brought, and yielded as one piece per read.

What it does: HTTP/1.1 over TCP or TLS (the given SSL context: SNI and verification as the
context says), request bodies with Content-Length or chunked, response bodies delimited by
Content-Length, chunked encoding or the connection's close; keep-alive connections reused
per origin (scheme, host, port), idle ones dropped after `keepalive_expiry` or as soon as
the server closes them; at most `max_connections` open at once (a request waits up to its
`pool` timeout for one). httpx's connect/read/write/pool timeouts and its exception classes
mean what they mean with the default transport. A body closed before its end, an error or
a cancelled task closes the connection and frees its place in the pool.

Not here: HTTP/2, proxies (the runtime keeps httpx's default transport when the environment
names one), `Expect: 100-continue`, protocol upgrades.

Connections belong to an event loop, so the pool is kept per running loop.
"""

from __future__ import annotations

import asyncio
import collections
import select
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

# A head (status line and headers) or a chunk-size line longer than these is refused.
MAX_HEAD_BYTES = 64 * 1024
MAX_CHUNK_LINE_BYTES = 4 * 1024
# Received and not yet read by the response's reader: reading from the socket pauses above.
_HIGH_WATER = 1024 * 1024
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_DEFAULT_PORTS = {b"http": 80, b"https": 443}
_HAS_POLL = hasattr(select, "poll")

Origin = tuple[bytes, str, int]


class _TimedOut(Exception):
    """A read waited longer than its read timeout."""


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection: bytes in a list as they arrive, one waiter at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, origin: Origin) -> None:
        self.loop = loop
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.idle = False
        self.idle_since = 0.0
        self.on_lost_while_idle: Callable[[_Connection], None] | None = None
        self._chunks: list[bytes] = []
        self._buffered = 0
        self._eof = False
        self._closed = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._reading_paused = False
        self._write_paused = False
        self._drained: asyncio.Future[None] | None = None

    # --- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > _HIGH_WATER and not self._reading_paused and self.transport:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        self._eof = True
        self._wake()
        return None  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        self._closed = True
        if exc is not None and self._error is None:
            self._error = exc
        self._wake()
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_exception(ConnectionResetError("the connection was lost"))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.idle and self.on_lost_while_idle is not None:
            self.on_lost_while_idle(self)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # --- reading -----------------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _on_deadline(self) -> None:
        # One timer serves many reads: it is armed for the earliest deadline and, when it
        # fires early for the read now waiting, re-armed for that read's own deadline.
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self.loop.time() >= self._deadline:
            waiter.set_exception(_TimedOut())
        else:
            self._timer = self.loop.call_at(self._deadline, self._on_deadline)

    def take(self) -> bytes:
        """Everything received and not read yet (b"" if nothing)."""
        chunks = self._chunks
        if not chunks:
            return b""
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._buffered = 0
        if self._reading_paused and self.transport is not None and not self._closed:
            self._reading_paused = False
            self.transport.resume_reading()
        return data

    def unread(self, data: bytes) -> None:
        """Put bytes back in front of what was received."""
        if data:
            self._chunks.insert(0, data)
            self._buffered += len(data)

    async def receive(self, seconds: float | None) -> bytes:
        """At least one byte, or b"" at the end of the stream; raises _TimedOut (nothing
        arrived within `seconds`) or OSError."""
        if not self._chunks and not self._eof:
            waiter = self.loop.create_future()
            self._waiter = waiter
            if seconds is not None:
                self._deadline = deadline = self.loop.time() + seconds
                timer = self._timer
                if timer is None or timer.when() > deadline:
                    if timer is not None:
                        timer.cancel()
                    self._timer = self.loop.call_at(deadline, self._on_deadline)
            try:
                await waiter
            finally:
                self._waiter = None
        if self._chunks:
            return self.take()
        if self._error is not None:
            raise self._error if isinstance(self._error, OSError) else OSError(str(self._error))
        return b""

    @property
    def has_unread(self) -> bool:
        return bool(self._chunks)

    @property
    def usable(self) -> bool:
        """Open, with nothing unread and no end-of-stream from the server."""
        return not (self._closed or self._eof or self._chunks or self.transport is None) and (
            not self.transport.is_closing()
        )

    def still_open(self) -> bool:
        """`usable`, also by the socket itself: a busy loop may not have read a close that
        has already arrived (an idle socket that is readable holds EOF or stray bytes)."""
        if not self.usable or self.transport is None:
            return False
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return True
        try:
            return not _readable_now(sock.fileno())
        except (OSError, ValueError):
            return False

    # --- writing -----------------------------------------------------------------------

    async def send(self, data: bytes, seconds: float | None) -> None:
        """Write, waiting (up to `seconds`) while the transport's buffer is full."""
        if self._closed or self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("the connection is closed")
        self.transport.write(data)
        if self._write_paused:
            drained = self.loop.create_future()
            self._drained = drained
            async with asyncio.timeout(seconds):
                await drained

    def close(self) -> None:
        """Close now (no waiting for the peer)."""
        self.idle = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.transport is not None and not self._closed:
            self._closed = True
            self.transport.abort()


def _readable_now(fd: int) -> bool:
    """True when the descriptor has bytes or an end-of-stream waiting (or is broken).

    poll, not select: select() refuses descriptors from FD_SETSIZE (1024) up, and a
    runtime serving a thousand objects (their sockets and SQLite files) hands its model
    connections descriptors far above that, which made every idle connection look closed:
    each request opened a new one.
    """
    if _HAS_POLL:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)  # Windows: no poll, and no such ceiling
    return bool(readable)


class _Pool:
    """Keep-alive connections of one event loop, at most `limit` open at once."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limit: int,
        idle_per_origin: int,
        keepalive_expiry: float,
    ) -> None:
        self.loop = loop
        self.limit = limit
        self.idle_per_origin = idle_per_origin
        self.keepalive_expiry = keepalive_expiry
        self.open = 0
        self.closed = False
        self._idle: dict[Origin, list[_Connection]] = {}
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = self.loop.time()
        while idle:
            conn = idle.pop()  # the most recently used: the least likely to be timed out
            conn.idle = False
            if now - conn.idle_since < self.keepalive_expiry and conn.still_open():
                return conn
            self._drop(conn)
        return None

    def _evict_idle(self) -> bool:
        for idle in self._idle.values():
            if idle:
                conn = idle.pop(0)  # the oldest
                conn.idle = False
                self._drop(conn)
                return True
        return False

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        self.open -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _lost_while_idle(self, conn: _Connection) -> None:
        idle = self._idle.get(conn.origin)
        if conn.idle and idle is not None and conn in idle:
            idle.remove(conn)
            conn.idle = False
            self.open -= 1
            self._wake()

    async def acquire(
        self, origin: Origin, connect: Callable[[], Any], pool_timeout: float | None
    ) -> tuple[_Connection, bool]:
        """A connection to `origin` (and whether it was reused), within the pool timeout."""
        if self.closed:
            raise RuntimeError("the transport is closed")
        deadline = None if pool_timeout is None else self.loop.time() + pool_timeout
        while True:
            conn = self._take_idle(origin)
            if conn is not None:
                return conn, True
            if self.open < self.limit:
                self.open += 1
                try:
                    conn = await connect()
                except BaseException:
                    self.open -= 1
                    self._wake()
                    raise
                conn.on_lost_while_idle = self._lost_while_idle
                return conn, False
            if not self._evict_idle():
                await self._wait_for_a_place(deadline, pool_timeout)

    async def _wait_for_a_place(self, deadline: float | None, pool_timeout: float | None) -> None:
        waiter = self.loop.create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout_at(deadline):
                await waiter
        except TimeoutError:
            raise httpx.PoolTimeout(
                f"no connection came free within {pool_timeout:g} s "
                f"({self.limit} connections are open)"
            ) from None
        except BaseException:
            # A wake given to a waiter that is leaving goes to the next one.
            if waiter.done() and not waiter.cancelled():
                self._wake()
            raise
        finally:
            if not waiter.done():
                waiter.cancel()

    def release(self, conn: _Connection, reusable: bool) -> None:
        """Take a connection back: idle for reuse if it can be, else closed."""
        idle = self._idle.setdefault(conn.origin, [])
        if reusable and not self.closed and conn.usable and len(idle) < self.idle_per_origin:
            conn.idle = True
            conn.idle_since = self.loop.time()
            idle.append(conn)
            self._wake()
        else:
            self._drop(conn)

    def close(self) -> None:
        """Close every idle connection; busy ones close when their response ends."""
        self.closed = True
        for idle in self._idle.values():
            while idle:
                conn = idle.pop()
                conn.idle = False
                self._drop(conn)


class _ChunkedDecoder:
    """`Transfer-Encoding: chunked`, decoded over whatever bytes arrive."""

    __slots__ = ("_held", "_left", "_state", "done")

    _SIZE, _DATA, _DATA_END, _TRAILER = range(4)

    def __init__(self) -> None:
        self._held = b""
        self._left = 0
        self._state = self._SIZE
        self.done = False

    @property
    def leftover(self) -> bytes:
        """Bytes after the body's end (a reusable connection has none)."""
        return self._held

    def feed(self, data: bytes) -> list[bytes]:
        """The body bytes `data` completes; raises ValueError on a malformed encoding."""
        buf = self._held + data if self._held else data
        end = len(buf)
        pos = 0
        out: list[bytes] = []
        while pos < end and not self.done:
            if self._state == self._DATA:
                take = min(self._left, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._state = self._DATA_END
            else:
                after = self._line(buf, pos, end)
                if after == pos:
                    break  # the line is not complete yet
                pos = after
        self._held = buf[pos:] if pos < end else b""
        return out

    def _line(self, buf: bytes, pos: int, end: int) -> int:
        """Take one line (a chunk size, a chunk's CRLF or a trailer): where the next starts,
        or `pos` while the line is incomplete."""
        newline = buf.find(b"\n", pos)
        if newline < 0:
            if end - pos > MAX_CHUNK_LINE_BYTES:
                raise ValueError("a chunk-size line is too long")
            return pos
        line = buf[pos:newline]
        if line.endswith(b"\r"):
            line = line[:-1]
        if self._state == self._DATA_END:
            if line:
                raise ValueError("a chunk is not followed by CRLF")
            self._state = self._SIZE
        elif self._state == self._TRAILER:
            self.done = not line
        else:
            digits = line.split(b";", 1)[0].strip(b" \t")
            if not digits or len(digits) > 16 or digits.strip(_HEX_DIGITS):
                raise ValueError(f"a chunk size is not hexadecimal: {line[:40]!r}")
            self._left = int(digits, 16)
            self._state = self._DATA if self._left else self._TRAILER
        return newline + 1


class _Head:
    """A parsed response head."""

    __slots__ = ("headers", "reason", "status", "version")

    def __init__(
        self, version: bytes, status: int, reason: bytes, headers: list[tuple[bytes, bytes]]
    ) -> None:
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers


def _parse_head(raw: bytes) -> _Head:
    lines = raw.splitlines()
    status_line = lines[0] if lines else b""
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[0]) != 8:
        raise ValueError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    code = parts[1]
    if len(code) != 3 or not code.isdigit():
        raise ValueError(f"bad status code: {code[:20]!r}")
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip() or line[:1] in (b" ", b"\t"):
            raise ValueError(f"malformed header line: {line[:80]!r}")
        headers.append((name, value.strip(b" \t")))
    return _Head(parts[0], int(code), parts[2] if len(parts) > 2 else b"", headers)


def _tokens(values: list[bytes]) -> list[bytes]:
    return [t.strip().lower() for v in values for t in v.split(b",") if t.strip()]


class _Body(httpx.AsyncByteStream):
    """A response body read from its connection; the connection goes back when it ends."""

    def __init__(
        self,
        pool: _Pool,
        conn: _Connection,
        request: httpx.Request,
        framing: str,
        length: int,
        keep_alive: bool,
        read_timeout: float | None,
    ) -> None:
        self._pool = pool
        self._conn: _Connection | None = conn
        self._request = request
        self._framing = framing  # "none", "length", "chunked" or "close"
        self._length = length
        self._keep_alive = keep_alive
        self._timeout = read_timeout
        if framing == "none":
            self._finish(reusable=keep_alive and not conn.has_unread)

    def _finish(self, reusable: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.release(conn, reusable)

    async def _receive(self, conn: _Connection) -> bytes:
        try:
            return await conn.receive(self._timeout)
        except _TimedOut:
            raise httpx.ReadTimeout(
                f"no response data for {self._timeout:g} s", request=self._request
            ) from None
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=self._request) from exc

    def _cut(self, what: str) -> httpx.RemoteProtocolError:
        return httpx.RemoteProtocolError(
            f"peer closed connection without sending complete message body ({what})",
            request=self._request,
        )

    def __aiter__(self) -> AsyncIterator[bytes]:
        if self._framing == "length":
            return self._length_delimited()
        if self._framing == "chunked":
            return self._chunked()
        return self._close_delimited()

    # Each reader below, on an error, a cancelled task, or the reader leaving mid-body,
    # closes the connection (its state is unknown) and frees its place in the pool.

    async def _length_delimited(self) -> AsyncIterator[bytes]:
        conn = self._conn
        try:
            left = self._length
            while left and conn is not None:
                data = await self._receive(conn)
                if not data:
                    raise self._cut(f"{left} of {self._length} bytes missing")
                if len(data) > left:
                    # More than the body: the connection cannot be trusted again.
                    self._keep_alive = False
                    data = data[:left]
                left -= len(data)
                yield data
            self._finish(reusable=self._keep_alive)
        except BaseException:
            self._finish(reusable=False)
            raise

    async def _chunked(self) -> AsyncIterator[bytes]:
        conn = self._conn
        decoder = _ChunkedDecoder()
        try:
            while not decoder.done and conn is not None:
                data = await self._receive(conn)
                if not data:
                    raise self._cut("incomplete chunked encoding")
                try:
                    pieces = decoder.feed(data)
                except ValueError as exc:
                    raise httpx.RemoteProtocolError(
                        f"malformed chunked body: {exc}", request=self._request
                    ) from None
                if pieces:
                    # All the chunks one read brought go on as one piece.
                    yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
            self._finish(reusable=self._keep_alive and not decoder.leftover)
        except BaseException:
            self._finish(reusable=False)
            raise

    async def _close_delimited(self) -> AsyncIterator[bytes]:
        conn = self._conn
        try:
            while conn is not None and (data := await self._receive(conn)):
                yield data
            self._finish(reusable=False)
        except BaseException:
            self._finish(reusable=False)
            raise

    async def aclose(self) -> None:
        self._finish(reusable=False)


def _request_head(request: httpx.Request) -> tuple[bytes, bool, bool]:
    """The request's head, whether its body goes chunked, and whether it asks to close.

    One pass over the headers for all three (each scan of them is a cost per request).
    """
    target = request.url.raw_path or b"/"
    lines = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    transfer: list[bytes] = []
    connection: list[bytes] = []
    for name, value in request.headers.raw:
        if b"\r" in value or b"\n" in value or b"\r" in name or b"\n" in name or b":" in name:
            raise httpx.LocalProtocolError(f"illegal header {name[:40]!r}", request=request)
        lines += (name, b": ", value, b"\r\n")
        lowered = name.lower()
        if lowered == b"transfer-encoding":
            transfer.append(value)
        elif lowered == b"connection":
            connection.append(value)
    lines.append(b"\r\n")
    return b"".join(lines), b"chunked" in _tokens(transfer), b"close" in _tokens(connection)


async def _head_bytes(
    conn: _Connection, request: httpx.Request, seconds: float | None, started: bool
) -> bytes:
    """More of the response head, its errors as httpx names them."""
    try:
        data = await conn.receive(seconds)
    except _TimedOut:
        raise httpx.ReadTimeout(f"no response within {seconds:g} s", request=request) from None
    except OSError as exc:
        if not started:
            # As httpcore words it: typically a reused connection the server had closed.
            raise httpx.RemoteProtocolError(
                f"Server disconnected without sending a response ({exc}).", request=request
            ) from exc
        raise httpx.ReadError(str(exc), request=request) from exc
    if data:
        return data
    if not started:
        raise httpx.RemoteProtocolError(
            "Server disconnected without sending a response.", request=request
        )
    raise httpx.RemoteProtocolError(
        "Server disconnected in the middle of the response head.", request=request
    )


class AsyncioHttp11Transport(httpx.AsyncBaseTransport):
    """httpx's transport contract over asyncio connections (see the module docstring)."""

    def __init__(
        self,
        ssl_context: Any = None,
        *,
        max_connections: int = 1024,
        max_idle_per_origin: int = 256,
        keepalive_expiry: float = 5.0,
    ) -> None:
        # The context is made on first TLS use: plain-HTTP processes never load CA files.
        self._ssl_context = ssl_context
        self._limits = (max_connections, max_idle_per_origin, keepalive_expiry)
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = (
            weakref.WeakKeyDictionary()
        )

    def _pool(self) -> _Pool:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = _Pool(loop, *self._limits)
        return pool

    def _tls(self) -> Any:
        if self._ssl_context is None:
            from albert.outbound.tls import shared_tls_context

            self._ssl_context = shared_tls_context()
        return self._ssl_context

    async def _connect(
        self, pool: _Pool, origin: Origin, request: httpx.Request, seconds: float | None
    ) -> _Connection:
        scheme, host, port = origin
        tls = self._tls() if scheme == b"https" else None
        try:
            async with asyncio.timeout(seconds):
                _, conn = await pool.loop.create_connection(
                    lambda: _Connection(pool.loop, origin),
                    host,
                    port,
                    ssl=tls,
                    server_hostname=host if tls is not None else None,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"connecting to {host}:{port} took longer than {seconds:g} s", request=request
            ) from None
        except OSError as exc:  # refused, unreachable, DNS, TLS (ssl.SSLError is an OSError)
            raise httpx.ConnectError(
                f"cannot connect to {host}:{port}: {exc or type(exc).__name__}", request=request
            ) from exc
        return conn

    async def _send_request(
        self,
        conn: _Connection,
        request: httpx.Request,
        head: bytes,
        chunked: bool,
        seconds: float | None,
    ) -> None:
        try:
            try:
                body = request.content
            except httpx.RequestNotRead:
                await conn.send(head, seconds)
                async for piece in request.stream:  # type: ignore[union-attr]
                    if piece:
                        await conn.send(
                            b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece, seconds
                        )
                if chunked:
                    await conn.send(b"0\r\n\r\n", seconds)
                return
            if chunked:
                body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
            await conn.send(head + body, seconds)
        except TimeoutError:
            raise httpx.WriteTimeout(
                f"sending the request took longer than {seconds:g} s", request=request
            ) from None
        except OSError as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc

    async def _read_head(
        self, conn: _Connection, request: httpx.Request, seconds: float | None
    ) -> _Head:
        buf = b""
        while True:
            data = await _head_bytes(conn, request, seconds, started=bool(buf))
            start = max(0, len(buf) - 3)
            buf += data
            end, size = buf.find(b"\r\n\r\n", start), 4
            if end < 0:
                end, size = buf.find(b"\n\n", start), 2
            if end < 0:
                if len(buf) > MAX_HEAD_BYTES:
                    raise httpx.RemoteProtocolError(
                        f"the response head is over {MAX_HEAD_BYTES} bytes", request=request
                    )
                continue
            conn.unread(buf[end + size :])
            try:
                head = _parse_head(buf[:end])
            except ValueError as exc:
                raise httpx.RemoteProtocolError(
                    f"malformed response: {exc}", request=request
                ) from None
            if 100 <= head.status < 200 and head.status != 101:
                buf = b""  # an interim response: the real one follows
                continue
            return head

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.raw_scheme
        if scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(
                f"the URL scheme must be http or https, not {scheme.decode()!r}", request=request
            )
        host = url.raw_host.decode("ascii")
        origin: Origin = (scheme, host, url.port or _DEFAULT_PORTS[scheme])
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        # Refused before any connection is taken.
        head, chunked, asked_close = _request_head(request)
        pool = self._pool()
        conn, _reused = await pool.acquire(
            origin,
            lambda: self._connect(pool, origin, request, timeouts.get("connect")),
            timeouts.get("pool"),
        )
        try:
            await self._send_request(conn, request, head, chunked, timeouts.get("write"))
            answer = await self._read_head(conn, request, timeouts.get("read"))
            framing, length, keep_alive = self._framing(request, answer, asked_close)
        except BaseException:
            pool.release(conn, reusable=False)
            raise
        body = _Body(pool, conn, request, framing, length, keep_alive, timeouts.get("read"))
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=body,
            extensions={"http_version": answer.version, "reason_phrase": answer.reason},
            request=request,
        )

    @staticmethod
    def _framing(request: httpx.Request, head: _Head, asked_close: bool) -> tuple[str, int, bool]:
        # The response's three framing headers, gathered in one pass over its headers.
        connection_values: list[bytes] = []
        coding_values: list[bytes] = []
        length_values: list[bytes] = []
        for name, value in head.headers:
            lowered = name.lower()
            if lowered == b"connection":
                connection_values.append(value)
            elif lowered == b"transfer-encoding":
                coding_values.append(value)
            elif lowered == b"content-length":
                length_values.append(value)
        connection = _tokens(connection_values)
        keep_alive = head.version == b"HTTP/1.1" and b"close" not in connection and not asked_close
        if request.method == "HEAD" or head.status in (204, 304) or 100 <= head.status < 200:
            return "none", 0, keep_alive and head.status != 101
        codings = _tokens(coding_values)
        if codings:
            if codings[-1] == b"chunked":
                return "chunked", 0, keep_alive
            return "close", 0, False
        lengths = {v.strip() for v in length_values}
        if lengths:
            value = lengths.pop()
            if lengths or not value.isdigit():
                raise httpx.RemoteProtocolError(
                    "the response has an invalid Content-Length", request=request
                )
            length = int(value)
            return ("length" if length else "none"), length, keep_alive
        return "close", 0, False

    async def aclose(self) -> None:
        """Close this loop's pool: idle connections now, busy ones when their answer ends."""
        # Popped, not only closed: a pool holds its loop, so left in the weak mapping it
        # would keep the loop (and the pool) alive for the life of the process.
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            pool.close()


class SharedTransport(httpx.AsyncBaseTransport):
    """A client's handle on a process-wide transport: closing the client leaves the pool be.

    Each object keeps its own httpx client (cookies, defaults), while connections to the
    same origins are shared by all of them.
    """

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self._transport = transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._transport.handle_async_request(request)

    async def aclose(self) -> None:
        pass


_shared: AsyncioHttp11Transport | None = None


def shared_asyncio_transport() -> AsyncioHttp11Transport:
    """The process-wide transport (its pools kept per event loop)."""
    global _shared
    if _shared is None:
        _shared = AsyncioHttp11Transport()
    return _shared


async def close_shared_pool() -> None:
    """Close the process-wide transport's pool of the running loop, if one was made."""
    if _shared is not None:
        await _shared.aclose()
