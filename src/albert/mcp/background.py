"""The background work of one object's MCP servers: none of it dies silently.

Every task has a done-callback: one that ends in an exception is logged with its
traceback, and one that is a server's (its first attempt, the start of its recovery
cycle) hands the exception to the server, which makes it its `last_error` and goes on
along the recovery schedule. Connections are closed in the background too, and never
cancelled (a close cut short leaves the SDK's session half torn down): `drain` waits for
them when the object closes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from albert.mcp.server import McpServer

log = logging.getLogger(__name__)

# How long `drain` waits for connections still closing.
CLOSE_WAIT_SECONDS = 2.5


class BackgroundTasks:
    """Runs the servers' background work and connection closes; stops them on close."""

    def __init__(self) -> None:
        # From here on a connection ending is the close itself, not a server lost: no
        # warning, no recovery (the host is stopping, or the object going away).
        self.closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        # Connections being closed: awaited by `drain`, never cancelled.
        self._closing: set[asyncio.Task[Any]] = set()

    def spawn(
        self, work: Coroutine[Any, Any, Any], *, server: McpServer | None = None
    ) -> asyncio.Task[Any]:
        """Run `work` in the background; an exception it ends with is never lost.

        With `server`, the task is part of that server's connecting or recovery, and
        an exception it dies of sends the server on along the recovery schedule.
        """
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._done(done, server, self._tasks))
        return task

    def spawn_close(self, closing: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Close a connection in the background; `drain` waits for it."""
        task = asyncio.ensure_future(closing)
        self._closing.add(task)
        task.add_done_callback(lambda done: self._done(done, None, self._closing))
        return task

    def stop(self) -> None:
        """Closed: cancel the work under way (closes go on; `drain` waits for them)."""
        self.closed = True
        for task in list(self._tasks):
            task.cancel()

    async def drain(self) -> None:
        """Wait for the connections still closing, at most CLOSE_WAIT_SECONDS."""
        if self._closing:
            # Each close is bounded (McpConnection.close); the host's stop bounds this too.
            await asyncio.wait(list(self._closing), timeout=CLOSE_WAIT_SECONDS)

    def _done(
        self,
        task: asyncio.Task[Any],
        server: McpServer | None,
        group: set[asyncio.Task[Any]],
    ) -> None:
        group.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        log.error(
            "MCP background task of server %s died: %s",
            server.name if server is not None else "-",
            type(exc).__name__,
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        if server is not None:
            server.task_died(exc)
