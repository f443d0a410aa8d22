"""One runner for every namespace of an object's schema; an object of the first layout upgrades."""

from __future__ import annotations

from pathlib import Path

import pytest

from albert.analytics.service import ANALYTICS_SCHEMA, AnalyticsService
from albert.cloudflare.sql import WorkersSql
from albert.mcp.config_store import MCP_MIGRATIONS, MCP_SCHEMA
from albert.storage.meta import CLIENT_ID, ObjectMeta
from albert.storage.migrations import MIGRATIONS, THREADS, Migrations, migrate
from miniflare.storage import SqlStorage

CLIENT = "c_" + "a" * 22


def tables(sql: WorkersSql) -> set[str]:
    rows = sql.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {r["name"] for r in rows}


def test_each_namespace_keeps_its_own_record(tmp_path: Path) -> None:
    sql = WorkersSql(SqlStorage(tmp_path / "o.sqlite"))
    assert migrate(sql, THREADS) == len(MIGRATIONS)
    assert migrate(sql, MCP_SCHEMA) == len(MCP_MIGRATIONS)
    extra = Migrations("extra", "extra_schema_migrations", [("CREATE TABLE extra (x INT)",)])
    assert migrate(sql, extra) == 1
    assert migrate(sql, extra) == 1  # recorded: not run again (it would fail)
    counts = {
        t: sql.execute(f"SELECT COUNT(*) AS n FROM {t}")[0]["n"]
        for t in ("schema_migrations", "mcp_schema_migrations", "extra_schema_migrations")
    }
    assert counts == {
        "schema_migrations": len(MIGRATIONS),
        "mcp_schema_migrations": len(MCP_MIGRATIONS),
        "extra_schema_migrations": 1,
    }


def test_a_record_table_must_be_a_plain_name() -> None:
    with pytest.raises(ValueError, match="not a table name"):
        Migrations("bad", "x; DROP TABLE threads", [])


def test_an_object_of_the_first_layout_keeps_its_data_and_its_client(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    old = WorkersSql(SqlStorage(path))
    migrate(old, THREADS)
    migrate(old, MCP_SCHEMA)
    # What the first deployments wrote: the client id in a table of the analytics' own.
    old.execute(
        "CREATE TABLE analytics_identity "
        "(id INTEGER PRIMARY KEY CHECK (id = 1), client_id TEXT NOT NULL)"
    )
    old.execute("INSERT INTO analytics_identity (id, client_id) VALUES (1, ?)", CLIENT)
    ObjectMeta(old).set("tenant", "acme")

    woken = WorkersSql(SqlStorage(path))
    analytics = AnalyticsService(log_path=str(tmp_path / "a.jsonl"), sql=woken)
    assert analytics.client_id == CLIENT
    meta = ObjectMeta(woken)
    assert (meta.get(CLIENT_ID), meta.get("tenant")) == (CLIENT, "acme")
    assert "analytics_identity" not in tables(woken)
    assert migrate(woken, ANALYTICS_SCHEMA) == 1
