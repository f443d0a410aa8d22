"""The thread store on a real SQLite file through the platform SQL adapter."""

from __future__ import annotations

from pathlib import Path

import pytest

from albert.cloudflare.sql import WorkersSql
from albert.protocol.http import ToolCallRecord
from albert.storage.migrations import MIGRATIONS, THREADS, migrate
from albert.storage.threads import DEFAULT_TITLE, NotFound, ThreadStore
from miniflare import install_shims
from miniflare.storage import SqlStorage

install_shims()


class StepClock:
    """Each reading is one millisecond after the last, so ordering is exact."""

    def __init__(self) -> None:
        self.t = 1_000

    def now_ms(self) -> int:
        self.t += 1
        return self.t

    def monotonic(self) -> float:
        return self.t / 1000


@pytest.fixture
def store(tmp_path: Path) -> ThreadStore:
    sql = WorkersSql(SqlStorage(tmp_path / "object.sqlite"))
    migrate(sql, THREADS)
    return ThreadStore(sql, StepClock())


def test_migrations_apply_once(tmp_path: Path) -> None:
    sql = WorkersSql(SqlStorage(tmp_path / "m.sqlite"))
    assert migrate(sql, THREADS) == len(MIGRATIONS)
    assert migrate(sql, THREADS) == len(MIGRATIONS)
    rows = sql.execute("SELECT COUNT(*) AS n FROM schema_migrations")
    assert rows[0]["n"] == len(MIGRATIONS)


def test_threads_list_newest_activity_first_with_stable_pages(store: ThreadStore) -> None:
    ids = [store.create_thread(f"t{i}", None).id for i in range(7)]
    store.add_message(message_id="m", thread_id="t2", turn_id="m", role="user", content="bump")
    seen, cursor = [], None
    for _ in range(10):
        page, cursor = store.list_threads(3, cursor)
        seen += [t.id for t in page]
        if cursor is None:
            break
    assert seen == ["t2", *[i for i in reversed(ids) if i != "t2"]]
    assert store.get_thread("t0").title == DEFAULT_TITLE


def test_messages_page_in_order_and_keep_tool_calls(store: ThreadStore) -> None:
    store.create_thread("t", "chat")
    calls = [ToolCallRecord(id="c1", name="analyze_token", arguments='{"symbol":"PEPE"}')]
    store.add_message(message_id="u", thread_id="t", turn_id="u", role="user", content="q")
    store.add_message(
        message_id="a", thread_id="t", turn_id="u", role="assistant", content="", tool_calls=calls
    )
    store.add_message(
        message_id="r",
        thread_id="t",
        turn_id="u",
        role="tool",
        content="res",
        tool_call_id="c1",
        name="analyze_token",
    )
    first, cursor = store.list_messages("t", 2)
    rest, end = store.list_messages("t", 2, cursor)
    assert [m.id for m in first + rest] == ["u", "a", "r"] and end is None
    assert first[1].tool_calls == calls
    assert store.message_thread("r") == "t"


def test_delete_removes_messages_and_unknown_threads_raise(store: ThreadStore) -> None:
    store.create_thread("t", None)
    store.add_message(message_id="u", thread_id="t", turn_id="u", role="user", content="q")
    store.delete_thread("t")
    assert store.message_thread("u") is None
    for action in (
        lambda: store.get_thread("t"),
        lambda: store.delete_thread("t"),
        lambda: store.list_messages("t", 5),
    ):
        with pytest.raises(NotFound):
            action()


def test_malformed_cursors_are_rejected(store: ThreadStore) -> None:
    with pytest.raises(ValueError):
        store.list_threads(5, "%%%")
