"""Serving a LocalRuntime with uvicorn on loopback."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import uvicorn

from miniflare.config import load_config
from miniflare.runtime import LocalRuntime

log = logging.getLogger(__name__)


def make_runtime(
    project_dir: Path, state_dir: Path, overrides: dict[str, str] | None = None
) -> LocalRuntime:
    """A runtime for the worker of `project_dir`, its objects' files under `state_dir`."""
    config = load_config(project_dir)
    runtime = LocalRuntime(config, state_dir, overrides)
    runtime.load()
    return runtime


def uvicorn_server(runtime: LocalRuntime, host: str, port: int) -> uvicorn.Server:
    """A uvicorn server for the runtime, with real WebSockets."""
    config = uvicorn.Config(
        runtime,
        host=host,
        port=port,
        ws="websockets-sansio",
        interface="asgi3",
        lifespan="on",
        log_level="warning",
        ws_ping_interval=20,
        ws_max_size=1 << 20,
    )
    return uvicorn.Server(config)


async def serve(runtime: LocalRuntime, host: str, port: int) -> None:
    """Serve until cancelled or interrupted."""
    await uvicorn_server(runtime, host, port).serve()


def run(
    project_dir: Path,
    state_dir: Path,
    host: str,
    port: int,
    overrides: dict[str, str] | None = None,
) -> None:
    """Blocking entry: load and serve the worker."""
    runtime = make_runtime(project_dir, state_dir, overrides)
    asyncio.run(serve(runtime, host, port))
