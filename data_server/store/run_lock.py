"""The pipeline's run lock: one run at a time on a write store, across processes and replicas.

`VaultStore.acquire_pipeline_lock` returns a `PipelineLock`, true when this caller holds the
right to run. SQLite's is a lock file the kernel drops with its holder, so it cannot be
lost while held. PostgreSQL's is a lease (data_server/store/postgres.py), which can: its
holder hears of it through `on_lost` and must stop the run.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import logging
import threading
from collections.abc import Callable, Iterator
from typing import IO

log = logging.getLogger(__name__)

# The lease the current run's writes are made under, (holder, token): set for a run's task
# (`fenced_by`), inherited by every task it creates and every `asyncio.to_thread` call it
# makes. A PostgreSQL write checks it in its transaction, so a write of a run that lost its
# lease is refused, even one that was stuck in a thread until long after.
RUN_FENCE: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar(
    "pipeline_run_fence", default=None
)


class PipelineLockLost(RuntimeError):
    """The run lock stopped being this run's while the run went on; the run was stopped."""


class PipelineLock:
    """The right to run the pipeline (truthy), or the word that another run has it (falsy)."""

    def __init__(self, acquired: bool) -> None:
        self.acquired = acquired
        # What a write checks to know the lock is still this run's (None: nothing to check).
        self.fence: tuple[str, int] | None = None
        # Runs found `running` when it was taken, closed as `abandoned` (their ids).
        self.abandoned: list[str] = []
        self.lost_reason: str | None = None
        self._callbacks: list[Callable[[str], None]] = []
        self._guard = threading.Lock()

    def __bool__(self) -> bool:
        return self.acquired

    def on_lost(self, callback: Callable[[str], None]) -> None:
        """Call `callback(reason)` once if the lock is lost (at once if it already was).

        It runs in the thread that found the loss: hand it to an event loop with
        `call_soon_threadsafe`.
        """
        with self._guard:
            reason = self.lost_reason
            if reason is None:
                self._callbacks.append(callback)
        if reason is not None:
            callback(reason)

    def _lose(self, reason: str) -> None:
        with self._guard:
            if self.lost_reason is not None or not self.acquired:
                return
            self.lost_reason = reason
            callbacks, self._callbacks = self._callbacks, []
        log.warning("pipeline run lock lost: %s", reason)
        for callback in callbacks:
            try:
                callback(reason)
            except Exception:  # one listener's fault must not keep the others from hearing
                log.exception("pipeline run lock: a lost-lock callback failed")

    def release(self) -> None:
        """Give the lock back; never raises (a lock that cannot be given back lapses)."""


@contextlib.contextmanager
def fenced_by(lock: PipelineLock) -> Iterator[None]:
    """Writes made in the block (and in what it starts) are made under `lock`."""
    token = RUN_FENCE.set(lock.fence)
    try:
        yield
    finally:
        RUN_FENCE.reset(token)


class FileLock(PipelineLock):
    """A lock file beside a SQLite database, held with flock: the kernel drops it with the
    process, so a holder that dies leaves nothing to clean up, and one that lives keeps it."""

    def __init__(self, handle: IO[str] | None) -> None:
        super().__init__(handle is not None)
        self._handle = handle

    def release(self) -> None:
        """Unlock and close the lock file."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        try:
            fcntl.flock(handle, fcntl.LOCK_UN)
        except OSError as exc:  # closing the file drops the lock as well
            log.warning("pipeline lock file not unlocked: %s", exc)
        finally:
            handle.close()


class ThreadLock(PipelineLock):
    """The run lock of an in-memory store: a lock within this process."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock.acquire(blocking=False))
        self._lock: threading.Lock | None = lock if self.acquired else None

    def release(self) -> None:
        """Release the lock if held."""
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()
