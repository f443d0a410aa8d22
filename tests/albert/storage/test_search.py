"""Thread search (SQLite FTS5 over titles and messages), pins, versions and edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from albert.chat.history import history_for_model
from albert.cloudflare.sql import WorkersSql
from albert.protocol.http import Feedback, ToolCallRecord
from albert.storage.migrations import MIGRATIONS, THREADS, migrate
from albert.storage.threads import NotFound, ThreadStore, fts_query
from miniflare import install_shims
from miniflare.storage import SqlStorage
from tests.albert.storage.test_threads import StepClock

install_shims()


@pytest.fixture
def store(tmp_path: Path) -> ThreadStore:
    sql = WorkersSql(SqlStorage(tmp_path / "object.sqlite"))
    migrate(sql, THREADS)
    return ThreadStore(sql, StepClock())


def turn(store: ThreadStore, thread: str, turn_id: str, question: str, answer: str) -> None:
    store.add_message(
        message_id=turn_id, thread_id=thread, turn_id=turn_id, role="user", content=question
    )
    store.add_message(
        message_id=f"{turn_id}:r:a0",
        thread_id=thread,
        turn_id=turn_id,
        role="assistant",
        content=answer,
        finish_reason="stop",
    )


def test_search_finds_threads_by_title_and_by_words_of_questions_and_answers(
    store: ThreadStore,
) -> None:
    store.create_thread("t_a", "Stablecoin yields")
    store.create_thread("t_b", "Memes")
    store.create_thread("t_c", "Other")
    turn(store, "t_b", "m_1", "What is PEPE?", "PEPE is a meme token on Ethereum.")
    turn(store, "t_c", "m_2", "Top vaults on Base", "Morpho **USDC Prime** yields 6.4%")
    # A tool result's words are not searched (they are data, not the conversation).
    store.add_message(
        message_id="m_2:r:t0:c1",
        thread_id="t_c",
        turn_id="m_2",
        role="tool",
        content="zebracorn",
        tool_call_id="c1",
        name="vaults",
    )

    assert [h.thread.id for h in store.search("stablecoin")] == ["t_a"]
    hits = store.search("ethereum")
    assert [h.thread.id for h in hits] == ["t_b"]
    assert hits[0].snippet is not None and "[Ethereum]" in hits[0].snippet
    # Every word must match; the last one is a prefix (results while typing); stems match.
    assert [h.thread.id for h in store.search("usdc pri")] == ["t_c"]
    assert [h.thread.id for h in store.search("vault")] == ["t_c"]
    assert {h.thread.id for h in store.search("yield")} == {"t_a", "t_c"}
    assert store.search("usdc ethereum") == []
    assert store.search("zebracorn") == []
    # FTS syntax in the search is only words: no error, no injection.
    assert store.search('" OR * NEAR(') == []
    assert store.search("   ") == []
    assert fts_query('a "b" c*') == '"a" "b" "c"*'


def test_search_follows_renames_edits_deletes_and_lists_pinned_first(store: ThreadStore) -> None:
    store.create_thread("t_a", "Alpha notes")
    store.create_thread("t_b", "Beta notes")
    assert [h.thread.id for h in store.search("notes")] == ["t_b", "t_a"]
    store.set_pinned("t_a", True)
    assert store.get_thread("t_a").pinned is True
    hits = store.search("notes")
    assert [h.thread.id for h in hits] == ["t_a", "t_b"] and hits[0].thread.pinned
    store.rename_thread("t_a", "Gamma")
    assert store.search("alpha") == [] and [h.thread.id for h in store.search("gamma")] == ["t_a"]
    turn(store, "t_b", "m_1", "first question", "about lending")
    store.update_message(
        "m_1:r:a0", content="about borrowing", status="complete", finish_reason="stop"
    )
    assert store.search("lending") == []
    assert [h.thread.id for h in store.search("borrowing")] == ["t_b"]
    store.delete_thread("t_b")
    assert store.search("borrowing") == [] and store.search("beta") == []


def test_a_database_from_before_search_is_indexed_by_the_migration(tmp_path: Path) -> None:
    sql = WorkersSql(SqlStorage(tmp_path / "old.sqlite"))
    before = THREADS.__class__(THREADS.namespace, THREADS.record_table, MIGRATIONS[:-1])
    migrate(sql, before)
    old = ThreadStore(sql, StepClock())
    sql.execute(
        "INSERT INTO threads (id, title, created_at, updated_at) VALUES ('t_o', 'Old one', 1, 1)"
    )
    sql.execute(
        "INSERT INTO messages (id, thread_id, turn_id, role, content, status, created_at) "
        "VALUES ('m_o', 't_o', 'm_o', 'user', 'ancient question', 'complete', 1)"
    )
    migrate(sql, THREADS)
    assert [h.thread.id for h in old.search("ancient")] == ["t_o"]
    assert [h.thread.id for h in old.search("old")] == ["t_o"]
    assert old.get_thread("t_o").pinned is False


def test_regenerate_keeps_the_answer_as_a_version_out_of_the_models_context(
    store: ThreadStore,
) -> None:
    store.create_thread("t_a", None)
    turn(store, "t_a", "m_1", "Compare vaults", "First answer")
    store.add_message(
        message_id="m_1:r:a1",
        thread_id="t_a",
        turn_id="m_1",
        role="assistant",
        content="",
        tool_calls=[ToolCallRecord(id="c1", name="vaults", arguments="{}")],
    )
    assert store.last_question("t_a") == "m_1"
    assert store.supersede_answer("t_a", "m_1") == 1
    assert [m.content for m in history_for_model(store.model_history("t_a"))] == ["Compare vaults"]
    store.add_message(
        message_id="m_1:s:a0",
        thread_id="t_a",
        turn_id="m_1",
        role="assistant",
        content="Second answer",
        finish_reason="stop",
    )
    assert store.supersede_answer("t_a", "m_1") == 2
    versions = {m.id: m.meta.get("version") for m in store.all_messages("t_a")}
    assert versions == {"m_1": None, "m_1:r:a0": 1, "m_1:r:a1": 1, "m_1:s:a0": 2}
    # An old version's words are not found by search either.
    assert store.search("second") == []
    assert store.supersede_answer("t_a", "m_1") == 0  # nothing current left


def test_edit_deletes_the_question_and_everything_after_it(store: ThreadStore) -> None:
    store.create_thread("t_a", None)
    turn(store, "t_a", "m_1", "one", "answer one")
    turn(store, "t_a", "m_2", "two", "answer two")
    turn(store, "t_a", "m_3", "three", "answer three")
    assert store.is_question("t_a", "m_2") and not store.is_question("t_a", "m_2:r:a0")
    assert store.delete_from("t_a", "m_2") == 4
    assert [m.id for m in store.all_messages("t_a")] == ["m_1", "m_1:r:a0"]
    assert store.search("three") == []
    with pytest.raises(NotFound):
        store.delete_from("t_a", "m_2")


def test_feedback_is_stored_with_the_answers_last_message_and_can_be_taken_back(
    store: ThreadStore,
) -> None:
    store.create_thread("t_a", None)
    turn(store, "t_a", "m_1", "q", "a")
    message = store.set_feedback("t_a", "m_1", Feedback(rating="down", comment="wrong APY", at=5))
    assert message.id == "m_1:r:a0"
    stored = store.all_messages("t_a")[-1]
    assert stored.meta["feedback"] == {"rating": "down", "comment": "wrong APY", "at": 5}
    # The JSON the thread page sends has it too.
    page, _, _ = store.messages_page_items("t_a", 10)
    assert b'"feedback":{"rating":"down"' in page
    store.set_feedback("t_a", "m_1", None)
    assert "feedback" not in store.all_messages("t_a")[-1].meta
    with pytest.raises(NotFound):
        store.set_feedback("t_a", "m_9", None)


def test_pinned_threads_lead_the_list_however_old_and_pages_cover_every_thread_once(
    store: ThreadStore,
) -> None:
    made = [store.create_thread(f"t{n:03d}", f"thread {n}").id for n in range(130)]
    oldest, middle = made[0], made[60]
    for thread in (oldest, middle):
        store.set_pinned(thread, True)
    # Both list paths (the models and the API's JSON page) agree, page after page.
    for read in ("models", "json"):
        seen: list[tuple[str, bool]] = []
        cursor = None
        for _ in range(20):
            if read == "models":
                threads, cursor = store.list_threads(50, cursor)
                seen += [(t.id, t.pinned) for t in threads]
            else:
                page, cursor = store.threads_page_json(50, cursor)
                seen += [(t["id"], t["pinned"]) for t in json.loads(page)]
            if cursor is None:
                break
        ids = [thread for thread, _ in seen]
        assert ids[:2] == [middle, oldest], read  # pinned, newest first among them
        assert all(not pinned for _, pinned in seen[2:])
        assert sorted(ids) == sorted(made) and len(ids) == len(set(ids)), read
        assert ids[2:] == [t for t in reversed(made) if t not in (oldest, middle)]
