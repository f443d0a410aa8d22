"""One real app server per test module: uvicorn on a free loopback port, the session's
Typesense with the test vaults published by the pipeline's publish step, a real SQLite
write store, and the loopback JSON-RPC node for the wallet tools."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.data_server.mcp_server.servers import AppServer, fresh_app
from tests.typesense_fixture import TypesenseServer


@pytest.fixture(scope="module")
def app_server(
    typesense_server: TypesenseServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    """The data server over a freshly published collection, for one test module."""
    with fresh_app(typesense_server, tmp_path_factory.mktemp("store"), "vaults") as server:
        yield server
