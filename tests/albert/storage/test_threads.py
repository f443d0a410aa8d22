"""The thread store on a real SQLite file through the platform SQL adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from albert.chat.history import history_for_model
from albert.cloudflare.sql import WorkersSql
from albert.protocol.http import Message, Thread, ToolCallRecord
from albert.storage.migrations import MIGRATIONS, THREADS, migrate
from albert.storage.threads import DEFAULT_TITLE, NotFound, ThreadStore
from miniflare import install_shims
from miniflare.storage import SqlStorage
from tests.support.clock import ManualClock

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


def page_json(
    store: ThreadStore, thread_id: str, limit: int, cursor: str | None = None
) -> tuple[bytes, int, str | None]:
    """The API's array of a page of messages (the store gives its inside)."""
    items, count, next_cursor = store.messages_page_items(thread_id, limit, cursor)
    return b"[" + items + b"]", count, next_cursor


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


# --- pages as JSON straight from SQLite --------------------------------------------------

TRICKY_TEXTS = [
    "",
    "plain",
    'quotes " and \\ backslash',
    "lines\nand\ttabs\r\x00\x01\x1f\x7f",
    "unicode é ü 中文 🚀 \u2028\u2029 \u202e",
    "</script><b>html</b>",
    "x" * 5000,
]


def _fill(store: ThreadStore, thread_id: str, count: int) -> None:
    store.create_thread(thread_id, "chat")
    for i in range(count):
        text = TRICKY_TEXTS[i % len(TRICKY_TEXTS)]
        role = ("user", "assistant", "tool", "assistant")[i % 4]
        calls = (
            [ToolCallRecord(id=f"c{i}", name="search", arguments='{"q": "é\\n\\"x\\""}')]
            if i % 4 == 1
            else None
        )
        store.add_message(
            message_id=f"m{i}",
            thread_id=thread_id,
            turn_id=f"turn{i // 4}",
            role=role,
            content=text,
            tool_calls=calls,
            tool_call_id=f"c{i - 1}" if role == "tool" else None,
            name="search" if role == "tool" else None,
            status=("complete", "incomplete", "error", "cancelled")[i % 4],  # type: ignore[arg-type]
            finish_reason="stop" if i % 4 == 3 else None,
            meta={"model": "m", "note": text[:20], "n": i} if i % 3 == 0 else None,
        )


def _model_page(store: ThreadStore, thread_id: str, limit: int, cursor: str | None) -> str:
    messages, next_cursor = store.list_messages(thread_id, limit, cursor)
    return json.dumps([m.model_dump(mode="json") for m in messages]), next_cursor


@pytest.mark.parametrize("limit", [1, 3, 7, 50])
def test_message_pages_as_json_equal_the_models(store: ThreadStore, limit: int) -> None:
    _fill(store, "t", 23)
    cursor_json = cursor_model = None
    for _ in range(30):
        page, count, cursor_json = page_json(store, "t", limit, cursor_json)
        expected, cursor_model = _model_page(store, "t", limit, cursor_model)
        # Same values, same key order (the wire is the models' serialisation).
        assert list(json.loads(page)) == json.loads(expected)
        assert [list(m) for m in json.loads(page)] == [list(m) for m in json.loads(expected)]
        assert count == len(json.loads(page)) and cursor_json == cursor_model
        assert all(Message.model_validate(m) for m in json.loads(page))
        if cursor_json is None:
            break
    assert cursor_json is None


def test_a_thousand_messages_come_back_in_order(store: ThreadStore) -> None:
    _fill(store, "t", 1000)
    page, count, cursor = page_json(store, "t", 1000)
    assert count == 1000 and cursor is None
    assert [m["id"] for m in json.loads(page)] == [f"m{i}" for i in range(1000)]


def test_an_empty_thread_is_an_empty_json_page(store: ThreadStore) -> None:
    store.create_thread("t", None)
    assert store.messages_page_items("t", 10) == (b"", 0, None)


@pytest.mark.parametrize("limit", [1, 2, 5, 40])
def test_thread_pages_as_json_equal_the_models(store: ThreadStore, limit: int) -> None:
    for i in range(12):
        store.create_thread(f"t{i}", TRICKY_TEXTS[i % len(TRICKY_TEXTS)][:100] or None)
    store.add_message(message_id="m", thread_id="t3", turn_id="m", role="user", content="bump")
    cursor_json = cursor_model = None
    for _ in range(30):
        page, cursor_json = store.threads_page_json(limit, cursor_json)
        threads, cursor_model = store.list_threads(limit, cursor_model)
        assert json.loads(page) == [t.model_dump(mode="json") for t in threads]
        assert [list(t) for t in json.loads(page)] == [list(Thread.model_fields)] * len(threads)
        assert cursor_json == cursor_model
        if cursor_json is None:
            break
    assert cursor_json is None


