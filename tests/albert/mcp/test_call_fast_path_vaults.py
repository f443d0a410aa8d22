"""The vault search through the worker's connection: the client's `tools/call` path on and off.

The data server over a real Typesense index; every bench query and a wide set of filters,
three pages each, through `McpConnection` with the fast path and without it (the SDK's path,
as before). The results must be identical byte for byte, as JSON and as the connection
hands them on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from albert.mcp.connection import McpConnection
from bench.data_server import QUERIES
from tests.data_server.mcp_server.servers import AppServer, fresh_app
from tests.typesense_fixture import TypesenseServer

FILTERS: list[dict[str, Any]] = [
    *QUERIES,
    {},
    {"chain": "ethereum"},
    {"chains": ["base", "arbitrum"], "sort_by": "apy", "sort_direction": "asc"},
    {"exclude_chains": ["ethereum"], "min_tvl_usd": 10_000},
    {"query": "steth", "sort_by": "security_score"},
    {"query": "usdc lending"},
    {"query": "zzzz-no-such-vault"},
    {"protocols": ["yearn", "beefy"], "per_page": 5},
    {"asset_symbol": "USDC", "max_apy": 20},
    {"stablecoin_only": True, "min_base_apy": 1, "sort_by": "apy_base"},
    {"max_reward_share": 50, "sort_by": "reward_share"},
    {"min_apy": 1000},
    {"chain": "not-a-chain"},
    {"per_page": "many"},
]


@pytest.fixture(scope="module")
def app(
    typesense_server: TypesenseServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    folder = tmp_path_factory.mktemp("client_fast_path")
    with fresh_app(typesense_server, folder, "clientfast") as server:
        yield server


async def _answers(url: str, fast_calls: bool) -> list[Any]:
    connection = McpConnection(
        "vaults",
        url,
        {},
        on_lost=lambda _: None,
        on_tools_changed=lambda: None,
        fast_calls=fast_calls,
    )
    await connection.connect(within=30)
    assert (connection._fast is not None) is fast_calls
    raw: list[str] = []
    if fast_calls:
        fast = connection._fast
        call = fast.call_tool

        async def record(name: str, arguments: Any) -> Any:
            result = await call(name, arguments)
            raw.append(result.model_dump_json(by_alias=True))
            return result

        fast.call_tool = record
    else:
        client = connection._client
        assert client is not None
        sdk_call = client.call_tool

        async def record_sdk(name: str, arguments: Any = None, *rest: Any, **kw: Any) -> Any:
            result = await sdk_call(name, arguments, *rest, **kw)
            raw.append(result.model_dump_json(by_alias=True))
            return result

        client.call_tool = record_sdk  # type: ignore[method-assign]
    try:
        await connection.list_tools(within=30)
        out: list[Any] = []
        for arguments in FILTERS:
            for page in (1, 2, 3):
                result = await connection.call_tool("search_vaults", {**arguments, "page": page})
                out.append(result.model_dump_json())
        return [*out, *raw]
    finally:
        await connection.close()


def test_every_bench_query_and_filter_answers_byte_for_byte_alike(app: AppServer) -> None:
    fast = asyncio.run(_answers(app.mcp_url, fast_calls=True))
    sdk = asyncio.run(_answers(app.mcp_url, fast_calls=False))
    calls = len(FILTERS) * 3
    assert len(fast) == len(sdk) == 2 * calls  # every call's result was recorded on both
    assert fast == sdk
    assert all('"found":' in answer for answer in fast[: 3 * len(QUERIES)])
    assert sum('"found":0' not in answer for answer in fast[:calls]) > calls // 2
