"""A replica over a PostgreSQL server that stops answering (SIGSTOP): /readyz, /healthz and
the tools each answer within a bound and say what is unavailable; all recovers after
SIGCONT. Connections the server dropped (a restart, a failover; a proxy cutting them) are
replaced on the next read. Real parts throughout: the session's PostgreSQL and Typesense,
uvicorn on a port."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from mcp import Client

from data_server.app import create_app, open_settings_store
from data_server.settings import DatabaseLimits, DataServerSettings
from data_server.store import VaultStore, open_store
from data_server.store.calls import UNAVAILABLE_MESSAGE, StoreCalls
from data_server.store.pg_process import PostgresProcess
from data_server.vaults.model import HistoryPoint
from tests.data_server.mcp_server.servers import UvicornThread, drop_collection, publish_store
from tests.data_server.mcp_server.vault_data import constructed_vaults
from tests.support.ports import reserve
from tests.support.postgres_faults import frozen
from tests.support.tcp_proxy import TcpProxy
from tests.typesense_fixture import TypesenseServer, unique_name

# Generous: the bounds configured below are 1 s (readiness) and 3 s (a request's wait).
READY_WITHIN = 6.0
ANSWER_WITHIN = 15.0
RECOVER_WITHIN = 30.0


@contextmanager
def _serving(settings: DataServerSettings, store: VaultStore) -> Iterator[str]:
    sock = reserve()
    port = int(sock.getsockname()[1])
    server = UvicornThread(create_app(settings, store=store), sock)
    try:
        server.start()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


async def _call(mcp_url: str, name: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    """(seconds taken, result) of one tool call on a fresh MCP session."""
    started = time.monotonic()
    async with Client(mcp_url) as client:
        result = await asyncio.wait_for(client.call_tool(name, arguments), 60)
    return time.monotonic() - started, result


async def _timed_get(base: str, path: str) -> tuple[float, httpx.Response]:
    """(seconds taken, response) of one GET on a new connection."""
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=60) as http:
        response = await http.get(base + path)
    return time.monotonic() - started, response


async def test_a_frozen_postgres_is_reported_within_bounds_and_everything_recovers(
    postgres_server: PostgresProcess,
    postgres_database: Callable[[], str],
    typesense_server: TypesenseServer,
) -> None:
    url = postgres_database()
    collection = unique_name("frozen_pg")
    settings = DataServerSettings(
        DATABASE_URL=url,
        TYPESENSE_URL=typesense_server.url,
        TYPESENSE_API_KEY=typesense_server.api_key,
        TYPESENSE_VAULTS_COLLECTION=collection,
        DATABASE_CONNECT_TIMEOUT_SECONDS=2,
        DATABASE_STATEMENT_TIMEOUT_SECONDS=5,
        STORE_TIMEOUT_SECONDS=3,
        STORE_READY_TIMEOUT_SECONDS=1,
    )
    store = open_settings_store(settings)
    try:
        vaults = constructed_vaults()
        store.upsert_vaults(vaults)
        vault_id = vaults[0].id
        day = 86_400
        store.upsert_history(
            [
                HistoryPoint(vault_id=vault_id, timestamp=i * day, apy=5.0, tvl_usd=1e6)
                for i in range(1, 4)
            ]
        )
        await publish_store(store, typesense_server, collection)
        with _serving(settings, store) as base:
            mcp_url = base + settings.mcp_path
            assert (await _timed_get(base, "/readyz"))[1].status_code == 200
            _, history = await _call(mcp_url, "vault_history", {"vault_id": vault_id})
            assert not history.is_error, history

            with frozen(postgres_server):
                took, ready = await _timed_get(base, "/readyz")
                assert ready.status_code == 503, ready.text
                assert ready.json() == {"status": "store_unavailable"}
                assert took < READY_WITHIN

                took, health = await _timed_get(base, "/healthz")
                assert health.status_code == 503 and took < ANSWER_WITHIN, health.text
                body = health.json()
                assert body["write_store"]["backend"] == "postgresql"
                assert body["write_store"]["ok"] is False and body["write_store"]["problem"]
                assert body["index"]["reachable"] is True
                # Neither the URL nor its user and host are in what a public route answers.
                assert url not in health.text and "postgres@" not in health.text

                took, failed = await _call(mcp_url, "vault_history", {"vault_id": vault_id})
                assert failed.is_error and took < ANSWER_WITHIN
                text = failed.content[0].text  # type: ignore[union-attr]
                assert text == f"Error: {UNAVAILABLE_MESSAGE}"

                # Search is Typesense's: it still answers, without the store's display fields.
                took, found = await _call(mcp_url, "search_vaults", {"per_page": 3})
                assert not found.is_error and took < ANSWER_WITHIN, found

            deadline = time.monotonic() + RECOVER_WITHIN
            while (await _timed_get(base, "/readyz"))[1].status_code != 200:
                assert time.monotonic() < deadline, "not ready again after SIGCONT"
                await asyncio.sleep(0.2)
            _, history = await _call(mcp_url, "vault_history", {"vault_id": vault_id})
            assert not history.is_error, history
            _, health = await _timed_get(base, "/healthz")
            assert health.json()["write_store"] == {"backend": "postgresql", "ok": True}
    finally:
        store.close()
        drop_collection(typesense_server, collection)


async def test_connections_the_server_dropped_are_replaced_on_the_next_read(
    postgres_server: PostgresProcess, postgres_database: Callable[[], str]
) -> None:
    url = postgres_database()
    proxy = await TcpProxy(postgres_server.port).start()
    through = url.replace(f":{postgres_server.port}/", f":{proxy.port}/")
    limits = DatabaseLimits(connect_timeout_seconds=2, statement_timeout_seconds=5)
    # Opened and closed off the loop: the proxy runs on it.
    store = await asyncio.to_thread(open_store, through, limits=limits)
    try:
        calls = StoreCalls(store, 10)
        await calls(store.upsert_vaults, constructed_vaults())
        # Several pooled connections, all open when the cut comes.
        await asyncio.gather(*(calls(store.counts) for _ in range(4)))
        assert proxy.drop_all() >= 2
        counts = await calls(store.counts)
        assert counts.vaults == len(constructed_vaults())
        await calls.ping()
    finally:
        await asyncio.to_thread(store.close)
        await proxy.stop()
