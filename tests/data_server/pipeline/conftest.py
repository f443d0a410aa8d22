"""Pipeline test helpers: a fresh store and the recorded API answers."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from data_server.fixtures import Handler, fixture_handler, offline_transport
from data_server.store import VaultStore


@pytest.fixture
def store(tmp_path: Path) -> VaultStore:
    """A fresh SQLite write store in a temporary file."""
    with VaultStore(tmp_path / "store.db") as opened:
        yield opened  # type: ignore[misc]


def http_client(handler: Handler = fixture_handler) -> httpx.AsyncClient:
    """An httpx client answered from the recordings (optionally through a wrapper)."""
    return httpx.AsyncClient(transport=offline_transport(handler))
