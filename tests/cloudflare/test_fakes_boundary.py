"""The fakes' JS call boundary behaves as Pyodide's does, or the adapter tests prove nothing.

Pyodide (src/core/jsproxy_call.c, jsbind.c, pyproxy.ts): a Python object passed to
a JS function becomes a borrowed PyProxy, destroyed when the call returns, or,
when the call returns a Promise, when it settles; `create_proxy` proxies live
until destroyed; an awaitable's proxy schedules it on the first `then` and lets
go of itself, keeping the promise; destroying twice is allowed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.cloudflare import fakes


class Holder(fakes.JsProxy):
    """A JS object with one synchronous and one Promise-returning method."""

    def __init__(self) -> None:
        self.kept: Any = None
        self.release = asyncio.Event()

    @fakes.js_function
    def keep(self, value: Any) -> None:
        self.kept = value

    @fakes.js_function
    async def keep_while_pending(self, value: Any) -> Any:
        self.kept = value
        await self.release.wait()
        return value.target()


def test_a_borrowed_proxy_dies_when_a_synchronous_call_returns() -> None:
    holder = Holder()
    holder.keep({"a": 1})
    assert isinstance(holder.kept, fakes.PyProxy) and holder.kept.borrowed
    with pytest.raises(fakes.JsException, match="borrowed proxy was automatically destroyed"):
        holder.kept.target()


def test_primitives_and_js_values_cross_unproxied() -> None:
    holder = Holder()
    for value in ("text", 3, 2.5, True, None, fakes.jsnull, fakes.JsObject({})):
        holder.keep(value)
        assert holder.kept is value


async def test_a_borrowed_proxy_lives_until_the_returned_promise_settles() -> None:
    holder = Holder()
    promise = holder.keep_while_pending({"a": 1})
    await asyncio.sleep(0)
    assert holder.kept.target() == {"a": 1}
    holder.release.set()
    assert await promise == {"a": 1}
    with pytest.raises(fakes.JsException, match="end of an asynchronous function call"):
        holder.kept.target()


async def test_a_created_proxy_lives_until_destroyed_and_may_be_destroyed_twice() -> None:
    holder = Holder()
    proxy = fakes.create_proxy({"a": 1})
    holder.keep(proxy)
    assert holder.kept is proxy.js and holder.kept.target() == {"a": 1}
    proxy.destroy()
    proxy.destroy()
    with pytest.raises(fakes.JsException, match="already been destroyed"):
        holder.kept.target()


async def test_an_awaitables_proxy_is_a_thenable_that_keeps_its_promise() -> None:
    async def work() -> str:
        await asyncio.sleep(0)
        return "done"

    task = asyncio.ensure_future(work())
    proxy = fakes.create_proxy(task)
    got: list[str] = []
    chained = proxy.js.then(got.append)
    # Pyodide destroys the proxy once the promise exists; the promise still settles.
    assert proxy.js.destroyed
    await chained
    again = proxy.js.then(got.append)
    await again
    assert got == ["done", "done"]


async def test_a_destroyed_awaitable_proxy_cannot_be_adopted() -> None:
    task = asyncio.ensure_future(asyncio.sleep(0))
    holder = Holder()
    holder.keep(task)
    with pytest.raises(fakes.JsException, match="borrowed proxy"):
        holder.kept.then(lambda _: None)
    await task


def test_abort_sets_the_signal_once_and_tells_listeners() -> None:
    controller = fakes.AbortController.new()
    heard: list[Any] = []
    controller.signal.addEventListener("abort", heard.append)
    assert controller.signal.aborted is False
    controller.abort()
    controller.abort("again")
    assert controller.signal.aborted is True and len(heard) == 1
    assert "AbortError" in str(controller.signal.reason)
    with pytest.raises(fakes.JsException, match="AbortError"):
        controller.signal.throwIfAborted()


async def test_cancelling_the_python_side_of_a_promise_leaves_the_js_work_running() -> None:
    holder = Holder()
    future = holder.keep_while_pending({"a": 1})
    await asyncio.sleep(0)
    future.cancel()
    await asyncio.sleep(0)
    # The JS call still holds its argument and finishes when it is released.
    assert holder.kept.target() == {"a": 1}
    holder.release.set()
    for _ in range(100):
        if holder.kept.destroyed:
            break
        await asyncio.sleep(0.01)
    assert holder.kept.destroyed
