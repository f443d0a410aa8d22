"""Shared pytest fixture: one real PostgreSQL server per test session (per xdist worker).

Registered in tests/conftest.py. Debian's `postgresql` package provides the binaries
(`scripts/bootstrap` installs it); the server runs on a free port bound to 127.0.0.1 with
its data and unix socket in a temporary folder, and is stopped when the session ends,
also after a failure. Each test takes a database of its own (`postgres_database`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator

import pytest

from data_server.store.pg_process import PostgresProcess

_counter = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresProcess]:
    """Start one PostgreSQL server for the whole session and stop it at the end."""
    server = PostgresProcess()
    try:
        server.start(timeout=60)
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_database(postgres_server: PostgresProcess) -> Iterator[Callable[[], str]]:
    """A factory of empty databases on the session's server (URLs); dropped after the test."""
    names: list[str] = []

    def create() -> str:
        name = f"t_{os.getpid()}_{next(_counter)}"
        names.append(name)
        return postgres_server.create_database(name)

    try:
        yield create
    finally:
        for name in names:
            postgres_server.drop_database(name)
