"""Bounds on what a slow or greedy client can hold of a uvicorn server.

uvicorn closes an idle keep-alive connection, but a connection that sends part of a
request head and then nothing is kept for ever: enough of them exhaust the process's
descriptors and every other client waits. These HTTP protocol classes (uvicorn's `http=`
setting takes a class) add two bounds, for the data server (httptools) and the local
runtime (h11):

- a request head must arrive within `HEAD_SECONDS` of the connection opening, or of the
  previous response on a kept-alive connection; otherwise the connection is closed;
- a request's body must have arrived within `BODY_SECONDS` of its head (a body sent a byte
  at a time holds a connection as a half-open head does); otherwise the connection is
  closed and the application sees the client gone;
- one client address holds at most `CONNECTIONS_PER_ADDRESS` HTTP connections; another is
  closed as it opens. An IPv6 client counts by its /64 (the block one subscriber usually
  holds, as the rate limits count it: albert.limits.addresses.address_bucket), so rotating
  through its own addresses buys it nothing. A connection upgraded to a WebSocket leaves
  the count and every deadline for good (the WebSocket protocol owns it from then on, for
  hours if the client likes; each client's sockets are capped by the worker itself).

`bounded_websockets` bounds the frames of one WebSocket message (the local runtime turns
permessage-deflate off, so a message's size is the bytes that came).

`server_options` is what both servers pass to uvicorn: these protocols, forwarded headers
not trusted, `limit_concurrency` and the keep-alive timeout.

`rate_limited_loop_errors` keeps a flood of failing accepts (descriptors exhausted) from
writing a traceback per attempt into the log. What a production proxy in front must still
add (TLS, request rate limits per client) is in docs/security.md.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import h11

# uvicorn's protocol implementations are subclassed here (also httptools' and the sans-io
# WebSocket one below): it has no setting for a head or body deadline, a per-address cap or
# a fragment count, and `http=`/`ws=` take a class; without them one client's half-sent
# heads each held a descriptor for ever (tests/data_server/test_http_limits.py: 200 at once).
from uvicorn.protocols.http.h11_impl import H11Protocol

from albert.limits.addresses import address_bucket

log = logging.getLogger(__name__)

HEAD_SECONDS = 10.0
BODY_SECONDS = 30.0
CONNECTIONS_PER_ADDRESS = 1024
# uvicorn answers 503 past this many connections and requests in flight at once.
CONCURRENCY_LIMIT = 4096
# An idle kept-alive connection is closed after this long (uvicorn's own default, stated).
KEEP_ALIVE_SECONDS = 5
# At most one line per this many seconds for each kind of loop error; the rest are counted.
LOOP_ERROR_SECONDS = 10.0


class _Bounds:
    """The head and body deadlines and the per-address count, shared by both protocol
    classes."""

    head_seconds = HEAD_SECONDS
    body_seconds = BODY_SECONDS
    per_address = CONNECTIONS_PER_ADDRESS
    # Per protocol class, across its servers in this process (they share descriptors).
    open_by_address: Counter[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.open_by_address = Counter()

    def bounds_opened(self, transport: asyncio.Transport) -> bool:
        """Count the connection in; False (and closed) when its address holds too many."""
        self.upgraded = False
        self.head_deadline: asyncio.TimerHandle | None = None
        self.body_deadline: asyncio.TimerHandle | None = None
        peer = transport.get_extra_info("peername")
        raw = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        self.address = address_bucket(raw) or raw
        counts = type(self).open_by_address
        if counts[self.address] >= self.per_address:
            log.warning(
                "connection from %s refused: %d open already", self.address, counts[self.address]
            )
            self.address = ""
            transport.close()
            return False
        counts[self.address] += 1
        self.await_head(transport)
        return True

    def await_head(self, transport: asyncio.Transport) -> None:
        """A request head is due now: close the connection if it has not come in time."""
        self.head_late()
        if self.upgraded:
            return
        loop = asyncio.get_running_loop()
        self.head_deadline = loop.call_later(self.head_seconds, self.head_timed_out, transport)

    def head_late(self) -> None:
        deadline = getattr(self, "head_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self.head_deadline = None

    def body_started(self, transport: asyncio.Transport) -> None:
        """The head is in and a body is coming: it is due within `body_seconds`."""
        self.head_late()
        if self.upgraded:
            return
        if getattr(self, "body_deadline", None) is None:
            loop = asyncio.get_running_loop()
            self.body_deadline = loop.call_later(self.body_seconds, self.body_timed_out, transport)

    def body_arrived(self) -> None:
        """The request is in whole (or had no body)."""
        self.head_late()
        deadline = getattr(self, "body_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self.body_deadline = None

    def body_timed_out(self, transport: asyncio.Transport) -> None:
        self.body_deadline = None
        log.debug(
            "closing a connection from %s: its request body took over %g s",
            self.address,
            self.body_seconds,
        )
        transport.close()

    def head_timed_out(self, transport: asyncio.Transport) -> None:
        self.head_deadline = None
        log.debug(
            "closing a connection from %s: no request head within %g s",
            self.address,
            self.head_seconds,
        )
        transport.close()

    def bounds_upgraded(self) -> None:
        """The connection became a WebSocket: no HTTP deadline applies to it again.

        h11 still reports the upgrade request's (empty) body pending after the upgrade, so
        without this mark the body deadline would be armed anew and close every socket
        `body_seconds` after it opened."""
        self.upgraded = True
        self.bounds_closed()

    def bounds_closed(self) -> None:
        self.body_arrived()
        address = getattr(self, "address", "")
        self.address = ""  # counted out once, whichever of close or upgrade comes first
        counts = type(self).open_by_address
        if address and counts[address] > 0:
            counts[address] -= 1
            if counts[address] == 0:
                del counts[address]


class BoundedH11Protocol(_Bounds, H11Protocol):
    """uvicorn's h11 protocol with the head and body deadlines and the per-address cap."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.bounds_opened(transport)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self.body_started(self.transport)
        elif state is not h11.IDLE:
            self.body_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self.await_head(self.transport)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        # The WebSocket protocol takes the transport: this one hears no connection_lost.
        self.bounds_upgraded()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self.bounds_closed()
        super().connection_lost(exc)


