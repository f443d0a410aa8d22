"""Each message's JSON is stored when it is written: after every kind of write, a page read
from the stored JSON equals the models' own serialisation, and older objects are backfilled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from albert.cloudflare.sql import WorkersSql
from albert.protocol.http import Message, ToolCallRecord
from albert.storage.migrations import (
    MESSAGE_WIRE_BACKFILL,
    MIGRATIONS,
    THREADS,
    Migrations,
    migrate,
)
from albert.storage.threads import ThreadStore
from albert.storage.transfer import delete_threads, export_threads, import_threads
from miniflare import install_shims
from miniflare.storage import SqlStorage
from tests.albert.storage.test_threads import TRICKY_TEXTS as TEXTS
from tests.albert.storage.test_threads import page_json

install_shims()

META: list[dict[str, Any] | None] = [
    None,
    {},
    {"steps": 2, "usage": {"input_tokens": 10, "output_tokens": 3}},
    {"arguments": {"q": 'é\n"x"'}, "duration_ms": 12.5, "truncated": False, "n": None},
    {"nested": [1, 2.5, "three", {"four": [True, False]}], "big": 2**53 + 1},
]


class StepClock:
    def __init__(self, start: int = 1_000) -> None:
        self.t = start

    def now_ms(self) -> int:
        self.t += 1
        return self.t

    def monotonic(self) -> float:
        return self.t / 1000


def _sql(path: Path) -> WorkersSql:
    return WorkersSql(SqlStorage(path))


@pytest.fixture
def sql(tmp_path: Path) -> WorkersSql:
    sql = _sql(tmp_path / "object.sqlite")
    migrate(sql, THREADS)
    return sql


def _page(store: ThreadStore, thread_id: str) -> list[dict[str, Any]]:
    text, count, cursor = page_json(store, thread_id, 1000)
    assert cursor is None
    page = json.loads(text)
    assert count == len(page)
    return page


def assert_page_is_the_models(store: ThreadStore, thread_id: str) -> None:
    """The stored-JSON page equals the models read back: same values, same key order."""
    page = _page(store, thread_id)
    models, _ = store.list_messages(thread_id, 1000)
    expected = [m.model_dump(mode="json") for m in models]
    assert page == expected
    assert [list(m) for m in page] == [list(Message.model_fields)] * len(page)
    assert all(Message.model_validate(m) for m in page)


def assert_every_row_stores_its_json(sql: WorkersSql) -> None:
    rows = sql.execute(
        "SELECT m.*, w.wire FROM messages AS m LEFT JOIN message_wire AS w USING (seq) ORDER BY seq"
    )
    assert rows, "nothing written"
    for row in rows:
        assert row["wire"] is not None, row["id"]
        stored = json.loads(row["wire"])
        assert stored["id"] == row["id"] and stored["thread_id"] == row["thread_id"]
        assert stored["content"] == row["content"] and stored["status"] == row["status"]
    # No JSON outlives its message.
    orphans = sql.execute(
        "SELECT COUNT(*) AS n FROM message_wire WHERE seq NOT IN (SELECT seq FROM messages)"
    )
    assert orphans[0]["n"] == 0


def _fill(store: ThreadStore, thread_id: str, count: int) -> list[Message]:
    written = []
    for i in range(count):
        role = ("user", "assistant", "tool", "assistant")[i % 4]
        calls = (
            [ToolCallRecord(id=f"c{i}", name="search", arguments='{"q": "é\\n\\"x\\""}')]
            if role == "assistant" and i % 8 == 1
            else None
        )
        written.append(
            store.add_message(
                message_id=f"{thread_id}-m{i}",
                thread_id=thread_id,
                turn_id=f"turn{i // 4}",
                role=role,
                content=TEXTS[i % len(TEXTS)],
                tool_calls=calls,
                tool_call_id=f"c{i - 1}" if role == "tool" else None,
                name="search" if role == "tool" else None,
                status=("complete", "incomplete", "error", "cancelled")[i % 4],  # type: ignore[arg-type]
                finish_reason="stop" if i % 4 == 3 else None,
                meta=META[i % len(META)],
            )
        )
    return written


def test_a_written_message_stores_the_models_own_json(sql: WorkersSql) -> None:
    store = ThreadStore(sql, StepClock())
    store.create_thread("t", "chat")
    written = _fill(store, "t", 21)
    stored = [r["wire"] for r in sql.execute("SELECT wire FROM message_wire ORDER BY seq")]
    # Byte for byte what the model serialises: the API sends the model's own JSON.
    assert stored == [m.model_dump_json() for m in written]
    assert json.loads(page_json(store, "t", 1000)[0]) == [
        m.model_dump(mode="json") for m in written
    ]
    assert_page_is_the_models(store, "t")


def test_updating_a_message_rewrites_its_json(sql: WorkersSql) -> None:
    store = ThreadStore(sql, StepClock())
    store.create_thread("t", "chat")
    _fill(store, "t", 6)
    calls = [ToolCallRecord(id="k", name="analyze_token", arguments='{"s":"PEPE"}')]
    store.update_message(
        "t-m3",
        content='final "answer"\n🚀',
        status="complete",
        finish_reason="stop",
        tool_calls=calls,
        meta={"steps": 3, "usage": {"input_tokens": 1}},
    )
    store.update_message("t-m1", content="", status="cancelled")  # tool calls and meta cleared
    store.update_message("no-such-message", content="x", status="complete")  # no row: no-op
    page = {m["id"]: m for m in _page(store, "t")}
    assert page["t-m3"]["content"] == 'final "answer"\n🚀'
    assert page["t-m3"]["tool_calls"] == [c.model_dump() for c in calls]
    assert page["t-m3"]["meta"] == {"steps": 3, "usage": {"input_tokens": 1}}
    assert page["t-m1"]["tool_calls"] == [] and page["t-m1"]["meta"] == {}
    assert page["t-m1"]["status"] == "cancelled"
    assert_page_is_the_models(store, "t")
    assert_every_row_stores_its_json(sql)


def test_an_update_given_the_written_message_stores_what_one_read_back_stores(
    tmp_path: Path,
) -> None:
    """`update_message(..., written=...)` skips reading the message's identity: the rows,
    their JSON and a deleted message's absence are the same as when it is read."""
    dumps = []
    for name, pass_written in (("read", False), ("given", True)):
        sql = _sql(tmp_path / f"{name}.sqlite")
        migrate(sql, THREADS)
        store = ThreadStore(sql, StepClock())
        store.create_thread("t", "chat")
        written = _fill(store, "t", 6)
        for message in written:
            store.update_message(
                message.id,
                content=f'{message.content} "done"\n🚀',
                status="complete",
                finish_reason="stop",
                meta={"steps": 2, "usage": {"input_tokens": 4}},
                written=message if pass_written else None,
            )
        gone = store.add_message(
            message_id="gone", thread_id="t", turn_id="x", role="assistant", content="a"
        )
        sql.execute(
            "DELETE FROM message_wire WHERE seq = (SELECT seq FROM messages WHERE id = ?)", "gone"
        )
        sql.execute("DELETE FROM messages WHERE id = ?", "gone")
        store.update_message(
            "gone", content="b", status="complete", written=gone if pass_written else None
        )
        assert_page_is_the_models(store, "t")
        assert_every_row_stores_its_json(sql)
        dumps.append(
            [
                sql.execute("SELECT * FROM messages ORDER BY seq"),
                sql.execute("SELECT * FROM message_wire ORDER BY seq"),
                sql.execute("SELECT * FROM threads"),
            ]
        )
    assert dumps[0] == dumps[1]
    assert not any(r["id"] == "gone" for r in dumps[1][0])


