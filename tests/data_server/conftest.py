"""Data server test helpers: a Typesense client on the session server and a fresh collection;
write stores of both backends (SQLite files, databases on the session's PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from albert.search.typesense_client import TypesenseClient
from data_server.store import VaultStore, open_store
from tests.typesense_fixture import TypesenseServer, unique_name

StoreFactory = Callable[[], VaultStore]
BACKENDS = ("sqlite", "postgres")


@pytest.fixture(params=BACKENDS)
def store_backend(request: pytest.FixtureRequest) -> str:
    """Each write-store test runs once per backend."""
    return str(request.param)


@pytest.fixture
def store_url(store_backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """Where a fresh write store of the test's backend lives (one per test)."""
    if store_backend == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    create = request.getfixturevalue("postgres_database")
    return str(create())


@pytest.fixture
def new_store(store_url: str) -> Iterator[StoreFactory]:
    """Opens the test's write store (again, as a restart or a second replica would); every
    store opened is closed after the test."""
    opened: list[VaultStore] = []

    def make() -> VaultStore:
        store = open_store(store_url)
        opened.append(store)
        return store

    try:
        yield make
    finally:
        for store in opened:
            store.close()


@pytest.fixture
async def index_client(typesense_server: TypesenseServer) -> AsyncIterator[TypesenseClient]:
    """A client of the real Typesense server started for the session."""
    async with TypesenseClient(typesense_server.url, typesense_server.api_key) as client:
        yield client


@pytest.fixture
async def collection(index_client: TypesenseClient) -> AsyncIterator[str]:
    """A collection name no other test uses; dropped afterwards."""
    name = unique_name("vaults")
    yield name
    await index_client.drop_collection(name)
