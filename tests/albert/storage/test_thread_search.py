"""Thread search over titles and the FTS5 index of questions and answers, and pins."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albert.cloudflare.sql import WorkersSql
from albert.storage.migrations import THREADS, migrate
from albert.storage.thread_search import match_expression, search_threads
from albert.storage.threads import ThreadStore
from miniflare import install_shims
from miniflare.storage import SqlStorage
from tests.albert.storage.test_threads import StepClock

install_shims()


THREADS_DATA = [
    ("t_base", "Stablecoins", "Best USDC vaults on Base?", "Morpho's USDC Prime yields 6%."),
    ("t_pepe", "Meme coins", "What is PEPE?", "PEPE is a meme token on Ethereum."),
    ("t_wallet", "My wallet 100% sure", "Is 0xabc risky?", "It looks clean."),
]


@pytest.fixture
def store(tmp_path: Path) -> ThreadStore:
    sql = WorkersSql(SqlStorage(tmp_path / "object.sqlite"))
    migrate(sql, THREADS)
    store = ThreadStore(sql, StepClock())
    for thread, title, question, answer in THREADS_DATA:
        store.create_thread(thread, title)
        said = (("user", question), ("assistant", answer), ("tool", "secret tool text"))
        for n, (role, text) in enumerate(said):
            store.add_message(
                message_id=f"{thread}-{n}",
                thread_id=thread,
                turn_id=f"{thread}-turn",
                role=role,
                content=text,
                tool_call_id="c" if role == "tool" else None,
                name="t" if role == "tool" else None,
            )
    return store


def found(store: ThreadStore, query: str) -> list[str]:
    return [hit.thread.id for hit in search_threads(store.sql_storage, query, 20)]


def test_words_of_questions_and_answers_find_their_threads(store: ThreadStore) -> None:
    assert found(store, "usdc") == ["t_base"]
    assert found(store, "meme ethereum") == ["t_pepe"]
    assert found(store, "Morph") == ["t_base"]  # the last word is a prefix: typing goes on
    assert found(store, "usdc pepe") == []  # every word is needed
    [hit] = search_threads(store.sql_storage, "Prime", 20)
    assert hit.snippet == "Morpho's USDC Prime yields 6%."


def test_titles_match_as_text_and_tool_results_are_not_searched(store: ThreadStore) -> None:
    assert found(store, "Stablecoins") == ["t_base"]
    assert found(store, "100%") == ["t_wallet"]  # % is a character, not a wildcard
    assert found(store, "secret tool") == []


def test_edits_and_deletes_keep_the_index_current(store: ThreadStore) -> None:
    store.update_message("t_pepe-1", content="PEPE is a frog.", status="complete")
    assert found(store, "frog") == ["t_pepe"] and found(store, "meme ethereum") == []
    store.delete_thread("t_pepe")
    assert found(store, "frog") == [] and found(store, "PEPE") == []


def test_pinned_threads_come_first(store: ThreadStore) -> None:
    # "e" is in every title: the latest first, until one is pinned.
    assert found(store, "e") == ["t_wallet", "t_pepe", "t_base"]
    store.pin_thread("t_base", True)
    assert store.get_thread("t_base").pinned
    assert found(store, "e") == ["t_base", "t_wallet", "t_pepe"]
    threads, _ = store.list_threads(10)
    assert {t.id: t.pinned for t in threads}["t_base"] is True


@pytest.mark.parametrize(
    "query", ['"', "*", "NEAR(a b)", "a OR b", "-usdc", "^usdc", "col:usdc", "'); DROP", "()"]
)
def test_query_syntax_is_read_as_words(store: ThreadStore, query: str) -> None:
    found(store, query)  # never an FTS5 syntax error
    expression = match_expression(query)
    assert expression is None or all(part.startswith('"') for part in expression.split())


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(min_size=1, max_size=60))
def test_any_text_is_a_query(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    sql = WorkersSql(SqlStorage(tmp_path_factory.mktemp("q") / "object.sqlite"))
    migrate(sql, THREADS)
    search_threads(sql, text, 5)