def test_thread_writes_leave_message_json_in_step(sql: WorkersSql) -> None:
    store = ThreadStore(sql, StepClock())
    store.create_thread("t", "chat")
    store.create_thread("u", "other")
    _fill(store, "t", 5)
    _fill(store, "u", 3)
    store.rename_thread("t", "renamed")
    store.touch("t")
    store.delete_thread("u")
    assert_page_is_the_models(store, "t")
    assert_every_row_stores_its_json(sql)
    assert sql.execute("SELECT COUNT(*) AS n FROM messages WHERE thread_id = 'u'")[0]["n"] == 0


def test_moved_threads_store_json_with_the_ids_they_get_here(tmp_path: Path) -> None:
    source = _sql(tmp_path / "anonymous.sqlite")
    target = _sql(tmp_path / "user.sqlite")
    for sql in (source, target):
        migrate(sql, THREADS)
    old, new = ThreadStore(source, StepClock()), ThreadStore(target, StepClock(start=90_000))
    old.create_thread("t", "moved")
    _fill(old, "t", 9)
    # The user's object already has a different thread and message under the same ids.
    new.create_thread("t", "mine")
    new.add_message(message_id="t-m0", thread_id="t", turn_id="x", role="user", content="mine")
    exported = export_threads(source)
    import_threads(target, exported, "anonymous")
    import_threads(target, exported, "anonymous")  # repeated: the same rows, not doubled
    assert_every_row_stores_its_json(target)
    moved = [r["id"] for r in target.execute("SELECT id FROM threads WHERE id != 't'")]
    assert len(moved) == 1
    page = _page(new, moved[0])
    assert len(page) == 9 and {m["thread_id"] for m in page} == {moved[0]}
    assert page[0]["id"] != "t-m0"  # took another id here, and its JSON says so
    assert_page_is_the_models(new, moved[0])
    assert_page_is_the_models(new, "t")
    delete_threads(source)
    assert export_threads(source).messages == []


def _old_layout(path: Path) -> WorkersSql:
    """An object as deployed before messages stored their JSON."""
    sql = _sql(path)
    assert migrate(sql, Migrations("threads", "schema_migrations", MIGRATIONS[:4])) == 4
    return sql


