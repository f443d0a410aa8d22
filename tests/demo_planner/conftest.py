"""Tool specs exactly as the planner sees them: the local tools and the vault server's ten;
and the world the planner's conversation tables run in, one per module."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from albert.settings import Settings
from albert.tools.base import ToolSpec, spec_of
from albert.tools.local_tools import build_local_tools
from data_server.mcp_server.server import _SPECS as VAULT_SERVER_TOOLS
from tests.data_server.mcp_server.servers import AppServer
from tests.demo_planner.world import World, running_services, world
from tests.typesense_fixture import TypesenseServer


def vault_server_specs() -> list[ToolSpec]:
    """The data server's tools as its MCP listing describes them (same schema builder)."""
    specs = []
    for name, description, input_model, _, _ in VAULT_SERVER_TOOLS:
        schema = input_model.model_json_schema()
        schema.pop("title", None)
        specs.append(ToolSpec(name=name, description=description, parameters=schema))
    return specs


@pytest.fixture(scope="module")
def local_specs() -> dict[str, ToolSpec]:
    tools = build_local_tools(Settings(), httpx.AsyncClient())
    return {t.name: spec_of(t) for t in tools}


@pytest.fixture(scope="module")
def specs(local_specs: dict[str, ToolSpec]) -> dict[str, ToolSpec]:
    return {**local_specs, **{s.name: s for s in vault_server_specs()}}


@pytest.fixture(scope="module")
def services(
    typesense_server: TypesenseServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[AppServer, str]]:
    folder: Path = tmp_path_factory.mktemp("planner-world")
    with running_services(typesense_server, folder) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tools(
    services: tuple[AppServer, str], typesense_server: TypesenseServer
) -> AsyncIterator[World]:
    app, token_collection = services
    async with world(app, token_collection, typesense_server) as w:
        yield w
