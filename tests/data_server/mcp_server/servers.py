"""Test support: a data server on a real loopback port over a really published index."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from albert.search import TypesenseClient
from data_server.app import create_app
from data_server.pipeline import offline_http, offline_processors, run_pipeline
from data_server.settings import DataServerSettings
from data_server.store import Publication, VaultStore
from data_server.vaults.index import publish
from data_server.vaults.model import Vault
from tests.data_server.mcp_server.vault_data import constructed_vaults
from tests.data_server.wallets.rpc_node import RpcNode
from tests.support.ports import reserve
from tests.typesense_fixture import TypesenseServer, unique_name


class UvicornThread:
    """Serve an ASGI app with uvicorn in a background thread, stop it on demand."""

    def __init__(self, app: object, sock: socket.socket) -> None:
        port = int(sock.getsockname()[1])
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.sock = sock
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )

    def start(self, timeout: float = 10.0) -> None:
        """Start and wait (bounded) until uvicorn reports it is listening."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()  # uvicorn closes it too, unless it never started


@dataclass(frozen=True)
class AppServer:
    """A running data server."""

    base_url: str
    mcp_url: str
    settings: DataServerSettings
    store: VaultStore
    rpc: RpcNode
    app: Any = None


async def seeded_store(path: Path) -> VaultStore:
    """A write store filled by the offline pipeline, plus the constructed test vaults."""
    store = VaultStore(path)
    async with offline_http() as http:
        report = await run_pipeline(offline_processors(), store, None, None, http=http)
    # Every source must load; "partial" only reflects warnings and the skipped publish.
    assert all(source.ok for source in report.run.sources), report.run
    store.upsert_vaults(constructed_vaults())
    return store


def active_vaults(store: VaultStore) -> list[Vault]:
    """What the tools search by default: every active vault in the store."""
    return [v for v in store.iter_vaults() if v.status == "active"]


async def publish_store(
    store: VaultStore, typesense: TypesenseServer, collection: str
) -> Publication:
    """Publish the store to a collection with the pipeline's own publish step."""
    async with TypesenseClient(typesense.url, typesense.api_key) as client:
        publication = await publish(store, client, collection=collection)
    assert publication.error is None, publication.error
    return publication


def drop_collection(typesense: TypesenseServer, collection: str) -> None:
    """Delete a test collection (missing is fine)."""
    with httpx.Client() as http:
        http.delete(
            f"{typesense.url}/collections/{collection}",
            headers={"X-TYPESENSE-API-KEY": typesense.api_key},
        )


@contextmanager
def running_app(
    typesense: TypesenseServer, store: VaultStore, collection: str
) -> Iterator[AppServer]:
    """The data server app with uvicorn on a free port, plus the loopback RPC node."""
    rpc = RpcNode().start()
    sock = reserve()
    port = int(sock.getsockname()[1])
    settings = DataServerSettings(
        TYPESENSE_URL=typesense.url,
        TYPESENSE_API_KEY=typesense.api_key,
        TYPESENSE_VAULTS_COLLECTION=collection,
        RPC_URL=rpc.url,
        DATA_SERVER_PORT=port,
    )
    app = create_app(settings, store=store)
    server = UvicornThread(app, sock)
    try:
        server.start()
        base = f"http://127.0.0.1:{port}"
        yield AppServer(base, base + settings.mcp_path, settings, store, rpc, app)
    finally:
        server.stop()
        rpc.stop()


@contextmanager
def fresh_app(typesense: TypesenseServer, folder: Path, prefix: str) -> Iterator[AppServer]:
    """The data server over a freshly seeded and published collection, removed afterwards."""
    collection = unique_name(prefix)
    store = asyncio.run(seeded_store(folder / "store.sqlite3"))
    try:
        asyncio.run(publish_store(store, typesense, collection))
        with running_app(typesense, store, collection) as server:
            yield server
    finally:
        store.close()
        drop_collection(typesense, collection)
