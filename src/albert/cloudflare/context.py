"""`ctx.waitUntil`: work that must finish after the response has gone out."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class WaitUntil:
    """The core's `defer` port on the platform's `ctx.waitUntil`.

    The coroutine is scheduled as a task at once (so it runs even if the platform
    never awaits it) and the task is handed to `waitUntil`, which keeps the object
    alive until it settles; Pyodide passes an asyncio future to JS as a Promise.
    """

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._tasks: set[asyncio.Future[Any]] = set()

    def __call__(self, work: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._ctx.waitUntil(task)
        return task
