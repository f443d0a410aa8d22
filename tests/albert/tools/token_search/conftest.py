"""A seeded `tokens` collection on the session's Typesense server, shared by these tests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from albert.search.typesense_client import TypesenseClient
from data_server.tokens.seed import TokenDocument, build_token_documents, seed_tokens
from tests.typesense_fixture import TypesenseServer, unique_name


@dataclass(frozen=True)
class SeededTokens:
    """Where the seeded collection lives and what went into it."""

    url: str
    api_key: str
    collection: str
    documents: list[TokenDocument]


async def _seed(server: TypesenseServer, collection: str) -> None:
    async with TypesenseClient(server.url, server.api_key) as client:
        await seed_tokens(client, collection)


@pytest.fixture(scope="session")
def seeded_tokens(typesense_server: TypesenseServer) -> SeededTokens:
    """The seed documents indexed once per session under a collection name of their own."""
    collection = unique_name("tokens")
    asyncio.run(_seed(typesense_server, collection))
    return SeededTokens(
        url=typesense_server.url,
        api_key=typesense_server.api_key,
        collection=collection,
        documents=build_token_documents(),
    )
