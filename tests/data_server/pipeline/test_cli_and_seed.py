"""`albert-data pipeline run|check` and seed_local over the full recordings."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from albert.search.typesense_client import TypesenseClient
from data_server.cli import EXIT_BUSY, EXIT_FAILED, EXIT_OK, main
from data_server.fixtures import BEEFY_CHAINS, load, recorded_pool_ids
from data_server.pipeline import seed_local
from data_server.store import VaultStore
from tests.typesense_fixture import TypesenseServer, unique_name


def _full_count() -> int:
    beefy = sum(len(load(f"beefy/vaults_config_{c}.json")) for c in BEEFY_CHAINS)
    yearn = sum(len(load(f"yearn/vaults_{c}.json")["vaults"]) for c in (1, 8453))
    return beefy + yearn + len(recorded_pool_ids())


async def test_seed_local_fills_store_and_index_with_thousands_of_vaults(
    tmp_path: Path,
    index_client: TypesenseClient,
    collection: str,
    typesense_server: TypesenseServer,
) -> None:
    db = tmp_path / "seed.db"
    report = await seed_local(db, index_client, collection=collection)
    assert report is not None and report.ok, report
    expected = _full_count()
    assert expected > 3000
    assert (await index_client.retrieve_collection(collection)).num_documents == expected
    with VaultStore(db) as store:
        counts = store.counts()
        assert counts.vaults == expected
        assert set(counts.by_source) == {"defillama", "beefy", "yearn"}
        assert counts.history_points > 0
    # A current store and index are left alone (here given the server, not a client).
    again = await seed_local(db, typesense_server, collection=collection, skip_if_current=True)
    assert again is None
    # A store seeded from other recordings (an older checkout's) is seeded again, in place.
    _pretend_seeded_from_older_recordings(db)
    reseeded = await seed_local(db, index_client, collection=collection, skip_if_current=True)
    assert reseeded is not None and reseeded.ok and reseeded.upserted == 0
    assert await seed_local(db, index_client, collection=collection, skip_if_current=True) is None


def _pretend_seeded_from_older_recordings(db: Path) -> None:
    Path(f"{db}.recordings").write_text("recordings of an older checkout\n")


def test_cli_pipeline_run_then_check(
    tmp_path: Path, typesense_server: TypesenseServer, capsys: pytest.CaptureFixture[str]
) -> None:
    name = unique_name("vaults_cli")
    common = [
        "--db",
        str(tmp_path / "cli.db"),
        "--typesense-url",
        typesense_server.url,
        "--typesense-key",
        typesense_server.api_key,
        "--collection",
        name,
    ]
    try:
        assert main(["pipeline", "check", *common]) == EXIT_FAILED
        assert "never_published" in capsys.readouterr().out
        assert main(["pipeline", "run", *common, "--offline", "--no-progress"]) == EXIT_OK
        out = capsys.readouterr().out
        assert ": ok in" in out and f"published {_full_count()} documents" in out
        assert main(["pipeline", "check", *common, "--json"]) == EXIT_OK
        assert '"ok": true' in capsys.readouterr().out
    finally:
        httpx.delete(
            f"{typesense_server.url}/collections/{name}",
            headers={"X-TYPESENSE-API-KEY": typesense_server.api_key},
        )


def test_albert_data_run_waits_for_no_one_while_another_run_holds_the_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    with VaultStore(db) as store, store.pipeline_lock() as held:
        assert held
        code = main(["run", "--db", str(db), "--offline", "--no-publish", "--no-progress"])
    assert code == EXIT_BUSY
    assert "holds the store's run lock" in capsys.readouterr().out
    with VaultStore(db) as store:
        assert store.runs() == []