def bounded_httptools() -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the same bounds (httptools is imported here)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class BoundedHttpToolsProtocol(_Bounds, HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.bounds_opened(transport)

        def on_headers_complete(self) -> None:
            self.body_started(self.transport)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self.body_arrived()
            super().on_message_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self.await_head(self.transport)

        def handle_websocket_upgrade(self) -> None:
            self.bounds_upgraded()  # the WebSocket protocol owns the connection from here
            super().handle_websocket_upgrade()

        def connection_lost(self, exc: Exception | None) -> None:
            self.bounds_closed()
            super().connection_lost(exc)

    return BoundedHttpToolsProtocol


def server_options(http: type[asyncio.Protocol]) -> dict[str, Any]:
    """uvicorn settings both servers share, with `http` one of the bounded protocols."""
    return {
        "http": http,
        # Behind a proxy the proxy's address is the client's, and a client's own
        # X-Forwarded-For must not become the address limits count by (docs/security.md
        # says what a proxy in front must add).
        "proxy_headers": False,
        "limit_concurrency": CONCURRENCY_LIMIT,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
    }


# One WebSocket message may come in at most this many frames (a chat frame is one).
WS_FRAGMENTS_PER_MESSAGE = 64
CLOSE_GRACE_SECONDS = 1.0


def bounded_websockets() -> type[asyncio.Protocol]:
    """uvicorn's sans-io WebSocket protocol that closes a socket (1009) sending one message in
    more than WS_FRAGMENTS_PER_MESSAGE frames: a million one-byte fragments cost the process
    seconds before any size limit applied."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    class BoundedWebSocketsProtocol(WebSocketsSansIOProtocol):
        def handle_cont(self, event: Any) -> None:
            if self.close_sent:
                return  # frames already read past the close are dropped
            if len(self.frames) >= WS_FRAGMENTS_PER_MESSAGE:
                self.frames = []
                self.close_sent = True
                self.conn.send_close(1009, "message in too many fragments")
                self.transport.write(b"".join(self.conn.data_to_send()))
                # Nothing more is read; the peer gets a moment to read the close frame.
                self.transport.pause_reading()
                self.loop.call_later(CLOSE_GRACE_SECONDS, self.transport.close)
                return
            super().handle_cont(event)

    return BoundedWebSocketsProtocol


def rate_limited_loop_errors(
    loop: asyncio.AbstractEventLoop, clock: Callable[[], float] = time.monotonic
) -> None:
    """Log the loop's unhandled errors at most once per LOOP_ERROR_SECONDS per message."""
    last: dict[str, float] = {}
    dropped: Counter[str] = Counter()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", "unhandled error"))
        now = clock()
        if now - last.get(message, float("-inf")) < LOOP_ERROR_SECONDS:
            dropped[message] += 1
            return
        last[message] = now
        more = dropped.pop(message, 0)
        if more:
            context = {**context, "message": f"{message} (and {more} more since the last line)"}
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
