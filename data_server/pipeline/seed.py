"""Seed the local stack: the offline pipeline fills the write store and the index."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from albert.search.typesense_client import TypesenseClient
from data_server.fixtures import recordings_digest
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
    holds vaults seeded from these very recordings and the staleness check finds no drift
    against the index. ``typesense`` is a client, or a running server (``TypesenseProcess``)
    for which one is made and closed.
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
    # Which recordings the store was seeded from: new ones (a newer checkout) reseed it.
    digest = recordings_digest()
    with VaultStore(db_path) as store:
        if skip_if_current and store.counts().vaults and seeded_from(db_path) == digest:
            report = await check(store, typesense, collection=collection)
            if report.ok:
                return None
        async with offline_http() as http:
            report = await run_pipeline(
                offline_processors(),
                store,
                typesense,
                progress,
                http=http,
                collection=collection,
            )
    if report.ok:
        _marker(db_path).write_text(digest + "\n")
    return report


def _marker(db_path: str | Path) -> Path:
    return Path(f"{db_path}.recordings")


def seeded_from(db_path: str | Path) -> str | None:
    """The digest of the recordings a local store was last seeded from (None: unknown)."""
    marker = _marker(db_path)
    return marker.read_text().strip() if marker.exists() else None
