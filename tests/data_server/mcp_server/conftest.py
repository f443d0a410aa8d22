"""One real app server per test module: uvicorn on a free loopback port, real Typesense
(the session server) with the test vaults indexed, a real SQLite write store, and the
loopback JSON-RPC node for the wallet tools."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

from albert.search import TypesenseClient
from data_server.app import create_app
from data_server.settings import DataServerSettings
from data_server.store import Publication, VaultStore
from data_server.typesense.process import free_port
from tests.data_server.mcp_server.index_docs import vault_document, vaults_schema
from tests.data_server.mcp_server.vault_data import all_vaults
from tests.data_server.wallets.rpc_node import RpcNode
from tests.typesense_fixture import TypesenseServer, unique_name


class UvicornThread:
    """Serve an ASGI app with uvicorn in a background thread, stop it on demand."""

    def __init__(self, app: object, port: int) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

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


@dataclass(frozen=True)
class AppServer:
    """A running data server."""

    base_url: str
    mcp_url: str
    settings: DataServerSettings
    store: VaultStore
    rpc: RpcNode


async def _index(server: TypesenseServer, collection: str) -> int:
    vaults, _ = all_vaults()
    async with TypesenseClient(server.url, server.api_key) as client:
        await client.create_collection(vaults_schema(collection))
        summary = await client.import_documents(collection, [vault_document(v) for v in vaults])
    assert summary.all_ok, summary.failures[:3]
    return summary.ok


@pytest.fixture(scope="module")
def app_server(
    typesense_server: TypesenseServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    """The data server over a freshly indexed collection, for one test module."""
    collection = unique_name("vaults")
    count = asyncio.run(_index(typesense_server, collection))
    vaults, points = all_vaults()
    store = VaultStore(Path(tmp_path_factory.mktemp("store")) / "store.sqlite3")
    store.upsert_vaults(vaults)
    store.upsert_history(points)
    store.record_publication(
        Publication(
            collection=collection,
            published_at=time.time(),
            count=count,
            newest_updated_at=max(v.updated_at for v in vaults),
            revision=store.revision(),
            checksum="test",
        )
    )
    rpc = RpcNode().start()
    port = free_port()
    settings = DataServerSettings(
        TYPESENSE_URL=typesense_server.url,
        TYPESENSE_API_KEY=typesense_server.api_key,
        TYPESENSE_VAULTS_COLLECTION=collection,
        RPC_URL=rpc.url,
        DATA_SERVER_PORT=port,
    )
    server = UvicornThread(create_app(settings, store=store), port)
    try:
        server.start()
        base = f"http://127.0.0.1:{port}"
        yield AppServer(
            base_url=base, mcp_url=base + settings.mcp_path, settings=settings, store=store, rpc=rpc
        )
    finally:
        server.stop()
        rpc.stop()
        store.close()
        with httpx.Client() as http:
            http.delete(
                f"{typesense_server.url}/collections/{collection}",
                headers={"X-TYPESENSE-API-KEY": typesense_server.api_key},
            )
