"""The data server app: /healthz with the staleness check, /readyz, /platform, /mcp, `serve`."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from mcp import Client

from child_processes import ChildProcess, answers_http
from data_server.app import create_app
from data_server.mcp_server import TOOL_NAMES, build_mcp_server
from data_server.settings import DataServerSettings
from data_server.store import VaultStore
from data_server.typesense.process import free_port
from tests.data_server.mcp_server.servers import (
    AppServer,
    UvicornThread,
    fresh_app,
    publish_store,
)
from tests.support.ports import reserve
from tests.typesense_fixture import TypesenseServer, unique_name

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def app_server(
    typesense_server: TypesenseServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    with fresh_app(typesense_server, tmp_path_factory.mktemp("app_store"), "vaults_app") as server:
        yield server


def test_healthz_follows_the_staleness_check(
    app_server: AppServer, typesense_server: TypesenseServer
) -> None:
    with httpx.Client(base_url=app_server.base_url, timeout=10) as http:
        fresh = http.get("/healthz")
        assert fresh.status_code == 200
        body = fresh.json()
        assert body["status"] == "ok", body
        assert body["index"]["documents"] == body["store"]["vaults"] > 40
        assert body["wallet_chains"] == ["ethereum"]

        # A vault changes in the store and is not published: the database looks fine,
        # the index is now stale, and the health check says so.
        vault = app_server.store.get_vault("test:base:unrated")
        assert vault is not None
        app_server.store.upsert_vaults([vault.model_copy(update={"apy": 99.0})])
        stale = http.get("/healthz").json()
        assert stale["status"] == "degraded" and stale["index"]["stale"]
        assert any(p.startswith("unpublished_changes") for p in stale["index"]["problems"])

        asyncio.run(
            publish_store(app_server.store, typesense_server, app_server.settings.vaults_collection)
        )
        assert http.get("/healthz").json()["status"] == "ok"


def test_platform_services_are_mounted(app_server: AppServer) -> None:
    with httpx.Client(base_url=app_server.base_url, timeout=10) as http:
        bad = http.get("/platform/tokens/search")
        assert bad.status_code == 400 and "symbol" in bad.text
        assert http.get("/platform/tokens/search", params={"symbol": "PEPE"}).status_code in (
            200,
            404,
        )


async def test_mcp_endpoint_serves_the_ten_tools(app_server: AppServer) -> None:
    async with Client(app_server.mcp_url) as client:
        tools = await client.list_tools()
    assert sorted(t.name for t in tools.tools) == sorted(TOOL_NAMES)


class SlowStore(VaultStore):
    """A store whose publication lookup takes longer than a start-up probe waits (as the
    staleness check does at 20,000 vaults on a loaded machine)."""

    def last_publication(self, collection: str):  # type: ignore[no-untyped-def]
        time.sleep(1.5)
        return super().last_publication(collection)


def test_readiness_answers_within_the_probe_while_the_health_check_takes_longer(
    typesense_server: TypesenseServer, tmp_path: Path
) -> None:
    settings = DataServerSettings(
        TYPESENSE_URL=typesense_server.url,
        TYPESENSE_API_KEY=typesense_server.api_key,
        TYPESENSE_VAULTS_COLLECTION=unique_name("vaults_ready"),
    )
    sock = reserve()
    port = sock.getsockname()[1]
    with SlowStore(tmp_path / "slow.sqlite3") as store:
        server = UvicornThread(create_app(settings, store=store), sock)
        server.start()
        try:
            base = f"http://127.0.0.1:{port}"
            # The runtime's probe (1 s timeout) on each route.
            assert answers_http(f"{base}/readyz", healthy_only=True)() is True
            assert answers_http(f"{base}/healthz")() is False
            assert httpx.get(f"{base}/readyz", timeout=5).json() == {"status": "ready"}
        finally:
            server.stop()


async def test_unreachable_index_is_503_and_tools_say_so(tmp_path: Path, closed_port: int) -> None:
    settings = DataServerSettings(
        TYPESENSE_URL=f"http://127.0.0.1:{closed_port}", SEARCH_TIMEOUT_SECONDS=2
    )
    with VaultStore(tmp_path / "empty.sqlite3") as store:
        app = create_app(settings, store=store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            response = await http.get("/healthz")
            ready = await http.get("/readyz")
        assert response.status_code == 503
        assert response.json()["index"]["reachable"] is False
        assert ready.status_code == 503 and ready.json() == {"status": "index_unreachable"}
        async with Client(build_mcp_server(app.state.deps)) as client:
            result = await client.call_tool("search_vaults", {"chain": "base"})
        assert result.is_error
        assert "vault index is unavailable" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("access_log", [None, "true"], ids=["default", "access_log"])
def test_serve_command_runs_the_app(
    typesense_server: TypesenseServer, tmp_path: Path, access_log: str | None
) -> None:
    port = free_port()
    env = {
        "DATA_SERVER_DB_PATH": str(tmp_path / "serve.sqlite3"),
        "TYPESENSE_URL": typesense_server.url,
        "TYPESENSE_API_KEY": typesense_server.api_key,
        "TYPESENSE_VAULTS_COLLECTION": unique_name("vaults_serve"),
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
    }
    if access_log is not None:
        env["DATA_SERVER_ACCESS_LOG"] = access_log
    serve = ChildProcess(
        [sys.executable, "-m", "data_server.cli", "serve", "--port", str(port)],
        name="albert-data serve",
        cwd=ROOT,
        env=env,
        log_path=tmp_path / "serve.log",
        stop_signal=signal.SIGINT,
        grace=10,
    )
    with serve:
        serve.wait_ready(
            answers_http(f"http://127.0.0.1:{port}/readyz", healthy_only=True), 20, "serving"
        )
        body = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json()
        # Nothing was published to this collection: reachable, but not healthy.
        assert body["index"]["reachable"] is True and body["status"] == "degraded"
    assert serve.returncode == 0, serve.log_tail()
    # One access line per request only when asked for (off by default: it costs per call).
    logged = '"GET /healthz HTTP/1.1" 200' in (tmp_path / "serve.log").read_text()
    assert logged is (access_log is not None)


def test_settings_from_environment_names() -> None:
    settings = DataServerSettings.from_env(
        {
            "RPC_URL": "http://node.example/eth",
            "RPC_URLS": '{"Base": "http://node.example/base"}',
            "DATA_SERVER_PORT": "9999",
            "DATA_SERVER_MCP_PATH": "/mcp/",
            "UNRELATED": "x",
        }
    )
    assert settings.port == 9999 and settings.mcp_path == "/mcp"
    assert settings.chain_rpc_urls() == {
        "base": "http://node.example/base",
        "ethereum": "http://node.example/eth",
    }
    with pytest.raises(ValueError, match="must start with '/'"):
        DataServerSettings.from_env({"DATA_SERVER_MCP_PATH": "mcp"})


def test_the_data_server_parses_with_httptools_and_the_runtime_with_h11_both_bounded() -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from child_processes import listening_socket
    from data_server.http_limits import (
        CONCURRENCY_LIMIT,
        CONNECTIONS_PER_ADDRESS,
        HEAD_SECONDS,
        BoundedH11Protocol,
        bounded_httptools,
    )
    from miniflare.server import uvicorn_server

    assert issubclass(bounded_httptools(), HttpToolsProtocol)
    runtime = SimpleNamespace(env=SimpleNamespace())
    with listening_socket("127.0.0.1", 0) as sock:
        config = uvicorn_server(runtime, "127.0.0.1", sock).config  # type: ignore[arg-type]
    assert config.http is BoundedH11Protocol and issubclass(BoundedH11Protocol, H11Protocol)
    assert config.proxy_headers is False and config.ws_per_message_deflate is False
    assert config.limit_concurrency == CONCURRENCY_LIMIT
    # The data server's settings, for `albert-data serve` and the local stack alike.
    from data_server.app import uvicorn_config

    data = uvicorn_config(object(), host="127.0.0.1", port=1)  # type: ignore[arg-type]
    assert issubclass(data.http, HttpToolsProtocol)  # type: ignore[arg-type]
    assert data.http.head_seconds == HEAD_SECONDS  # type: ignore[union-attr]
    assert data.proxy_headers is False and data.limit_concurrency == CONCURRENCY_LIMIT
    assert data.http.per_address == CONNECTIONS_PER_ADDRESS  # type: ignore[union-attr]


def test_the_local_stacks_data_server_lets_the_runtime_hold_many_connections(
    tmp_path: Path,
) -> None:
    from child_processes import listening_socket
    from data_server.http_limits import BODY_SECONDS, CONCURRENCY_LIMIT, CONNECTIONS_PER_ADDRESS
    from local_stack.stack import _data_server

    with listening_socket("127.0.0.1", 0) as sock:
        config = _data_server("http://127.0.0.1:9", tmp_path / "s.sqlite3", sock, {}).config
    # Every chat client's object connects from 127.0.0.1: the runtime is its one client.
    assert config.http.per_address == CONCURRENCY_LIMIT > CONNECTIONS_PER_ADDRESS  # type: ignore[union-attr]
    assert config.limit_concurrency == CONCURRENCY_LIMIT and config.proxy_headers is False
    assert config.http.body_seconds == BODY_SECONDS  # type: ignore[union-attr]
