"""The write store on SQLite and PostgreSQL: migrations, upserts, history, run log, queries."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from data_server.store import (
    MIGRATIONS,
    Migration,
    Publication,
    SourceRun,
    VaultStore,
    migrate,
    migrate_postgres,
    open_store,
)
from data_server.store.sqlite import BUSY_TIMEOUT_MS, WAL_SIZE_LIMIT
from data_server.vaults.model import HistoryPoint, Vault
from tests.data_server.conftest import StoreFactory


def _vault(native: str, *, apy: float = 5.0, protocol: str = "aave-v3", **extra: object) -> Vault:
    fields: dict[str, object] = {
        "id": f"defillama:ethereum:{native}",
        "source": "defillama",
        "name": native.upper(),
        "protocol": protocol,
        "chain": "ethereum",
        "apy": apy,
        "tvl_usd": 1_000_000.0,
        "security_score": 60.0,
        "updated_at": 1_700_000_000,
    }
    fields.update(extra)
    return Vault.model_validate(fields)


def test_migrations_apply_once(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    first = VaultStore(db)
    assert first.applied_migrations == [m.version for m in MIGRATIONS]
    first.close()
    second = VaultStore(db)
    assert second.applied_migrations == []
    second.close()
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]
    conn.close()


def test_new_migration_applies_in_order_and_failed_one_rolls_back(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    assert migrate(conn) == [m.version for m in MIGRATIONS]
    extra = Migration(99, "extra", "CREATE TABLE extra (x INTEGER);", "")
    assert migrate(conn, (*MIGRATIONS, extra)) == [99]
    assert migrate(conn, (*MIGRATIONS, extra)) == []
    broken = Migration(100, "broken", "CREATE TABLE half (x INTEGER); NOT SQL;", "")
    with pytest.raises(sqlite3.Error):
        migrate(conn, (*MIGRATIONS, extra, broken))
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "half" not in tables
    assert 100 not in {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    with pytest.raises(ValueError):
        migrate(conn, (extra, *MIGRATIONS))
    conn.close()


def test_postgres_migrations_apply_once_in_order_and_a_failed_one_rolls_back(
    postgres_database: Callable[[], str],
) -> None:
    import psycopg

    url = postgres_database()
    with open_store(url) as first:
        assert first.applied_migrations == [m.version for m in MIGRATIONS]
    with open_store(url) as second:
        assert second.applied_migrations == []
    with psycopg.connect(url, autocommit=True) as conn:
        extra = Migration(99, "extra", "", "CREATE TABLE extra (x INTEGER);")
        assert migrate_postgres(conn, (*MIGRATIONS, extra)) == [99]
        assert migrate_postgres(conn, (*MIGRATIONS, extra)) == []
        broken = Migration(100, "broken", "", "CREATE TABLE half (x INTEGER); NOT SQL;")
        with pytest.raises(psycopg.Error):
            migrate_postgres(conn, (*MIGRATIONS, extra, broken))
        assert conn.execute("SELECT to_regclass('half')").fetchone() == (None,)
        versions = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        assert 99 in versions and 100 not in versions
        # A year of daily points per vault goes to one of the history table's partitions.
        partitions = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'history'::regclass"
        ).fetchone()
        assert partitions == (16,)


def test_upsert_is_idempotent_and_tracks_revisions(new_store: StoreFactory) -> None:
    with new_store() as store:
        counts = store.upsert_vaults([_vault("a"), _vault("b")])
        assert (counts.inserted, counts.updated, counts.unchanged) == (2, 0, 0)
        rev = store.revision()
        again = store.upsert_vaults([_vault("a"), _vault("b")])
        assert (again.inserted, again.updated, again.unchanged) == (0, 0, 2)
        assert store.revision() == rev
        changed = store.upsert_vaults([_vault("a", apy=7.5), _vault("b")])
        assert (changed.inserted, changed.updated, changed.unchanged) == (0, 1, 1)
        assert store.revision() == rev + 1
        assert store.changed_since(rev) == 1
        assert store.counts().vaults == 2
        stored = store.get_vault("defillama:ethereum:a")
        assert stored is not None and stored.apy == 7.5
        assert store.get_vault("nope") is None
        assert [v.id for v in store.get_vaults(["defillama:ethereum:b", "x"])] == [
            "defillama:ethereum:b"
        ]


def test_upsert_counts_each_batch_against_every_stored_row_it_can_match(
    new_store: StoreFactory,
) -> None:
    # A batch reads back only the stored rows in its id range; ids interleaved with those of
    # other batches, and duplicates inside one batch, must still be counted right.
    with new_store() as store:
        store.upsert_vaults([_vault("b"), _vault("d")])
        store.upsert_vaults([_vault("a", id="beefy:ethereum:a", source="beefy")])
        counts = store.upsert_vaults([_vault("a"), _vault("d", apy=9.0), _vault("e"), _vault("e")])
        assert (counts.inserted, counts.updated, counts.unchanged) == (2, 1, 1)
        again = store.upsert_vaults([_vault("b"), _vault("d", apy=9.0)])
        assert (again.inserted, again.updated, again.unchanged) == (0, 0, 2)
        assert store.upsert_vaults([]) == store.upsert_vaults([])
        assert store.counts().by_source == {"beefy": 1, "defillama": 4}


def test_fingerprint_changes_with_content(new_store: StoreFactory) -> None:
    with new_store() as store:
        store.upsert_vaults([_vault("a"), _vault("b")])
        before = store.fingerprint()
        store.upsert_vaults([_vault("b")])
        assert store.fingerprint() == before
        store.upsert_vaults([_vault("b", apy=9.0, updated_at=1_800_000_000)])
        after = store.fingerprint()
        assert after.checksum != before.checksum
        assert after.count == 2 and after.newest_updated_at == 1_800_000_000


def test_history_is_keyed_by_vault_and_timestamp(new_store: StoreFactory) -> None:
    with new_store() as store:
        vid = "defillama:ethereum:a"
        points = [HistoryPoint(vault_id=vid, timestamp=86_400 * d, apy=float(d)) for d in range(5)]
        store.upsert_history(points)
        store.upsert_history([HistoryPoint(vault_id=vid, timestamp=86_400 * 2, apy=42.0)])
        history = store.history(vid)
        assert [p.timestamp for p in history] == [86_400 * d for d in range(5)]
        assert history[2].apy == 42.0
        assert [p.apy for p in store.history(vid, limit=2)] == [3.0, 4.0]
        assert len(store.history(vid, since=86_400 * 1, until=86_400 * 3)) == 3
        assert store.counts().history_points == 5


def test_run_log_records_sources_and_publication(new_store: StoreFactory) -> None:
    with new_store() as store:
        run_id = store.start_run()
        store.record_source(run_id, SourceRun(source="beefy", ok=True, vaults=3, inserted=3))
        store.record_source(run_id, SourceRun(source="yearn", ok=False, error="boom"))
        pub = store.record_publication(
            Publication(
                run_id=run_id,
                collection="vaults",
                published_at=1.0,
                count=3,
                newest_updated_at=5,
                revision=1,
                checksum="abc",
                sample=[{"id": "x"}],
            )
        )
        store.finish_run(run_id, "partial")
        run = store.get_run(run_id)
        assert run is not None and run.status == "partial" and run.finished_at
        assert {s.source: s.ok for s in run.sources} == {"beefy": True, "yearn": False}
        assert run.sources[1].error == "boom"
        assert run.publication is not None and run.publication.id == pub.id
        assert store.last_publication("vaults") == pub
        assert store.runs()[0].id == run_id


def test_protocols_summary(new_store: StoreFactory) -> None:
    with new_store() as store:
        store.upsert_vaults(
            [
                _vault("a", apy=2.0),
                _vault("b", apy=4.0),
                _vault("c", apy=10.0, protocol="curve-dex", tvl_usd=5e6),
            ]
        )
        summary = {s.protocol: s for s in store.protocols_summary()}
        assert summary["aave-v3"].vaults == 2
        assert summary["aave-v3"].median_apy == 3.0
        assert summary["curve-dex"].tvl_usd == 5e6
        assert store.protocols_summary()[0].protocol == "curve-dex"
        assert [s.protocol for s in store.protocols_summary(protocol="AAVE-V3")] == ["aave-v3"]


def test_a_replaced_row_is_kept_until_a_publish_no_longer_needs_it(
    new_store: StoreFactory,
) -> None:
    with new_store() as store:
        store.publish_begins()  # documents of any row may be in the index
        rows: dict[str, int] = {}
        store.upsert_vaults([_vault("a"), _vault("b"), _vault("c")], row_revisions=rows)
        first_a = store.published_records(["defillama:ethereum:a"])[0][1]
        assert rows == dict.fromkeys(
            ("defillama:ethereum:a", "defillama:ethereum:b", "defillama:ethereum:c"), 1
        )
        # Revision 2 changes a and b; c is unchanged and keeps its row and revision.
        store.upsert_vaults(
            [_vault("a", apy=6.0), _vault("b", apy=6.0), _vault("c")], row_revisions=rows
        )
        assert rows == {
            "defillama:ethereum:a": 2,
            "defillama:ethereum:b": 2,
            "defillama:ethereum:c": 1,
        }
        # A vault written twice under one revision: its first record is kept too (a
        # publish may have sent it), and the new one takes a revision of its own.
        store.upsert_vaults([_vault("b", apy=7.0)], revision=2, row_revisions=rows)
        assert rows["defillama:ethereum:b"] == 3
        a, b, c = (f"defillama:ethereum:{n}" for n in "abc")
        keys = [(a, 1), (a, 2), (b, 1), (b, 2), (b, 3), (c, 1), (c, 2)]
        found = store.records_at(keys)
        assert sorted(found) == keys[:6]
        assert found[("defillama:ethereum:a", 1)] == first_a
        assert Vault.model_validate_json(found[("defillama:ethereum:a", 2)]).apy == 6.0
        assert Vault.model_validate_json(found[(b, 2)]).apy == 6.0
        assert Vault.model_validate_json(found[(b, 3)]).apy == 7.0
        # A publish that read a at revision 1 (a changed after it read it) keeps that row.
        published = {
            "defillama:ethereum:a": 1,
            "defillama:ethereum:b": 3,
            "defillama:ethereum:c": 1,
        }
        assert store.drop_superseded(published) == 2
        assert sorted(store.records_at(keys)) == [keys[0], keys[1], keys[4], keys[5]]
        assert store.drop_superseded({}) == 1
        assert sorted(store.records_at(keys)) == [keys[1], keys[4], keys[5]]


def test_a_record_is_never_replaced_under_the_revision_it_was_written_at(
    new_store: StoreFactory,
) -> None:
    vid = "defillama:ethereum:a"

    def apy_at(store: VaultStore, *revisions: int) -> list[float]:
        records = store.records_at([(vid, r) for r in revisions])
        return [json.loads(records[(vid, r)])["apy"] for r in revisions]

    with new_store() as store:
        store.publish_begins()  # documents of any row may be in the index
        rows: dict[str, int] = {}
        store.upsert_vaults([_vault("a", apy=1.0), _vault("b")], revision=5, row_revisions=rows)
        assert rows == {vid: 5, "defillama:ethereum:b": 5}
        # The same revision writes `a` again, changed: a publish may have sent its first
        # record already, so that one stays readable at 5, and the new one is not at 5.
        store.upsert_vaults([_vault("a", apy=2.0)], revision=5, row_revisions=rows)
        assert rows[vid] == 6
        assert apy_at(store, 5, 6) == [1.0, 2.0]
        # Nor under an explicit revision some record of it already has.
        store.upsert_vaults([_vault("a", apy=3.0)], revision=5, row_revisions=rows)
        assert rows[vid] == 7 and apy_at(store, 5, 6, 7) == [1.0, 2.0, 3.0]
        assert store.revision() == 7
        # A changed write at a new revision takes that revision, as before.
        store.upsert_vaults([_vault("a", apy=4.0)], revision=9, row_revisions=rows)
        assert rows[vid] == 9 and apy_at(store, 5, 6, 7, 9) == [1.0, 2.0, 3.0, 4.0]
        # One batch holding a vault twice commits its last record only, at the batch's
        # revision; the record before the batch is kept.
        counts = store.upsert_vaults(
            [_vault("c", apy=1.0), _vault("c", apy=2.0), _vault("a", apy=5.0)],
            revision=10,
            row_revisions=rows,
        )
        assert (counts.inserted, counts.updated) == (1, 2)
        assert rows[vid] == 10 and rows["defillama:ethereum:c"] == 10
        assert apy_at(store, 9, 10) == [4.0, 5.0]
        stored = store.get_vault("defillama:ethereum:c")
        assert stored is not None and stored.apy == 2.0


def _superseded_keys(store: VaultStore) -> list[tuple[str, int]]:
    rows = store._rows("SELECT vault_id, revision FROM superseded_records ORDER BY 1, 2")
    return [(row[0], row[1]) for row in rows]


def test_replaced_rows_are_kept_only_where_an_index_may_hold_a_document_of_them(
    new_store: StoreFactory,
) -> None:
    a, b = "defillama:ethereum:a", "defillama:ethereum:b"
    with new_store() as store:
        # Never published: no index can hold a document of any row, so nothing is kept.
        store.upsert_vaults([_vault("a", apy=1.0), _vault("b", apy=1.0)])
        store.upsert_vaults([_vault("a", apy=2.0), _vault("b", apy=2.0)])
        assert _superseded_keys(store) == []
        # A publish begins: from then on every replaced row is kept, whatever the outcome.
        store.publish_begins()
        store.upsert_vaults([_vault("a", apy=3.0)])
        assert _superseded_keys(store) == [(a, 2)]
        # It succeeds having sent a at 3 and b at 2, and closes: rows it could have read
        # (revision 3 and below) are kept when replaced, rows written after it are not.
        assert store.drop_superseded({a: 3, b: 2}) == 1
        store.upsert_vaults([_vault("a", apy=4.0)])
        assert _superseded_keys(store) == [(a, 3)]
        store.upsert_vaults([_vault("a", apy=5.0), _vault("b", apy=5.0)])
        assert _superseded_keys(store) == [(a, 3), (b, 2)]
        # A publish that fails after this leaves its state open: everything is kept again.
        store.publish_begins()
        store.upsert_vaults([_vault("a", apy=6.0)])
        assert _superseded_keys(store) == [(a, 3), (a, 5), (b, 2)]


@pytest.mark.parametrize("history", ["none", "published", "superseded"])
def test_a_store_from_before_the_publish_state_is_taken_as_open_if_it_may_be_published(
    tmp_path: Path, history: str
) -> None:
    db = tmp_path / "s.db"
    conn = sqlite3.connect(db, isolation_level=None)
    migrate(conn, MIGRATIONS[:4])
    if history == "published":
        conn.execute(
            "INSERT INTO publications (collection, published_at, count, revision, checksum)"
            " VALUES ('vaults', 1, 0, 0, '')"
        )
    if history == "superseded":
        conn.execute("INSERT INTO superseded_records VALUES ('x', 1, '{}')")
    conn.close()
    with VaultStore(db) as store:
        assert store.applied_migrations[0] == 5
        first: dict[str, int] = {}
        store.upsert_vaults([_vault("a", apy=1.0)], row_revisions=first)
        store.upsert_vaults([_vault("a", apy=2.0)])
        kept = ("defillama:ethereum:a", first["defillama:ethereum:a"]) in _superseded_keys(store)
        assert kept is (history != "none")


def _rows_in_database_file(db: Path, copy: Path) -> int:
    # The database file alone, without its WAL: what checkpoints have copied into it.
    copy.write_bytes(db.read_bytes())
    conn = sqlite3.connect(copy)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM vaults").fetchone()[0])
    except sqlite3.OperationalError:  # not even the tables yet
        return 0
    finally:
        conn.close()


def test_checkpoints_deferred_keeps_a_bulk_write_in_the_wal_until_checkpoint(
    tmp_path: Path,
) -> None:
    # ~8 MB of records: more than the 1,000 WAL pages after which SQLite checkpoints.
    vaults = [_vault(f"v{i:04d}", name="x" * 5000) for i in range(1500)]
    with VaultStore(tmp_path / "plain.db") as plain:
        plain.upsert_vaults(vaults)
        assert _rows_in_database_file(tmp_path / "plain.db", tmp_path / "copy.db") > 0
    db = tmp_path / "store.db"
    with VaultStore(db) as store:
        with store.checkpoints_deferred():
            for start in range(0, len(vaults), 500):
                store.upsert_vaults(vaults[start : start + 500])
            assert _rows_in_database_file(db, tmp_path / "copy.db") == 0
            store.checkpoint()
            assert _rows_in_database_file(db, tmp_path / "copy.db") == 1500
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert len(store.get_vaults([v.id for v in vaults])) == 1500


def test_the_checkpoint_after_a_deferred_bulk_write_empties_the_wal(tmp_path: Path) -> None:
    # ~8 MB of records in three commits, checkpointed once, as a pipeline run writes.
    vaults = [_vault(f"v{i:04d}", name="x" * 5000) for i in range(1500)]
    db = tmp_path / "store.db"
    wal = tmp_path / "store.db-wal"
    with VaultStore(db) as store:
        with store.checkpoints_deferred():
            for start in range(0, len(vaults), 500):
                store.upsert_vaults(vaults[start : start + 500])
            grown = wal.stat().st_size
            store.checkpoint()
            assert wal.stat().st_size == 0
            run_id = store.start_run()  # the run's own end, in a pipeline run
        assert grown > 2 * WAL_SIZE_LIMIT
        store.finish_run(run_id, "ok")
        assert wal.stat().st_size <= WAL_SIZE_LIMIT
        assert _rows_in_database_file(db, tmp_path / "copy.db") == 1500
        assert len(store.get_vaults([v.id for v in vaults])) == 1500


def test_a_reader_on_the_wal_keeps_it_and_the_checkpoint_does_not_wait(tmp_path: Path) -> None:
    vaults = [_vault(f"v{i:04d}", name="x" * 5000) for i in range(1500)]
    db = tmp_path / "store.db"
    wal = tmp_path / "store.db-wal"
    with VaultStore(db) as store:
        store.upsert_vaults(vaults[:1])
        reader = sqlite3.connect(db, isolation_level=None)
        try:
            with store.checkpoints_deferred():
                store.upsert_vaults(vaults[1:750])
                # A reader holding a snapshot with part of the WAL in it, as a search does.
                reader.execute("BEGIN")
                assert reader.execute("SELECT COUNT(*) FROM vaults").fetchone()[0] == 750
                store.upsert_vaults(vaults[750:])
                grown = wal.stat().st_size
                started = time.monotonic()
                store.checkpoint()
                # Not the 5 s busy timeout: the reader is left alone, and so is the file.
                assert time.monotonic() - started < BUSY_TIMEOUT_MS / 2000
                assert wal.stat().st_size == grown
                reader.execute("COMMIT")
                store.checkpoint()
                assert wal.stat().st_size == 0
        finally:
            reader.close()
        assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
        assert len(store.get_vaults([v.id for v in vaults])) == 1500


def test_one_pipeline_run_at_a_time_across_stores_of_one_database(
    new_store: StoreFactory,
) -> None:
    # Two opens of one database stand for two replicas (or a replica and `albert-data run`).
    with new_store() as first, new_store() as second:
        with first.pipeline_lock() as held:
            assert held
            with second.pipeline_lock() as other:
                assert not other
        with second.pipeline_lock() as after:
            assert after


def test_removed_vaults_keep_their_history_and_revisions_never_go_back(
    new_store: StoreFactory,
) -> None:
    with new_store() as store:
        store.upsert_vaults([_vault("a"), _vault("b")])
        store.upsert_history([HistoryPoint(vault_id="defillama:ethereum:b", timestamp=1, apy=1.0)])
        store.publish_begins()  # an index may hold documents of both
        store.upsert_vaults([_vault("b", apy=9.0)])
        top = store.revision()
        assert store.remove_vaults(["defillama:ethereum:b", "nope"]) == 1
        assert store.vault_ids() == ["defillama:ethereum:a"]
        assert len(store.history("defillama:ethereum:b")) == 1
        # The removed row's record stays readable while a document may show it.
        assert ("defillama:ethereum:b", top) in store.records_at([("defillama:ethereum:b", top)])
        rows: dict[str, int] = {}
        store.upsert_vaults([_vault("c")], row_revisions=rows)
        assert rows["defillama:ethereum:c"] > top
        assert store.vault_ids(since_revision=top) == ["defillama:ethereum:c"]
        assert store.vault_ids(source="beefy") == []
