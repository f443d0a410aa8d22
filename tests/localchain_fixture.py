"""Shared pytest fixture: the local chains (one anvil per chain), seeded once per session.

Registered in tests/conftest.py. The write store is filled by the offline pipeline (the same
recorded vaults `albert dev` uses, no search index needed) and the chains are seeded from it
exactly as `albert dev` seeds them.

    def test_something(local_chains: LocalChains) -> None:
        httpx.post(local_chains.urls["ethereum"], json={...})

Tests that change chain state put it back themselves (the chains are shared).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from data_server.localchain.anvil import AnvilNotInstalled, AnvilProcess, binary_path
from data_server.localchain.seed import SeedReport, WalletFixture, load_fixture, seed_chains
from data_server.pipeline.run import offline_http, offline_processors, run_pipeline
from data_server.store import VaultStore

CHAINS = ("ethereum", "base")


@dataclass
class LocalChains:
    """Running, seeded chains and the write store they were seeded from."""

    urls: dict[str, str]
    store_path: Path
    fixture: WalletFixture
    reports: list[SeedReport]
    nodes: list[AnvilProcess] = field(default_factory=list)


def require_anvil() -> None:
    """Skip only where npm is absent (scripts/bootstrap then installs no anvil); else fail."""
    try:
        binary_path()
    except AnvilNotInstalled as exc:
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed, so scripts/bootstrap installed no anvil")
        pytest.fail(str(exc))


_http = httpx.Client(timeout=10)


def rpc_answer(url: str, method: str, params: list) -> dict:
    """One JSON-RPC request's whole answer (test side, independent of the project's client)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return _http.post(url, json=body).json()


def rpc(url: str, method: str, params: list) -> object:
    """One JSON-RPC call's result; fails the test on an error answer."""
    answer = rpc_answer(url, method, params)
    assert "error" not in answer, answer
    return answer["result"]


async def _store_and_seed(store_path: Path, urls: dict[str, str]) -> list[SeedReport]:
    with VaultStore(store_path) as store:
        async with offline_http() as http:
            await run_pipeline(offline_processors(), store, None, http=http)
        return await seed_chains(urls, store)


@pytest.fixture(scope="session")
def local_chains(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalChains]:
    """Start ethereum and base anvils, fill a write store, seed both chains; stop at the end."""
    require_anvil()
    state = tmp_path_factory.mktemp("local-chains")
    nodes: list[AnvilProcess] = []
    try:
        for chain in CHAINS:
            nodes.append(AnvilProcess(chain, state).start())
        urls = {node.chain: node.url for node in nodes}
        store_path = state / "data_server.sqlite3"
        reports = asyncio.run(_store_and_seed(store_path, urls))
        yield LocalChains(
            urls=urls, store_path=store_path, fixture=load_fixture(), reports=reports, nodes=nodes
        )
    finally:
        for node in nodes:
            node.stop()
