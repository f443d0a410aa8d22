"""Serving a LocalRuntime with uvicorn on loopback, and stopping it cleanly on a signal.

SIGTERM or SIGINT (Ctrl-C) stops `albert serve` and `albert dev` within about 2 s:
running turns are cancelled and recorded as `cancelled` (their done frame still reaches
the browser), every WebSocket is closed with 1001 (going away), storage is closed, the
servers stop, and the process exits 0, never waiting on work still on the loop's threads
(a DNS lookup waiting out its timeout: miniflare.threads). A second signal skips what
is left of the grace, unless it comes within DUPLICATE_SIGNAL_SECONDS of the first: one
Ctrl-C reaches the process twice under `uv run` (the terminal signals the whole
foreground group, and uv forwards its own copy), and that must not turn a clean stop
into a forced one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from types import FrameType

import uvicorn

from data_server.http_limits import (
    BoundedH11Protocol,
    bounded_websockets,
    rate_limited_loop_errors,
    server_options,
)
from miniflare.config import load_config
from miniflare.gc_policy import FreezeSurvivors
from miniflare.runtime import LocalRuntime
from miniflare.threads import LoopThreads

log = logging.getLogger(__name__)

# The runtime's share of the 2 s: turns end, sockets close, storage is closed.
DRAIN_SECONDS = 1.0
# What uvicorn may then spend on connections that are still open (e.g. an MCP stream).
SERVER_GRACE_SECONDS = 0.3
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
DUPLICATE_SIGNAL_SECONDS = 0.5
# The transport's ceiling for one received WebSocket message. The worker answers a frame
# over MAX_FRAME_BYTES (64 kB by default) with a `too_large` error frame and the socket
# stays open; only a message over this ceiling ends the socket (1009, "message too big",
# as the platform does over its own). It stays at least 4 × MAX_FRAME_BYTES.
WS_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class QuietServer(uvicorn.Server):
    """uvicorn without signal handlers of its own: `serve_until_stopped` owns the signals.

    Given `sockets` (see child_processes.reserve_port), it serves on those instead of
    binding `config.port` itself; they are closed when it stops.
    """

    def __init__(self, config: uvicorn.Config, sockets: Sequence[socket.socket] = ()) -> None:
        super().__init__(config)
        self.held_sockets = list(sockets)

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        await super().serve(sockets if sockets is not None else self.held_sockets or None)

    def close_held_sockets(self) -> None:
        """Let the reserved ports go (a server that never started does not close them)."""
        for sock in self.held_sockets:
            sock.close()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def make_runtime(
    project_dir: Path, state_dir: Path, overrides: dict[str, str] | None = None
) -> LocalRuntime:
    """A runtime for the worker of `project_dir`, its objects' files under `state_dir`."""
    config = load_config(project_dir)
    runtime = LocalRuntime(config, state_dir, overrides)
    runtime.load()
    return runtime


def ws_max_message_bytes(runtime: LocalRuntime) -> int:
    """The transport's message ceiling: WS_MAX_MESSAGE_BYTES, or 4 × a larger MAX_FRAME_BYTES."""
    configured = getattr(runtime.env, "MAX_FRAME_BYTES", None)
    try:
        frame_bytes = int(configured) if configured is not None else 0
    except (TypeError, ValueError):
        frame_bytes = 0  # the worker's own settings refuse it and say why
    return max(WS_MAX_MESSAGE_BYTES, 4 * frame_bytes)


def uvicorn_server(runtime: LocalRuntime, host: str, sock: socket.socket) -> QuietServer:
    """A uvicorn server for the runtime on the reserved `sock`, with real WebSockets."""
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        runtime,
        host=host,
        port=port,
        # h11 stays the runtime's HTTP parser even though httptools is installed (for the
        # data server): uvicorn's "auto" would switch to it. Bounded: a request head and body
        # are due within seconds, and one address holds a bounded number of connections.
        # Forwarded headers are not trusted: the runtime sets CF-Connecting-IP from the
        # socket, as Cloudflare does.
        **server_options(BoundedH11Protocol),
        ws=bounded_websockets(),
        # Compression off: a 16 MiB deflate bomb per message cost seconds of CPU before the
        # size limit saw it. Chat frames are small.
        ws_per_message_deflate=False,
        interface="asgi3",
        lifespan="on",
        log_level="warning",
        ws_ping_interval=20,
        ws_max_size=ws_max_message_bytes(runtime),
        timeout_graceful_shutdown=SERVER_GRACE_SECONDS,
    )
    return QuietServer(config, [sock])


async def serve_until_stopped(
    servers: Sequence[QuietServer],
    runtime: LocalRuntime | None,
    *,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT (or until one server ends), then stop everything cleanly.

    `on_stop` runs as soon as the stop begins (e.g. to signal child processes, so they
    stop while the runtime drains). Without a runtime (the worker runs elsewhere, e.g. on
    workerd) only the servers stop.
    """
    loop = asyncio.get_running_loop()
    rate_limited_loop_errors(loop)
    stop = asyncio.Event()
    first_signal: list[float] = []

    def request_stop(at: float) -> None:
        if not stop.is_set():
            first_signal.append(at)
            stop.set()
            return
        if first_signal and at - first_signal[0] < DUPLICATE_SIGNAL_SECONDS:
            log.debug("the same stop signal again (e.g. forwarded by uv run): ignored")
            return
        # A second signal: no more waiting for anything.
        log.info("second stop signal: not waiting any longer")
        for server in servers:
            server.should_exit = True
            server.force_exit = True

    def on_signal(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(request_stop, time.monotonic())

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    # Work on threads (DNS lookups, the SDK's import) must not hold the stop: miniflare.threads.
    threads = LoopThreads()
    loop.set_default_executor(threads)
    # One heap for every object: see miniflare.gc_policy.
    # Thread-safe: a collection, and so this callback, can run on any thread (to_thread).
    collector = FreezeSurvivors(schedule=loop.call_soon_threadsafe).install()
    tasks = [asyncio.ensure_future(server.serve()) for server in servers]
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([*tasks, stopped], return_when=asyncio.FIRST_COMPLETED)
        asked = stop.is_set()
        log.info("stopping" if asked else "a server stopped on its own; stopping the rest")
        if on_stop is not None:
            on_stop()
        if runtime is not None:
            await runtime.drain(DRAIN_SECONDS)
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
        if not asked:
            # It failed to start or crashed: that is not a clean stop.
            raise SystemExit(1)
    finally:
        stopped.cancel()
        for task in tasks:
            task.cancel()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        collector.uninstall()
        for server in servers:
            server.close_held_sockets()
        # Everything is stored and closed: what is still queued for a thread is dropped.
        threads.shutdown(wait=False, cancel_futures=True)


def run(
    project_dir: Path,
    state_dir: Path,
    host: str,
    sock: socket.socket,
    overrides: dict[str, str] | None = None,
) -> None:
    """Blocking entry of `albert serve`: load and serve the worker on `sock` until a stop signal."""
    try:
        runtime = make_runtime(project_dir, state_dir, overrides)
    except BaseException:
        sock.close()
        raise
    asyncio.run(serve_until_stopped([uvicorn_server(runtime, host, sock)], runtime))
