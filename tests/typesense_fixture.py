"""Shared pytest fixture: one real Typesense server per test session.

Use it from any test package (it is registered in tests/conftest.py):

    def test_something(typesense_server: TypesenseServer) -> None:
        httpx.get(f"{typesense_server.url}/health")

Tests that need isolation should use their own collection names (see `unique_name`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from data_server.typesense.process import TypesenseProcess

API_KEY = "test-key-albert"
_counter = itertools.count(1)


@dataclass(frozen=True)
class TypesenseServer:
    """A running Typesense server: where it listens and the admin key it accepts."""

    url: str
    api_key: str
    data_dir: Path
    process: TypesenseProcess


def unique_name(prefix: str) -> str:
    """A collection name unique within this test session (and this worker process)."""
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


@pytest.fixture(scope="session")
def typesense_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TypesenseServer]:
    """Start one Typesense server for the whole session and stop it at the end."""
    data_dir = tmp_path_factory.mktemp("typesense-data")
    process = TypesenseProcess(data_dir=data_dir, api_key=API_KEY)
    process.start(timeout=30)
    try:
        yield TypesenseServer(url=process.url, api_key=API_KEY, data_dir=data_dir, process=process)
    finally:
        process.stop()
