"""The data server's ASGI app: the MCP endpoint, a health check, and the platform services.

/mcp        streamable-HTTP MCP endpoint with the ten vault and wallet tools
/healthz    GET: search index reachable, write store readable, index not stale, the last
            pipeline run (when the server schedules it: how old, and whether stale); 503
            naming the write store when it does not answer
/readyz     GET: serving, the search index and the write store answer (cheap: for probes)
/platform   reference platform services (token and address analysis, feed search)
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
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
from data_server.pipeline.service import STOP_GRACE_SECONDS, PipelineScheduler, pipeline_health
from data_server.redaction import public_json, public_text, settings_secrets
from data_server.settings import DataServerSettings
from data_server.store import VaultStore, open_store
from data_server.store.calls import StoreCalls, StoreUnavailable, in_thread
from data_server.wallets.positions import WalletReader
from data_server.wallets.rpc import JsonRpcClient

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger(__name__)

StoreCall = Callable[..., Awaitable[Any]]

STORE_CLOSE_SECONDS = 10.0


# On a stop, what `serve` gives the connections still open (a tool call under way, an MCP
# event stream) before it closes them; uvicorn's own default waits for them for ever.
CONNECTIONS_GRACE_SECONDS = 5.0
# The longest a stop takes: the connections' grace, a pipeline run in progress getting
# STOP_GRACE_SECONDS, then the stores closed. Whatever stops the server must wait longer
# before it kills it (compose.yaml: `stop_grace_period`).
SHUTDOWN_SECONDS = CONNECTIONS_GRACE_SECONDS + STOP_GRACE_SECONDS + 2.0


async def _basic_drift(
    settings: DataServerSettings, client: TypesenseClient, store: VaultStore, call: StoreCall
) -> tuple[bool, int | None, list[str]]:
    """(reachable, documents, problems) from the collection and the last publication only."""
    try:
        info = await client.retrieve_collection(settings.vaults_collection)
    except TypesenseError as exc:
        return exc.status is not None, None, [str(exc)]
    publication = await call(store.last_publication, settings.vaults_collection)
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
    settings: DataServerSettings,
    client: TypesenseClient,
    store: VaultStore,
    call: StoreCall | None = None,
) -> dict[str, Any]:
    """Is the index serving what the write store holds, and is it recent?

    The database can look healthy while the index is stale or half-written, so this runs
    the pipeline's staleness check (store vs index vs last publication) and adds an age
    limit on the last publication. `call` makes the store reads (the server's bounded
    `StoreCalls`; `asyncio.to_thread` when None).
    """
    call = call or asyncio.to_thread
    report: dict[str, Any] = {"collection": settings.vaults_collection}
    try:
        from data_server.pipeline.check import check
    except ImportError:
        check = None
    if check is not None:
        try:
            drift = await check(store, client, collection=settings.vaults_collection, call=call)
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
        reachable, documents, problems = await _basic_drift(settings, client, store, call)
        report["documents"] = documents
    publication = await call(store.last_publication, settings.vaults_collection)
    if publication is not None:
        age = time.time() - publication.published_at
        report["last_published_at"] = publication.published_at
        report["age_seconds"] = round(age)
        if age > settings.stale_after():
            problems.append(f"age: last publish is {age / 3600:.1f} h old")
    problems = [public_text(problem) for problem in problems]
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
    # Every store read of a request goes through this: off the event loop, bounded.
    calls = StoreCalls(vault_store, settings.store_timeout_seconds)
    deps = ToolDeps(
        index=VaultIndex(typesense, settings.vaults_collection, display=vault_store, calls=calls),
        history=StoreHistory(vault_store, calls),
        records=StoreRecords(vault_store, calls),
        wallets=WalletReader(
            rpc_clients,
            StoreCatalog(vault_store, calls=calls),
            batch_size=settings.multicall_batch_size,
        ),
    )
    mcp = build_mcp_server(deps)
    wallet_chains = deps.wallets.chains if deps.wallets else []

    async def index_answers() -> bool:
        try:
            return await typesense.health()
        except TypesenseError:
            return False

    async def store_answers() -> bool:
        try:
            await calls.ping(within=settings.store_ready_timeout_seconds)
        except StoreUnavailable:
            return False
        except Exception:  # not ready either way; say why in the log
            log.exception("write store probe failed")
            return False
        return True

    async def full_health() -> JSONResponse:
        # A store that does not answer is found in one short probe, not in each read.
        await calls.ping(within=settings.store_ready_timeout_seconds)
        index = await index_health(settings, typesense, vault_store, calls)
        counts = await calls(vault_store.counts)
        pipeline = await calls(pipeline_health, settings, vault_store)
        # A schedule that stopped running is a fault even while the index still answers.
        late = bool(settings.pipeline_cron) and pipeline["stale"]
        body = {
            "status": "ok" if index.get("ok") and not late else "degraded",
            "index": index,
            "pipeline": pipeline,
            "store": counts.model_dump(mode="json"),
            "write_store": {"backend": calls.backend, "ok": True},
            "wallet_chains": wallet_chains,
        }
        # Unreachable search is an outage; a stale index still answers, so it is degraded.
        return JSONResponse(body, status_code=200 if index.get("reachable") else 503)

    async def store_down(exc: StoreUnavailable) -> JSONResponse:
        # Without the store nothing can be compared: the index's reachability alone.
        body = {
            "status": "degraded",
            "index": {"collection": settings.vaults_collection, "reachable": await index_answers()},
            "pipeline": {"scheduled": settings.pipeline_cron or None},
            "store": None,
            "write_store": {"backend": exc.backend, "ok": False, "problem": exc.problem},
            "wallet_chains": wallet_chains,
        }
        return JSONResponse(body, status_code=503)

    async def healthz(request: Request) -> JSONResponse:
        try:
            return await full_health()
        except StoreUnavailable as exc:
            return await store_down(exc)
        except Exception as exc:  # a health check answers, whatever broke
            log.exception("/healthz failed")
            return JSONResponse(
                {"status": "degraded", "error": f"health check failed ({type(exc).__name__})"},
                status_code=503,
            )

    async def readyz(request: Request) -> JSONResponse:
        # What a probe needs: the app serves and reaches its index and its write store, each
        # within a short bound. /healthz compares the whole store with the index, seconds
        # at 20,000 vaults.
        index_ok, store_ok = await asyncio.gather(index_answers(), store_answers())
        status = "ready" if index_ok and store_ok else "index_unreachable"
        if index_ok and not store_ok:
            status = "store_unavailable"
        return JSONResponse({"status": status}, status_code=200 if status == "ready" else 503)

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
                # Closing the pool waits for its workers: not on the loop, and not for ever.
                try:
                    await in_thread(vault_store.close, within=STORE_CLOSE_SECONDS)
                except TimeoutError:
                    log.warning("write store not closed within %g s", STORE_CLOSE_SECONDS)

    app.router.lifespan_context = lifespan
    app.state.deps = deps
    app.state.settings = settings
    return app


def open_settings_store(settings: DataServerSettings) -> VaultStore:
    """The write store the settings name: PostgreSQL by `DATABASE_URL`, else SQLite."""
    return open_store(
        settings.database_url.get_secret_value(),
        settings.db_path,
        limits=settings.database_limits(),
    )


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


def server_log_config() -> dict[str, Any]:
    """uvicorn's logging, with the data server's own INFO lines (each pipeline run, a write
    store that stops answering) on uvicorn's handler: no handler takes them otherwise, and
    Python's last resort prints warnings only."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["data_server"] = {
        "handlers": ["default"],
        "level": "INFO",
        "propagate": False,
    }
    return config


def serve(settings: DataServerSettings) -> int:
    """Run the data server with uvicorn until interrupted (`albert-data serve`)."""
    import uvicorn

    if settings.require_api_key and not settings.api_key.get_secret_value().strip():
        raise SystemExit(
            "DATA_SERVER_REQUIRE_API_KEY is set and DATA_SERVER_API_KEY is empty: "
            "/mcp and /platform would be open to anyone (docs/data-server-deploy.md)"
        )
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
        log_config=server_log_config(),
        # A line per request was ~2% of a tool call's CPU; operators turn it on when needed.
        access_log=settings.access_log,
        timeout_graceful_shutdown=CONNECTIONS_GRACE_SECONDS,
    )

    async def run() -> None:
        rate_limited_loop_errors(asyncio.get_running_loop())
        await uvicorn.Server(config).serve()

    # uvicorn hands the stop signal back once it has shut down (as `uvicorn.run` does).
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0