def test_json_pages_reject_malformed_cursors(store: ThreadStore) -> None:
    with pytest.raises(ValueError):
        store.threads_page_json(5, "%%%")
    with pytest.raises(ValueError):
        store.messages_page_items("t", 5, "%%%")


def test_model_history_reads_what_history_reads_for_the_model(store: ThreadStore) -> None:
    store.create_thread("t", None)
    calls = [ToolCallRecord(id="c1", name="lookup", arguments='{"q": "é \\u2028"}')]
    store.add_message(message_id="u1", thread_id="t", turn_id="u1", role="user", content="hi")
    store.add_message(
        message_id="a1", thread_id="t", turn_id="u1", role="assistant", content="", tool_calls=calls
    )
    store.add_message(
        message_id="r1",
        thread_id="t",
        turn_id="u1",
        role="tool",
        content="result",
        tool_call_id="c1",
        name="lookup",
        meta={"source": "local"},
    )
    store.add_message(
        message_id="a2",
        thread_id="t",
        turn_id="u1",
        role="assistant",
        content="cut",
        status="incomplete",
    )
    store.add_message(message_id="u2", thread_id="t", turn_id="u2", role="user", content="more")
    store.create_thread("other", None)
    store.add_message(message_id="x", thread_id="other", turn_id="x", role="user", content="no")
    for limit in (200, 5, 3, 1):
        lean = store.model_history("t", limit)
        full = store.history("t", limit)
        assert [
            (m.role, m.content, m.status, m.tool_call_id, m.name, list(m.tool_calls)) for m in lean
        ] == [
            (
                m.role,
                m.content,
                m.status,
                m.tool_call_id,
                m.name,
                [(c.id, c.name, c.arguments) for c in m.tool_calls],
            )
            for m in full
        ]
        assert history_for_model(lean) == history_for_model(full)
    assert [m.content for m in store.model_history("t", 2)] == ["cut", "more"]
    assert store.model_history("nothing-here") == []


def test_title_and_message_thread_answer_admission_in_one_read(store: ThreadStore) -> None:
    store.create_thread("t", None)
    store.create_thread("u", "  Named\u200b ")
    store.add_message(message_id="m", thread_id="u", turn_id="m", role="user", content="x")
    assert store.title_and_message_thread("t", "new") == (DEFAULT_TITLE, None)
    assert store.title_and_message_thread("t", "m") == (DEFAULT_TITLE, "u")
    assert store.title_and_message_thread("u", "m") == (store.get_thread("u").title, "u")
    with pytest.raises(NotFound):
        store.title_and_message_thread("nope", "m")


def test_set_title_cleans_like_rename_and_bumps_the_thread(store: ThreadStore) -> None:
    store.create_thread("t", None)
    store.create_thread("u", None)
    before = store.get_thread("t")
    store.set_title("t", "  First\u202e words ")
    store.rename_thread("u", "  First\u202e words ")
    after = store.get_thread("t")
    assert after.title == store.get_thread("u").title != DEFAULT_TITLE
    assert after.updated_at > before.updated_at and after.created_at == before.created_at
    store.set_title("t", "   ")
    assert store.get_thread("t").title == DEFAULT_TITLE


def test_a_first_message_titled_in_its_commit_needs_no_bump_first(tmp_path: Path) -> None:
    # Admission stores a thread's first message and sets the first title in one commit;
    # `set_title` sets `updated_at` to now, so the bump it skips would be overwritten.
    rows = []
    for name, bump in (("bumped", True), ("not_bumped", False)):
        sql = WorkersSql(SqlStorage(tmp_path / f"{name}.sqlite"))
        migrate(sql, THREADS)
        clock = ManualClock(1_000)
        store = ThreadStore(sql, clock)
        store.create_thread("t", None)
        clock.ms = 5_000
        store.add_message(
            message_id="m", thread_id="t", turn_id="m", role="user", content="hi", bump=bump
        )
        if not bump:
            assert store.get_thread("t").updated_at == 1_000  # left for the caller
        store.set_title("t", "hi")
        rows.append(sql.execute("SELECT * FROM threads"))
    assert rows[0] == rows[1]
    assert rows[1][0]["updated_at"] == 5_000 and rows[1][0]["title"] == "hi"
