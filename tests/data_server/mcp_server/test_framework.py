"""Tool results handed to the SDK already dumped: the same bytes reach the client."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from albert.search import TypesenseClient
from data_server.coaching import CoachItem
from data_server.mcp_server import build_mcp_server
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import (
    ToolOutput,
    error_result,
    success_result,
    wire_form,
)
from data_server.mcp_server.server import build_tools
from data_server.mcp_server.store_access import StoreHistory, StoreRecords
from data_server.mcp_server.vault_index import VaultIndex
from tests.data_server.mcp_server.servers import AppServer


class Page(BaseModel):
    found: int
    note: str | None = None
    rows: list[dict[str, Any]]


@pytest.mark.parametrize(
    "result",
    [
        success_result(ToolOutput(data=Page(found=0, rows=[]), text="nothing")),
        success_result(
            ToolOutput(
                data=Page(found=2, rows=[{"a": None, "b": [1.5, "x"]}, {}]),
                text="two",
                coach=[CoachItem(name="v", apy=40.0, risk_rating="high", chain="base")],
            )
        ),
        error_result("no vault with id 'x'"),
    ],
    ids=["empty", "with-guidelines", "error"],
)
def test_the_wire_form_is_the_sdks_own_dump(result: Any) -> None:
    assert wire_form(result) == result.model_dump(by_alias=True, mode="json", exclude_none=True)


CALLS = [
    ("search_vaults", {"chain": "base", "per_page": 5}),
    ("search_vaults", {"query": "usdc", "sort_by": "apy"}),
    ("search_vaults", {"min_apy": -1}),
    ("search_vaults", {"chain": "no-such-chain"}),
    ("top_yields", {"stablecoin_only": True}),
    ("analyze_risk", {"vault_id": "test:base:unrated"}),
    ("vault_history", {"vault_id": "nobody:knows:this"}),
    ("search_protocols", {"query": "aave"}),
]


async def test_answers_are_those_of_the_sdks_plain_server(app_server: AppServer) -> None:
    settings = app_server.settings
    async with TypesenseClient(
        settings.typesense_url, settings.typesense_api_key.get_secret_value()
    ) as typesense:
        deps = ToolDeps(
            index=VaultIndex(typesense, settings.vaults_collection),
            history=StoreHistory(app_server.store),
            records=StoreRecords(app_server.store),
        )
        plain = MCPServer(
            name="albert-vaults",
            title="Albert vault and yield data",
            version="0.1.0",
            tools=build_tools(deps),
        )
        async with Client(build_mcp_server(deps)) as ours, Client(plain) as theirs:
            for name, arguments in CALLS:
                mine = await ours.call_tool(name, arguments)
                expected = await theirs.call_tool(name, arguments)
                assert mine.model_dump() == expected.model_dump(), name
                assert mine.structured_content or mine.is_error
