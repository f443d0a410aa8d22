"""Data server test helpers: a Typesense client on the session server and a fresh collection."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from albert.search.typesense_client import TypesenseClient
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
