"""Write-store calls from a request (a tool, /healthz, /readyz): off the event loop, bounded.

The store is synchronous (sqlite3, psycopg). A call made on the event loop holds every
request while the database thinks; one to a PostgreSQL server that stopped answering
holds them for good. Here each call runs in a worker thread and its caller waits at most
its bound, then hears `StoreUnavailable`.

A thread cannot be stopped from outside, so a call that overran its bound keeps its
worker until the database answers (or the connection's keepalives give up). Once a call
has overrun, the store is taken as not answering: other calls fail at once instead of each
waiting out its bound and taking another worker, and one call per bound goes through to
try it. A call that answers (that one, or the one that overran, coming back late) ends
that. The workers are daemon threads: one stuck on a frozen server does not keep the
process from exiting.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 10.0
# At most this many calls run at once; more wait for a worker (inside their bound). The
# PostgreSQL pool has as many connections.
WORKERS = 8

# Tool errors say this, whatever the cause: no host, no driver message.
UNAVAILABLE_MESSAGE = "the vault database is unavailable; try again shortly"


class StoreUnavailable(Exception):
    """The write store did not answer within the bound, or could not be reached."""

    def __init__(self, backend: str, problem: str) -> None:
        super().__init__(f"write store ({backend}) {problem}")
        self.backend = backend
        self.problem = problem


class _Workers:
    """Up to `size` daemon threads taking calls from a queue, started as needed and ended
    after `idle_seconds` without one."""

    def __init__(self, size: int, name: str, idle_seconds: float = 60.0) -> None:
        self._size = size
        self._name = name
        self._idle_seconds = idle_seconds
        self._queue: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]]] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if self._idle:
                self._idle -= 1  # a waiting worker takes it
            elif len(self._threads) < self._size:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        self._queue.put((future, fn))
        return future

    def _work(self) -> None:
        while True:
            try:
                future, fn = self._queue.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    # Idle count zero: a call was handed to this waiting worker just now.
                    if self._idle:
                        self._idle -= 1
                        self._threads.remove(threading.current_thread())
                        return
                continue
            # A call whose caller gave up before a worker took it is not run at all.
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the caller, who decides
                    future.set_exception(exc)
            del future, fn
            with self._lock:
                self._idle += 1


class StoreCalls:
    """Runs write-store calls for async code, each in a worker thread, each bounded."""

    def __init__(self, store: Any, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        """`store` is a `VaultStore` (or any object whose calls are made here: its
        `backend` names it, its `unavailable_errors` mean it could not answer)."""
        self.store = store
        self.backend: str = getattr(store, "backend", "store")
        self.unavailable_errors: tuple[type[Exception], ...] = getattr(
            store, "unavailable_errors", ()
        )
        self.timeout = timeout
        self._workers = _Workers(WORKERS, "write-store")
        # Set when a call overran its bound, cleared when one answers.
        self._stalled = False
        self._next_trial = 0.0

    async def __call__(self, fn: Callable[..., T], /, *args: Any, within: float | None = None) -> T:
        """`fn(*args)` in a worker thread; StoreUnavailable after `within` seconds (the
        default bound when None), when the store is known not to answer, or when it fails to
        reach the database."""
        backend = self.backend
        bound = self.timeout if within is None else within
        if self._stalled:
            now = time.monotonic()
            if now < self._next_trial:
                raise StoreUnavailable(backend, "is not answering (a call is still waiting)")
            self._next_trial = now + bound
        future = self._workers.submit(functools.partial(fn, *args))
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(future), bound)
        except TimeoutError:
            self._stall_until_answered(future, bound)
            raise StoreUnavailable(backend, f"did not answer within {bound:g} s") from None
        except self.unavailable_errors as exc:
            log.warning("write store (%s) call failed: %s", backend, exc)
            raise StoreUnavailable(backend, f"failed ({type(exc).__name__})") from exc
        self._stalled = False
        return result

    async def ping(self, within: float | None = None) -> None:
        """One trivial statement, bounded like any call."""
        await self(self.store.ping, within=within)

    def _stall_until_answered(self, future: concurrent.futures.Future[Any], bound: float) -> None:
        # wait_for cancels it: a call no worker had taken yet never runs, and says nothing.
        if future.cancelled():
            return
        if not self._stalled:
            log.warning("write store (%s) did not answer within %g s", self.backend, bound)
        self._stalled = True
        self._next_trial = time.monotonic() + bound

        def came_back(done: concurrent.futures.Future[Any]) -> None:
            # In the worker thread: a flag, read by the event loop's next call.
            if not done.cancelled() and done.exception() is None:
                self._stalled = False

        future.add_done_callback(came_back)


async def in_thread(
    fn: Callable[[], T],
    *,
    within: float | None,
    if_abandoned: Callable[[T], None] | None = None,
) -> T:
    """`fn()` in a daemon thread of its own, awaited at most `within` seconds (TimeoutError
    after that; None: no bound).

    For what must not be lost when its caller gives up (a lock taken after all): when the
    caller stops waiting (its bound, a cancellation) and `fn` then returns, or had just
    returned, `if_abandoned(result)` gets the result, in a thread.
    """
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    guard = threading.Lock()
    outcome: list[tuple[bool, Any]] = []
    given_up = False

    def run() -> None:
        try:
            result: tuple[bool, Any] = (True, fn())
        except BaseException as exc:  # handed to the caller, if it still waits
            result = (False, exc)
        with guard:
            outcome.append(result)
            late = given_up
        if not late:
            loop.call_soon_threadsafe(finished.set)
        elif result[0] and if_abandoned is not None:
            if_abandoned(result[1])

    threading.Thread(target=run, name="write-store-once", daemon=True).start()
    try:
        await asyncio.wait_for(finished.wait(), within)
    except BaseException:
        with guard:
            given_up = True
            done = list(outcome)
        if done and done[0][0] and if_abandoned is not None:
            threading.Thread(target=if_abandoned, args=(done[0][1],), daemon=True).start()
        raise
    ok, value = outcome[0]
    if ok:
        return value
    raise value
