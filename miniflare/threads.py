"""The event loop's worker threads (`asyncio.to_thread`, `loop.getaddrinfo`): a stop never
waits on them.

asyncio's own default executor holds a stop for as long as any of its threads is busy:
`asyncio.run` shuts it down with `wait=True` (no timeout in Python 3.11), and the
interpreter joins each of its threads again at exit. A thread can be busy for seconds
with nothing left worth waiting for: a DNS lookup of an MCP server's name that waits
out the resolver's 5 s timeout (a hundred objects retrying an unreachable server keep
several in flight), the MCP SDK's first import. `LoopThreads` runs the same work on
daemon threads, and its shutdown drops what is queued and waits for what runs only up
to a bound: by then the runtime has drained, every turn is recorded and the storage is
closed, so a lookup or an import cut off by the exit loses nothing.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

# What a stop waits for work already running on a thread, at most.
JOIN_SECONDS = 0.1

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class LoopThreads(ThreadPoolExecutor):
    """A thread pool for `loop.set_default_executor` whose shutdown is bounded.

    A ThreadPoolExecutor only by type (asyncio accepts nothing else as the default
    executor): `submit` and `shutdown` are its own. Up to `max_workers` daemon threads,
    started as work arrives while none is idle, as the standard pool does. `shutdown`
    cancels the queued work when asked to (`cancel_futures`) and, with `wait`, waits at
    most `join_seconds` for the threads; one still busy then is left to the exit.
    """

    def __init__(
        self,
        max_workers: int | None = None,
        *,
        join_seconds: float = JOIN_SECONDS,
        name: str = "loop-thread",
    ) -> None:
        super().__init__(max_workers=1, thread_name_prefix=name)
        # The standard pool's default size.
        self._limit = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self._join_seconds = join_seconds
        self._name = name
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)
        self._guard = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Queue `fn(*args, **kwargs)`; a thread is started if none is idle."""
        with self._guard:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future: Future[Any] = Future()
            self._work.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._workers) < self._limit:
                worker = threading.Thread(
                    target=self._run, name=f"{self._name}_{len(self._workers)}", daemon=True
                )
                worker.start()
                self._workers.append(worker)
        return future

    def _run(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            del item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del future, fn, args, kwargs  # no reference kept while idle
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more work; queued work cancelled with `cancel_futures`; with `wait`, the
        threads get `join_seconds` at most to end."""
        with self._guard:
            stops = 0 if self._closed else len(self._workers)
            self._closed = True
            if cancel_futures:
                for _ in range(1_000_000):
                    try:
                        item = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stops += 1  # an earlier shutdown's: put back below
                    else:
                        item[0].cancel()
            for _ in range(stops):
                self._work.put(None)
            workers = list(self._workers)
        if wait:
            deadline = time.monotonic() + self._join_seconds
            for worker in workers:
                worker.join(max(0.0, deadline - time.monotonic()))