def _old_insert(sql: WorkersSql, seq: int, **columns: Any) -> None:
    row = {
        "id": f"m{seq}",
        "thread_id": "t",
        "turn_id": "turn",
        "role": "assistant",
        "content": "text",
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "status": "complete",
        "finish_reason": None,
        "meta": None,
        "created_at": 5_000 + seq,
        **columns,
    }
    names = ", ".join(row)
    sql.execute(
        f"INSERT INTO messages ({names}) VALUES ({', '.join('?' * len(row))})", *row.values()
    )


def _fill_old(sql: WorkersSql) -> None:
    sql.execute("INSERT INTO threads (id, title, created_at, updated_at) VALUES ('t', 'x', 1, 1)")
    calls = json.dumps([{"id": "c", "name": "search", "arguments": '{"q": 1}'}])
    for seq, text in enumerate(TEXTS):
        _old_insert(sql, seq, content=text, meta=json.dumps(META[seq % len(META)] or {}))
    _old_insert(sql, 10, tool_calls=calls, finish_reason="tool_calls", meta="")
    _old_insert(sql, 11, tool_calls="", role="tool", tool_call_id="c", name="search")
    _old_insert(sql, 12, role="user", status="incomplete", meta='{"a": [1, {"b": null}]}')


def test_an_older_object_gets_every_message_json_on_migration(tmp_path: Path) -> None:
    sql = _old_layout(tmp_path / "old.sqlite")
    _fill_old(sql)
    assert migrate(sql, THREADS) == len(MIGRATIONS)
    store = ThreadStore(sql, StepClock())
    assert_every_row_stores_its_json(sql)
    assert_page_is_the_models(store, "t")
    # New writes after the migration join the backfilled ones on the same page.
    store.add_message(message_id="new", thread_id="t", turn_id="n", role="user", content="hi")
    assert_page_is_the_models(store, "t")


def test_a_migration_cut_off_half_way_completes(tmp_path: Path) -> None:
    sql = _old_layout(tmp_path / "old.sqlite")
    _fill_old(sql)
    # The table was made and part of the backfill ran, then the process died before the
    # migration was recorded: running it again fills in the rest, once.
    step = MIGRATIONS[4]
    sql.execute(step[0])
    sql.execute(step[1] + " AND seq < 3")
    assert sql.execute("SELECT COUNT(*) AS n FROM message_wire")[0]["n"] == 2
    assert migrate(sql, THREADS) == len(MIGRATIONS)
    assert_every_row_stores_its_json(sql)
    assert_page_is_the_models(ThreadStore(sql, StepClock()), "t")


def test_a_json_column_sqlite_cannot_read_does_not_stop_the_migration(tmp_path: Path) -> None:
    sql = _old_layout(tmp_path / "old.sqlite")
    sql.execute("INSERT INTO threads (id, title, created_at, updated_at) VALUES ('t', 'x', 1, 1)")
    _old_insert(sql, 1, meta='{"x": NaN}', tool_calls="not json")  # json.dumps can write NaN
    _old_insert(sql, 2, content="fine")
    assert migrate(sql, THREADS) == len(MIGRATIONS)
    page = _page(ThreadStore(sql, StepClock()), "t")
    assert [(m["id"], m["meta"], m["tool_calls"]) for m in page] == [
        ("m1", {}, []),
        ("m2", {}, []),
    ]


def test_the_frozen_backfill_is_the_models_serialisation(sql: WorkersSql) -> None:
    """A field added to Message needs a migration step that rewrites stored JSON: this
    fails until then, as the backfill text no longer makes a whole Message."""
    store = ThreadStore(sql, StepClock())
    store.create_thread("t", "chat")
    _fill(store, "t", 14)
    rebuilt = sql.execute(f"SELECT {MESSAGE_WIRE_BACKFILL} AS j FROM messages ORDER BY seq")
    stored = sql.execute("SELECT wire FROM message_wire ORDER BY seq")
    for made, kept in zip(rebuilt, stored, strict=True):
        assert list(json.loads(made["j"]).items()) == list(json.loads(kept["wire"]).items())


def test_deleting_messages_any_way_deletes_their_json(sql: WorkersSql) -> None:
    store = ThreadStore(sql, StepClock())
    store.create_thread("t", "chat")
    store.create_thread("u", "other")
    _fill(store, "t", 4)
    _fill(store, "u", 4)
    sql.execute("DELETE FROM threads WHERE id = 'u'")  # the foreign keys cascade
    assert_every_row_stores_its_json(sql)
    assert sql.execute("SELECT COUNT(*) AS n FROM message_wire")[0]["n"] == 4
    delete_threads(sql)
    assert sql.execute("SELECT COUNT(*) AS n FROM message_wire")[0]["n"] == 0


def test_a_message_without_stored_json_is_still_sent(sql: WorkersSql) -> None:
    """Never the case after any write here; if a write path forgot it, reads stay right."""
    store = ThreadStore(sql, StepClock())
    store.create_thread("t", "chat")
    _fill(store, "t", 9)
    sql.execute("DELETE FROM message_wire WHERE seq % 2 = 0")
    assert_page_is_the_models(store, "t")
