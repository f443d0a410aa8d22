"""The alarm port: one wake-up time per object, as a Durable Object alarm is.

Retries are scheduled as alarms, never as sleeping requests: the platform wakes
the object at the time set and calls its `alarm` handler, which hands over to
`McpManager.on_alarm`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol


class AlarmPort(Protocol):
    """Set, read or clear this object's single alarm (Unix milliseconds)."""

    async def set_alarm(self, at_ms: int) -> None: ...

    async def get_alarm(self) -> int | None: ...

    async def delete_alarm(self) -> None: ...


class LoopAlarm:
    """The alarm port on the running event loop, for hosts without Durable Object alarms."""

    def __init__(self, fire: Callable[[], Awaitable[None]] | None = None) -> None:
        self._fire = fire
        self._at: int | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def bind(self, fire: Callable[[], Awaitable[None]]) -> None:
        """Name the handler to call when the alarm goes off."""
        self._fire = fire

    async def set_alarm(self, at_ms: int) -> None:
        self._cancel()
        self._at = at_ms
        delay = max(0.0, at_ms / 1000 - time.time())
        self._handle = asyncio.get_running_loop().call_later(delay, self._ring, at_ms)

    async def get_alarm(self) -> int | None:
        return self._at

    async def delete_alarm(self) -> None:
        self._cancel()
        self._at = None

    def _cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _ring(self, at_ms: int) -> None:
        if self._at == at_ms:
            self._at = None
        if self._fire is not None:
            task = asyncio.ensure_future(self._fire())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        """Stop the timer and any handler still running."""
        self._cancel()
        for task in list(self._tasks):
            task.cancel()
