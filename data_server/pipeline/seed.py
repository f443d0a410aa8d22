"""Seed the local stack: the offline pipeline fills the write store and the index."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from albert.search.typesense_client import TypesenseClient
from data_server.pipeline.check import check
from data_server.pipeline.progress import PipelineProgress
from data_server.pipeline.run import PipelineReport, offline_http, offline_processors, run_pipeline
from data_server.store import VaultStore
from data_server.vaults.index import COLLECTION


class TypesenseEndpoint(Protocol):
    """Anything that says where a Typesense server listens (e.g. a TypesenseProcess)."""

    @property
    def url(self) -> str:
        """Base URL of the server."""
        ...

    @property
    def api_key(self) -> str:
        """Admin API key."""
        ...


async def seed_local(
    db_path: str | Path,
    typesense: TypesenseClient | TypesenseEndpoint,
    *,
    collection: str = COLLECTION,
    progress: PipelineProgress | None = None,
    skip_if_current: bool = False,
) -> PipelineReport | None:
    """Run the offline pipeline (recorded responses, a few thousand real vaults).

    With ``skip_if_current`` nothing is done (None is returned) when the store already
    holds vaults and the staleness check finds no drift against the index. ``typesense`` is
    a client, or a running server (``TypesenseProcess``) for which one is made and closed.
    """
    if isinstance(typesense, TypesenseClient):
        return await _seed(db_path, typesense, collection, progress, skip_if_current)
    async with TypesenseClient(typesense.url, typesense.api_key) as client:
        return await _seed(db_path, client, collection, progress, skip_if_current)


async def _seed(
    db_path: str | Path,
    typesense: TypesenseClient,
    collection: str,
    progress: PipelineProgress | None,
    skip_if_current: bool,
) -> PipelineReport | None:
    with VaultStore(db_path) as store:
        if skip_if_current and store.counts().vaults:
            report = await check(store, typesense, collection=collection)
            if report.ok:
                return None
        async with offline_http() as http:
            return await run_pipeline(
                offline_processors(),
                store,
                typesense,
                progress,
                http=http,
                collection=collection,
            )
