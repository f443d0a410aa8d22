"""One real app server per test module: uvicorn on a free loopback port, the session's
Typesense with the test vaults published by the pipeline's publish step, a real SQLite
write store, and the loopback JSON-RPC node for the wallet tools."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.data_server.mcp_server.servers import (
    AppServer,
    drop_collection,
    publish_store,
    running_app,
    seeded_store,
)
from tests.typesense_fixture import TypesenseServer, unique_name


@pytest.fixture(scope="module")
def app_server(
    typesense_server: TypesenseServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    """The data server over a freshly published collection, for one test module."""
    collection = unique_name("vaults")
    store = asyncio.run(seeded_store(tmp_path_factory.mktemp("store") / "store.sqlite3"))
    try:
        asyncio.run(publish_store(store, typesense_server, collection))
        with running_app(typesense_server, store, collection) as server:
            yield server
    finally:
        store.close()
        drop_collection(typesense_server, collection)
