"""`ctx.waitUntil`: work that must finish after the response has gone out."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from albert.cloudflare.ffi import create_proxy


class WaitUntil:
    """The core's `defer` port on the platform's `ctx.waitUntil`.

    The coroutine is scheduled as a task at once (so it runs even if the platform
    never awaits it) and the task is handed to `waitUntil`, which keeps the object
    alive until it settles.

    Under Pyodide a Python object passed to a JS function crosses as a *borrowed*
    proxy, destroyed as soon as a call that returns no Promise returns. waitUntil
    returns nothing and the runtime reads the proxy's `then` only afterwards, so a
    bare task would reach it already destroyed (workerd logs "This borrowed proxy was
    automatically destroyed" and the object is not kept alive for the work). The
    Workers SDK hands a Durable Object's ctx to the runtime's waitUntil patch too (the
    patched waitUntil copies the proxy), but workerd applies that patch to an
    `ExecutionContext` only: a Durable Object's ctx is a `DurableObjectState`, whose
    `waitUntil` stays the native one (seen on workerd 1.20261117.1). Hence an explicit
    `create_proxy`, kept until the task is done. Where no JS boundary exists (the local
    runtime), the task is passed as it is.
    """

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._tasks: set[asyncio.Future[Any]] = set()

    def __call__(self, work: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        proxy = create_proxy(task)
        if proxy is None:
            self._ctx.waitUntil(task)
            return task
        try:
            self._ctx.waitUntil(proxy)
        except BaseException:
            proxy.destroy()
            raise
        # The runtime has called `then` by the time the task can finish: that call is a
        # microtask, and the task needs at least one turn of Pyodide's event loop
        # (setTimeout). Pyodide lets go of the proxy itself at that first `then` and
        # allows a second destroy, so this frees only what the runtime never took.
        task.add_done_callback(lambda _: proxy.destroy())
        return task
