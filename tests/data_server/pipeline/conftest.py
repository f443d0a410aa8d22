"""Pipeline test helpers: a Typesense client on the session server and a fresh collection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from albert.search.typesense_client import TypesenseClient
from data_server.fixtures import Handler, fixture_handler, offline_transport
from data_server.store import VaultStore
from tests.typesense_fixture import TypesenseServer, unique_name


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


@pytest.fixture
def store(tmp_path: Path) -> VaultStore:
    """A fresh SQLite write store in a temporary file."""
    with VaultStore(tmp_path / "store.db") as opened:
        yield opened  # type: ignore[misc]


def http_client(handler: Handler = fixture_handler) -> httpx.AsyncClient:
    """An httpx client answered from the recordings (optionally through a wrapper)."""
    return httpx.AsyncClient(transport=offline_transport(handler))
