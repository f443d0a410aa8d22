"""The data server's own API key and per-address rate limit (off unless configured)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from albert.mcp.config_store import McpConfigStore
from albert.settings import Settings
from albert.tools.platform_client import PlatformClient
from data_server.access import AccessGuard
from data_server.app import create_app
from data_server.settings import DataServerSettings
from data_server.store import VaultStore
from tests.data_server.mcp_server.servers import UvicornThread
from tests.support.clock import ManualClock
from tests.support.object_sql import object_sql
from tests.support.ports import reserve

KEY = "k-" + "7" * 40


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[str]:
    sock = reserve()
    port = int(sock.getsockname()[1])
    settings = DataServerSettings(
        TYPESENSE_URL="http://127.0.0.1:9", DATA_SERVER_PORT=port, DATA_SERVER_API_KEY=KEY
    )
    with VaultStore(tmp_path / "store.sqlite3") as store:
        server = UvicornThread(create_app(settings, store=store), sock)
        server.start()
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.stop()


async def test_the_mcp_endpoint_and_platform_want_the_key_and_probes_do_not(keyed: str) -> None:
    from albert.mcp.connection import ConnectFailed, McpConnection

    async with httpx.AsyncClient(base_url=keyed, timeout=10) as http:
        for path in ("/mcp", "/platform/tokens/search?symbol=PEPE"):
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": KEY}):
                refused = await http.get(path, headers=headers)
                assert refused.status_code == 401, (path, headers)
                assert refused.headers["www-authenticate"] == "Bearer"
        assert (await http.get("/healthz")).status_code != 401
        platform = await http.get(
            "/platform/tokens/search?symbol=PEPE", headers={"authorization": f"Bearer {KEY}"}
        )
        assert platform.status_code != 401

    def connection(headers: dict[str, str]) -> McpConnection:
        return McpConnection(
            "vaults", f"{keyed}/mcp", headers, on_lost=lambda _: None, on_tools_changed=lambda: None
        )

    refused_conn = connection({})
    with pytest.raises(ConnectFailed, match="needs authorization"):
        await refused_conn.connect(within=10)
    conn = connection({"Authorization": f"Bearer {KEY}"})
    await conn.connect(within=10)
    try:
        assert "search_vaults" in [s.name for s in await conn.list_tools(within=10)]
    finally:
        await conn.close()


async def test_requests_per_address_are_limited_with_a_retry_after() -> None:
    clock = ManualClock(0)

    async def ok(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = AccessGuard(ok, guarded=("/mcp",), per_minute=3, clock=clock)
    transport = httpx.ASGITransport(app=guard, client=("198.51.100.7", 1234))
    async with httpx.AsyncClient(transport=transport, base_url="http://x") as http:
        statuses = [(await http.post("/mcp")).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = await http.post("/mcp")
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) == 20
        assert (await http.get("/healthz")).status_code == 200  # not a guarded path
        clock.advance(20.0)  # a minute's third refills one request
        assert (await http.post("/mcp")).status_code == 200
    other = httpx.ASGITransport(app=guard, client=("198.51.100.8", 1234))
    async with httpx.AsyncClient(transport=other, base_url="http://x") as http:
        assert (await http.post("/mcp")).status_code == 200  # another address, its own bucket


async def _ok(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _status(guard: AccessGuard, address: str) -> int:
    transport = httpx.ASGITransport(app=guard, client=(address, 1234))
    async with httpx.AsyncClient(transport=transport, base_url="http://x") as http:
        return (await http.post("/mcp")).status_code


async def test_ipv6_addresses_are_counted_per_64_as_the_worker_counts_them() -> None:
    guard = AccessGuard(_ok, guarded=("/mcp",), per_minute=2, clock=ManualClock(0))
    # One subscriber's /64 holds 2^64 addresses: rotating through them changes nothing.
    statuses = [await _status(guard, f"2001:db8:1:2::{n:x}") for n in range(1, 5)]
    assert statuses == [200, 200, 429, 429]
    assert await _status(guard, "2001:db8:1:3::1") == 200  # another /64
    assert await _status(guard, "::ffff:198.51.100.9") == 200
    assert await _status(guard, "198.51.100.9") == 200
    assert await _status(guard, "198.51.100.9") == 429  # the mapped form is the same address


async def test_the_buckets_kept_are_bounded_least_recently_used_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import data_server.access as access

    monkeypatch.setattr(access, "MAX_ADDRESSES", 2)
    guard = AccessGuard(_ok, guarded=("/mcp",), per_minute=1, clock=ManualClock(0))
    a, b, c = "198.51.100.1", "198.51.100.2", "198.51.100.3"
    assert [await _status(guard, x) for x in (a, b, a)] == [200, 200, 429]
    # A third address drops the least recently used bucket (b's), never a's, which was used
    # last; the memory held stays at two buckets however many addresses come.
    assert await _status(guard, c) == 200
    assert await _status(guard, a) == 429
    assert await _status(guard, b) == 200  # b starts again with a full bucket


async def test_the_worker_sends_the_key_to_the_platform_and_the_default_server(
    tmp_path: Path,
) -> None:
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"symbol": "PEPE", "results": []})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        keyed = PlatformClient("http://data/platform", http, timeout=5, api_key=KEY)
        await keyed.token_by_symbol("PEPE")
        bare = PlatformClient("http://data/platform", http, timeout=5)
        await bare.token_by_symbol("PEPE")
    assert seen == [f"Bearer {KEY}", None]
    settings = Settings.from_env(
        {"MCP_DEFAULT_SERVER_URL": "http://data/mcp", "DATA_SERVER_API_KEY": KEY}
    )
    store = McpConfigStore(object_sql(tmp_path / "o.sqlite"), settings, lambda: 0)
    default = store.default()
    assert default is not None and default.headers == {"Authorization": f"Bearer {KEY}"}
