"""The local runtime's slice of the Workers API: ids, SQL cursors, alarms, stand-in modules."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import ClassVar

import pytest

from miniflare import install_shims
from miniflare.config import load_config, parse_dev_vars
from miniflare.objects import DurableObjectNamespace, ObjectHost
from miniflare.runtime import LocalRuntime

PROJECT = Path(__file__).resolve().parents[2]


class Counter:
    """A tiny Durable Object used to drive the runtime."""

    fired: ClassVar[list[str]] = []

    def __init__(self, ctx, env) -> None:
        self.ctx = ctx
        ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS c (n INTEGER)")

    async def alarm(self) -> None:
        Counter.fired.append(self.ctx.id.toString())
        self.ctx.storage.sql.exec("INSERT INTO c VALUES (1)")


def _host(tmp_path: Path) -> tuple[LocalRuntime, ObjectHost]:
    runtime = LocalRuntime(load_config(PROJECT), tmp_path)
    runtime.env = None  # type: ignore[assignment]
    return runtime, ObjectHost(runtime, "Counter", Counter, tmp_path / "do")


def test_ids_from_the_same_name_are_equal_and_distinct_per_name(tmp_path: Path) -> None:
    _, host = _host(tmp_path)
    namespace = DurableObjectNamespace(host)
    a, b = namespace.idFromName("alice"), namespace.idFromName("alice")
    assert a.equals(b) and len(a.toString()) == 64
    assert not a.equals(namespace.idFromName("bob"))
    assert namespace.idFromString(a.toString()).equals(a)
    with pytest.raises(TypeError):
        namespace.idFromString("nope")


def test_one_instance_per_id_and_one_sqlite_file_each(tmp_path: Path) -> None:
    _, host = _host(tmp_path)
    namespace = DurableObjectNamespace(host)
    alice = namespace.idFromName("alice")
    assert host.instance(alice) is host.instance(alice)
    host.instance(namespace.idFromName("bob"))
    assert len(list((tmp_path / "do" / "Counter").glob("*.sqlite"))) == 2


def test_sql_cursor_has_the_platform_surface(tmp_path: Path) -> None:
    _, host = _host(tmp_path)
    sql = host.state(DurableObjectNamespace(host).idFromName("x")).storage.sql
    sql.exec("CREATE TABLE t (a INTEGER, b TEXT)")
    write = sql.exec("INSERT INTO t VALUES (?, ?), (?, ?)", 1, "one", 2, None)
    assert write.rowsWritten == 2
    cursor = sql.exec("SELECT a, b FROM t ORDER BY a")
    assert cursor.columnNames == ["a", "b"]
    assert cursor.toArray().to_py() == [{"a": 1, "b": "one"}, {"a": 2, "b": None}]
    assert sql.exec("SELECT COUNT(*) AS n FROM t").one() == {"n": 2}
    with pytest.raises(ValueError):
        sql.exec("SELECT a FROM t").one()
    with pytest.raises(NotImplementedError):
        sql.exec("BEGIN")


def test_schema_statements_in_and_out_of_a_transaction(tmp_path: Path) -> None:
    # Outside a transaction a schema statement skips the statement cache; inside one it
    # stays part of the transaction, rolled back with it.
    _, host = _host(tmp_path)
    storage = host.state(DurableObjectNamespace(host).idFromName("x")).storage
    sql = storage.sql
    sql.exec("CREATE TABLE t (a INTEGER)")
    sql.exec("CREATE INDEX t_by_a ON t (a)")
    assert sql.exec("INSERT INTO t VALUES (1)").rowsWritten == 1
    with pytest.raises(sqlite3.OperationalError, match="already exists"):
        sql.exec("CREATE TABLE t (a INTEGER)")
    with pytest.raises(sqlite3.ProgrammingError, match="one statement"):
        sql.exec("CREATE TABLE v (a INTEGER); CREATE TABLE w (a INTEGER)")
    sql.exec("CREATE TRIGGER t_seen AFTER INSERT ON t BEGIN SELECT ';'; SELECT 1; END; -- a note")

    def create_then_fail() -> None:
        sql.exec("CREATE TABLE u (b TEXT)")
        sql.exec("ALTER TABLE t ADD COLUMN c TEXT")
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError, match="undo"):
        storage.transactionSync(create_then_fail)
    names = {r["name"] for r in sql.exec("SELECT name FROM sqlite_master").toArray()}
    assert not names & {"u", "v", "w"} and {"t", "t_by_a", "t_seen"} <= names
    assert sql.exec("SELECT * FROM t").columnNames == ["a"]
    sql.exec("DROP INDEX t_by_a")
    assert sql.exec("SELECT a FROM t").one() == {"a": 1}


def test_unimplemented_platform_features_say_so(tmp_path: Path) -> None:
    _, host = _host(tmp_path)
    ctx = host.state(DurableObjectNamespace(host).idFromName("x"))
    with pytest.raises(NotImplementedError, match=r"ctx\.blockConcurrencyWhile"):
        ctx.blockConcurrencyWhile  # noqa: B018
    with pytest.raises(NotImplementedError, match=r"ctx\.storage\.put"):
        ctx.storage.put  # noqa: B018
    install_shims()
    import js
    import workers

    with pytest.raises(NotImplementedError, match=r"workers\.fetch"):
        workers.fetch  # noqa: B018
    with pytest.raises(NotImplementedError, match=r"js\.fetch"):
        js.fetch  # noqa: B018


async def test_alarms_fire_and_survive_a_restart(tmp_path: Path) -> None:
    Counter.fired = []
    _, host = _host(tmp_path)
    object_id = DurableObjectNamespace(host).idFromName("alarmed")
    storage = host.state(object_id).storage
    await storage.setAlarm(time.time() * 1000 + 50)
    assert await storage.getAlarm() is not None
    for _ in range(100):
        if Counter.fired:
            break
        await asyncio.sleep(0.02)
    assert Counter.fired == [object_id.toString()]
    assert await storage.getAlarm() is None

    # An alarm set before a shutdown fires after the next start.
    await storage.setAlarm(time.time() * 1000 + 100)
    host.close()
    Counter.fired = []
    _, fresh = _host(tmp_path)
    fresh.restore_alarms()
    for _ in range(100):
        if Counter.fired:
            break
        await asyncio.sleep(0.02)
    assert Counter.fired == [object_id.toString()]
    rows = fresh.state(object_id).storage.sql.exec("SELECT COUNT(*) AS n FROM c").one()
    assert rows["n"] == 2
    fresh.close()


def test_dev_vars_and_wrangler_config() -> None:
    assert parse_dev_vars("# c\nA=1\nB = 'two'\n\nC=\"x=y\"\n") == {
        "A": "1",
        "B": "two",
        "C": "x=y",
    }
    config = load_config(PROJECT)
    assert config.main == "src/entry.py"
    assert [(b.name, b.class_name) for b in config.durable_objects] == [
        ("CHAT", "ChatDurableObject"),
        ("LIMITER", "LimiterDurableObject"),
    ]
    assert config.assets_dir == (PROJECT / "web").resolve()
