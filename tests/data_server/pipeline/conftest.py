"""Pipeline test helpers: a fresh store and the recorded API answers."""

from __future__ import annotations

import httpx
import pytest

from data_server.fixtures import Handler, fixture_handler, offline_transport
from data_server.store import VaultStore
from tests.data_server.conftest import StoreFactory


@pytest.fixture
def store(new_store: StoreFactory) -> VaultStore:
    """A fresh write store, SQLite and PostgreSQL in turn."""
    return new_store()


def http_client(handler: Handler = fixture_handler) -> httpx.AsyncClient:
    """An httpx client answered from the recordings (optionally through a wrapper)."""
    return httpx.AsyncClient(transport=offline_transport(handler))
