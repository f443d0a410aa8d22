"""`albert-data pipeline run|check` and seed_local over the full recordings."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from albert.search.typesense_client import TypesenseClient
from data_server.cli import EXIT_BUSY, EXIT_FAILED, EXIT_OK, main
from data_server.fixtures import BEEFY_CHAINS, load
from data_server.pipeline import seed_local
from data_server.store import VaultStore
from tests.typesense_fixture import TypesenseServer, unique_name


def _full_count() -> int:
    beefy = sum(len(load(f"beefy/vaults_config_{c}.json")) for c in BEEFY_CHAINS)
    yearn = sum(len(load(f"yearn/vaults_{c}.json")["vaults"]) for c in (1, 8453))
    pools = {r["poolId"] for r in load("defillama/pools_camel_30_2025-12-24_timwf.json")["pools"]}
    pools |= {r["pool"] for r in load("defillama/pools_enriched_snake_2025-08-31_PaulApivat.json")}
    return beefy + yearn + len(pools)


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
