"""The data server's ASGI app: the MCP endpoint, a health check, and the platform services.

/mcp        streamable-HTTP MCP endpoint with the ten vault and wallet tools
/healthz    GET: search index reachable, write store readable, index not stale, the last
            pipeline run (when the server schedules it: how old, and whether stale)
/readyz     GET: serving, and the search index answers (cheap: for start-up probes)
/platform   reference platform services (token and address analysis, feed search)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp

from albert.search import TypesenseClient, TypesenseError
from data_server.access import AccessGuard
from data_server.mcp_server import build_mcp_server
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.store_access import StoreCatalog, StoreHistory, StoreRecords
from data_server.mcp_server.vault_index import VaultIndex
from data_server.mcp_streams import EventStreamGuard
from data_server.pipeline.service import PipelineScheduler, pipeline_health
from data_server.redaction import public_json, settings_secrets
from data_server.settings import DataServerSettings
from data_server.store import VaultStore, open_store
from data_server.wallets.positions import WalletReader
from data_server.wallets.rpc import JsonRpcClient

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger(__name__)


async def _basic_drift(
    settings: DataServerSettings, client: TypesenseClient, store: VaultStore
) -> tuple[bool, int | None, list[str]]:
    """(reachable, documents, problems) from the collection and the last publication only."""
    try:
        info = await client.retrieve_collection(settings.vaults_collection)
    except TypesenseError as exc:
        return exc.status is not None, None, [str(exc)]
    publication = await asyncio.to_thread(store.last_publication, settings.vaults_collection)
    if publication is None:
        return True, info.num_documents, ["never_published: no successful publish"]
    if publication.count != info.num_documents:
        return (
            True,
            info.num_documents,
            [
                f"count: index has {info.num_documents} documents, last publish wrote "
                f"{publication.count}"
            ],
        )
    return True, info.num_documents, []


async def index_health(
    settings: DataServerSettings, client: TypesenseClient, store: VaultStore
) -> dict[str, Any]:
    """Is the index serving what the write store holds, and is it recent?

    The database can look healthy while the index is stale or half-written, so this runs
    the pipeline's staleness check (store vs index vs last publication) and adds an age
    limit on the last publication.
    """
    report: dict[str, Any] = {"collection": settings.vaults_collection}
    try:
        from data_server.pipeline.check import check
    except ImportError:
        check = None
    if check is not None:
        try:
            drift = await check(store, client, collection=settings.vaults_collection)
        except TypesenseError as exc:
            # The collection answered but a later query failed: still an outage.
            report.update(ok=False, reachable=False, stale=True, problems=[str(exc)])
            return report
        reachable = not any(i.kind == "index_unreachable" for i in drift.issues)
        problems = [f"{i.kind}: {i.detail}" for i in drift.issues]
        report["documents"] = drift.index_count
        report["store_vaults"] = drift.store.count
        report["unpublished_changes"] = drift.unpublished_changes
    else:
        reachable, documents, problems = await _basic_drift(settings, client, store)
        report["documents"] = documents
    publication = await asyncio.to_thread(store.last_publication, settings.vaults_collection)
    if publication is not None:
        age = time.time() - publication.published_at
        report["last_published_at"] = publication.published_at
        report["age_seconds"] = round(age)
        if age > settings.stale_after_seconds:
            problems.append(f"age: last publish is {age / 3600:.1f} h old")
    report.update(reachable=reachable, stale=bool(problems), problems=problems)
    report["ok"] = reachable and not problems
    return report


def create_app(
    settings: DataServerSettings,
    *,
    store: VaultStore | None = None,
    http: httpx.AsyncClient | None = None,
) -> Starlette:
    """Build the whole data server app; resources are closed when its lifespan ends."""
    owns_http = http is None
    http_client = http or outbound_http(settings.search_timeout_seconds)
    owns_store = store is None
    vault_store = store if store is not None else open_settings_store(settings)

    typesense = TypesenseClient(
        settings.typesense_url,
        settings.typesense_api_key.get_secret_value(),
        http=http_client,
        timeout=settings.search_timeout_seconds,
        compressed=settings.typesense_compressed,
    )
    rpc_clients = {
        chain: JsonRpcClient(url, http_client, timeout=settings.rpc_timeout_seconds)
        for chain, url in settings.chain_rpc_urls().items()
    }
    deps = ToolDeps(
        index=VaultIndex(typesense, settings.vaults_collection, display=vault_store),
        history=StoreHistory(vault_store),
        records=StoreRecords(vault_store),
        wallets=WalletReader(
            rpc_clients, StoreCatalog(vault_store), batch_size=settings.multicall_batch_size
        ),
    )
    mcp = build_mcp_server(deps)

    async def healthz(request: Request) -> JSONResponse:
        index = await index_health(settings, typesense, vault_store)
        counts = await asyncio.to_thread(vault_store.counts)
        pipeline = await asyncio.to_thread(pipeline_health, settings, vault_store)
        # A schedule that stopped running is a fault even while the index still answers.
        late = bool(settings.pipeline_cron) and pipeline["stale"]
        body = {
            "status": "ok" if index.get("ok") and not late else "degraded",
            "index": index,
            "pipeline": pipeline,
            "store": counts.model_dump(mode="json"),
            "wallet_chains": deps.wallets.chains if deps.wallets else [],
        }
        # Unreachable search is an outage; a stale index still answers, so it is degraded.
        return JSONResponse(body, status_code=200 if index.get("reachable") else 503)

    async def readyz(request: Request) -> JSONResponse:
        # What a start-up probe needs: the app serves and can reach its index. /healthz
        # compares the whole store with the index, seconds at 20,000 vaults.
        try:
            reachable = await typesense.health()
        except TypesenseError:
            reachable = False
        return JSONResponse(
            {"status": "ready" if reachable else "index_unreachable"},
            status_code=200 if reachable else 503,
        )

    # /healthz is open: whatever it quotes from a failure loses URLs and credentials.
    mcp.custom_route("/healthz", methods=["GET"])(public_json(healthz, settings_secrets(settings)))
    mcp.custom_route("/readyz", methods=["GET"])(readyz)
    # Every tool answers with one result and sends no progress or request of its own, so a
    # POST is answered with its JSON body directly: no per-request task group, stream and
    # disconnect watcher, which the event-stream mode sets up in case a handler emits.
    # (`subscriptions/listen` is still an event stream: the SDK always serves it as one.)
    app = mcp.streamable_http_app(
        streamable_http_path=settings.mcp_path, host=settings.host, json_response=True
    )
    mount_platform(app)
    # GETs the SDK answers badly (no session, Last-Event-ID): 405 and 400 (mcp_streams).
    app.add_middleware(EventStreamGuard, path=settings.mcp_path)
    app.add_middleware(
        AccessGuard,
        guarded=(settings.mcp_path, "/platform"),
        api_key=settings.api_key.get_secret_value(),
        per_minute=settings.requests_per_minute,
    )

    session_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(scope_app: Starlette) -> AsyncIterator[None]:
        scheduler: PipelineScheduler | None = None
        try:
            async with session_lifespan(scope_app):
                if settings.pipeline_cron:
                    scheduler = PipelineScheduler(settings, vault_store, typesense)
                    scheduler.start()
                    app.state.scheduler = scheduler
                try:
                    yield
                finally:
                    if scheduler is not None:
                        await scheduler.stop()
        finally:
            if owns_http:
                await http_client.aclose()
            if owns_store:
                vault_store.close()

    app.router.lifespan_context = lifespan
    app.state.deps = deps
    app.state.settings = settings
    return app


def open_settings_store(settings: DataServerSettings) -> VaultStore:
    """The write store the settings name: PostgreSQL by `DATABASE_URL`, else SQLite."""
    return open_store(settings.database_url.get_secret_value(), settings.db_path)


def outbound_http(timeout: float) -> httpx.AsyncClient:
    """The data server's client for Typesense and chain RPC: httpx, one shared TLS context.

    Its cookie store reads only responses that set a cookie (`ObjectHttpClient`, as the
    worker's own outbound client): Typesense and RPC answers set none.
    """
    from albert.outbound.client import ObjectHttpClient
    from albert.outbound.tls import shared_tls_context

    return ObjectHttpClient(verify=shared_tls_context(), timeout=timeout)


def mount_platform(app: Starlette) -> None:
    """Mount the reference platform services at /platform when they are installed."""
    try:
        from data_server.platform import platform_app
    except ImportError:
        log.info("platform services not available; /platform is not mounted")
        return
    app.mount("/platform", platform_app())


def uvicorn_config(
    app: ASGIApp, *, host: str, port: int, per_address: int | None = None, **options: Any
) -> uvicorn.Config:
    """The data server's uvicorn settings, the same for `albert-data serve` and the local
    stack: httptools with deadlines for request heads and bodies, a per-address connection
    cap (`per_address`, CONNECTIONS_PER_ADDRESS unless given), a bound on connections and
    requests in flight, forwarded headers not trusted (data_server/http_limits.py).
    `options` adds to them (log level, lifespan, …)."""
    import uvicorn

    from data_server.http_limits import bounded_httptools, server_options

    protocol: Any = bounded_httptools()
    if per_address is not None:
        protocol.per_address = per_address
    return uvicorn.Config(app, host=host, port=port, **{**server_options(protocol), **options})


def serve(settings: DataServerSettings) -> int:
    """Run the data server with uvicorn until interrupted (`albert-data serve`)."""
    import uvicorn

    app = create_app(settings)
    print(
        f"data server on http://{settings.host}:{settings.port} "
        f"(MCP at {settings.mcp_path}, health at /healthz, readiness at /readyz, "
        "platform at /platform)",
        flush=True,
    )
    from data_server.http_limits import rate_limited_loop_errors

    config = uvicorn_config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="info",
        # A line per request was ~2% of a tool call's CPU; operators turn it on when needed.
        access_log=settings.access_log,
    )

    async def run() -> None:
        rate_limited_loop_errors(asyncio.get_running_loop())
        await uvicorn.Server(config).serve()

    # uvicorn hands the stop signal back once it has shut down (as `uvicorn.run` does).
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0
