"""Two runtimes behind one fixture: the local runtime's objects and fakes of the JS ones.

Every conformance test takes `platform` and runs twice: once against the local
runtime (miniflare: its ctx, SQLite storage, alarms and WebSockets, with its
stand-in `js`/`pyodide.ffi`/`workers` modules) and once against faithful fakes of
what a Durable Object sees under Pyodide (tests/cloudflare/fakes.py, installed in
sys.modules for the test). The code under test is the same adapter layer,
src/albert/cloudflare/, in both.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.cloudflare import fakes
from tests.cloudflare.platform import Platform

PROJECT = Path(__file__).resolve().parents[2]


class _Probe:
    """A minimal Durable Object class for the local runtime to host."""

    fired: list[float]

    def __init__(self, ctx: Any, env: Any) -> None:
        self.ctx = ctx

    async def alarm(self, *_info: Any) -> None:
        _Probe.fired.append(asyncio.get_running_loop().time())

    async def fetch(self, request: Any) -> Any:
        from workers import Response

        return Response(f"{request.method} {await request.text()}")


def _drain(ws: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    queue = ws._outgoing
    for _ in range(1000):
        if queue.empty():
            break
        out.append(queue.get_nowait())
    ws.drained = [*getattr(ws, "drained", []), *out]
    return list(ws.drained)


async def _local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Platform]:
    from miniflare import install_shims
    from miniflare.config import load_config
    from miniflare.objects import DurableObjectNamespace, ObjectHost
    from miniflare.runtime import LocalEnv, LocalRuntime

    install_shims()
    for name in ("js", "pyodide", "pyodide.ffi", "workers"):
        module = sys.modules.get(name)
        if module is not None and "shims" not in (getattr(module, "__file__", "") or ""):
            monkeypatch.delitem(sys.modules, name)
    config = load_config(PROJECT)
    runtime = LocalRuntime(config, tmp_path)
    fired: list[float] = []
    _Probe.fired = fired
    host = ObjectHost(runtime, "Probe", _Probe, tmp_path / "do")
    namespace = DurableObjectNamespace(host)
    env = LocalEnv({**config.vars, "OBJECTS": namespace})
    object_id = host.id_from_name("conformance")
    ctx = host.state(object_id)
    kept: list[Any] = []
    spawn = runtime.spawn

    def spawn_and_keep(work: Any) -> Any:
        task = spawn(work)
        kept.append(task)
        return task

    monkeypatch.setattr(runtime, "spawn", spawn_and_keep)

    def wake() -> Any:
        host.evict(object_id)
        host.instance(object_id)
        return host.state(object_id)

    try:
        yield Platform(
            name="local",
            ctx=ctx,
            alarms_fired=fired,
            frames=_drain,
            binary_message=lambda data: data,
            wake=wake,
            kept_alive=lambda: list(kept),
            env=env,
            namespace=namespace,
        )
    finally:
        host.close()
        await runtime.shutdown(grace_seconds=1.0)


async def _fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Platform]:
    for name, module in fakes.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    fired: list[float] = []

    async def on_alarm() -> None:
        fired.append(asyncio.get_running_loop().time())

    ctx = fakes.DurableObjectState(tmp_path / "object.sqlite", on_alarm)
    try:
        yield Platform(
            name="cloudflare-fakes",
            ctx=ctx,
            alarms_fired=fired,
            frames=lambda ws: list(ws.sent),
            binary_message=fakes.JsArrayBuffer,
            wake=lambda: ctx,
            kept_alive=lambda: list(ctx.waited),
        )
        # As on Pyodide, a value the runtime could no longer use fails the test.
        assert ctx.lost_wait_until == [], "waitUntil got a proxy destroyed before use"
    finally:
        ctx.storage.close()


@pytest.fixture(params=["local", "cloudflare-fakes"])
async def platform(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Platform]:
    """The same Durable Object surface from the local runtime, then from the JS fakes."""
    factory = _local if request.param == "local" else _fakes
    async for value in factory(tmp_path, monkeypatch):
        yield value
