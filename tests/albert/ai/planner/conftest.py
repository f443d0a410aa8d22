"""Tool specs exactly as the planner sees them: the local tools and the vault server's ten."""

from __future__ import annotations

import httpx
import pytest

from albert.settings import Settings
from albert.tools.base import ToolSpec, spec_of
from albert.tools.catalog import build_local_tools
from data_server.mcp_server.server import _SPECS as VAULT_SERVER_TOOLS


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
