"""Message and thread actions in Chromium against the local stack: copy, code copy,
regenerate with versions, edit and resend (↑ too), feedback, search, pin and export."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from albert.analytics.event_catalog import BY_NAME
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.web.test_chat_browser import Page, read_events

pytestmark = pytest.mark.browser

TABLE_ANSWER = (
    "Vaults:\n\n| Vault | APY |\n| --- | ---: |\n| USDC Prime | 6.42% |\n\n"
    "```sh\ncurl https://example.org\n```\n"
)
HOSTILE = "<script>window.__pwned = 1</script> [click](javascript:window.__pwned=2) done"


@pytest.fixture
def tab(browser: Any, runtime: RuntimeProcess) -> Any:
    context = browser.new_context(viewport={"width": 1200, "height": 800}, accept_downloads=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = Page(context.new_page(), runtime.url)
    yield page.open()
    context.close()
    assert page.errors == [], page.errors


def clipboard(tab: Page) -> str:
    return str(tab.page.evaluate("navigator.clipboard.readText()"))


def turn_li(index: int) -> str:
    return f"#turns > li.turn:nth-child({index})"


def test_table_answer_copy_and_code_copy_and_hostile_markup(
    tab: Page, model: ScriptedModelServer
) -> None:
    page = tab.page
    model.script(Reply(text=[TABLE_ANSWER]))
    tab.ask("Compare vaults")
    tab.wait_turn(1)
    assert page.eval_on_selector(".answer td.num", "e => getComputedStyle(e).textAlign") == "right"
    assert page.is_visible(".answer .table-scroll table")
    page.click(".copy-answer")
    page.wait_for_selector(".copy-answer:has-text('Copied')")
    assert clipboard(tab) == TABLE_ANSWER
    page.click(".code-copy")
    page.wait_for_selector(".code-copy:has-text('Copied')")
    assert clipboard(tab) == "curl https://example.org\n"

    model.script(Reply(text=[HOSTILE]))
    tab.ask("Say something hostile")
    tab.wait_turn(2)
    answer = page.inner_html(f"{turn_li(2)} .answer")
    # Shown as text, never as markup: no script element, no javascript: link.
    assert "<script" not in answer and "&lt;script&gt;" in answer
    assert page.query_selector_all(".answer script, .answer a[href^='javascript' i]") == []
    assert page.query_selector_all(f"{turn_li(2)} .answer a") == []
    page.click(f"{turn_li(2)} .answer")
    assert page.evaluate("window.__pwned") is None


def test_regenerate_keeps_the_old_answer_as_a_version(
    tab: Page, model: ScriptedModelServer
) -> None:
    page = tab.page
    model.script(Reply(text=["First answer."]))
    tab.ask("Which vault?")
    tab.wait_turn(1)
    model.script(Reply(text=["Second ", "answer."], chunk_delay_seconds=0.1))
    page.click(".regenerate")
    page.wait_for_selector(f"{turn_li(1)}[data-state='running']")
    tab.wait_turn(1)
    assert "Second answer." in tab.answers() and "First answer." not in tab.answers()
    assert page.inner_text(".version-label") == "2 / 2"
    page.click(".version-prev")
    page.wait_for_selector(f"{turn_li(1)}[data-version='1']")
    assert "First answer." in tab.answers()
    assert page.inner_text(".version-label") == "1 / 2"
    assert not page.is_visible(".regenerate")
    page.click(".version-next")
    page.wait_for_selector(f"{turn_li(1)}[data-version='current']")

    # The server kept both; the model's context has only the new one (see the request).
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    tab.wait_turn(1)
    assert "Second answer." in tab.answers()
    assert page.inner_text(".version-label") == "2 / 2"
    model.script(Reply(text=["Third."]))
    tab.ask("And then?")
    tab.wait_turn(2)
    sent = [m.get("content") for m in model.requests[-1]["messages"]]
    assert "Second answer." in sent and "First answer." not in sent
    # Only the last answer can be regenerated.
    assert page.is_hidden(f"{turn_li(1)} .regenerate")
    assert page.is_visible(f"{turn_li(2)} .regenerate")


def test_edit_and_resend_replaces_what_followed_and_arrow_up_edits_the_last(
    tab: Page, model: ScriptedModelServer
) -> None:
    page = tab.page
    for i in (1, 2, 3):
        model.script(Reply(text=[f"Answer {i}."]))
        tab.ask(f"Question {i}")
        tab.wait_turn(i)
    page.click(f"{turn_li(2)} .edit-message")
    assert page.is_visible("#editing")
    assert page.input_value("#input") == "Question 2"
    page.fill("#input", "Question 2, edited")
    model.script(Reply(text=["Edited answer."]))
    page.press("#input", "Enter")
    tab.wait_turn(2)
    assert tab.user_texts() == ["Question 1", "Question 2, edited"]
    assert "Answer 3." not in tab.answers() and "Edited answer." in tab.answers()
    assert page.is_hidden("#editing")

    # ↑ in the empty box edits the last question; Escape leaves the edit.
    page.focus("#input")
    page.keyboard.press("ArrowUp")
    assert page.input_value("#input") == "Question 2, edited"
    page.keyboard.press("Escape")
    assert page.input_value("#input") == "" and page.is_hidden("#editing")
    page.keyboard.press("ArrowUp")
    page.fill("#input", "Short")
    model.script(Reply(text=["Short answer."]))
    page.keyboard.press("Enter")
    tab.wait_turn(2)

    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    tab.wait_turn(2)
    assert tab.user_texts() == ["Question 1", "Short"]
    assert tab.answers() == "Answer 1.\nShort answer."


def test_feedback_search_pin_and_export(
    tab: Page, model: ScriptedModelServer, events_log: Path
) -> None:
    page = tab.page
    client_id = tab.client_id()
    model.script(Reply(text=["Morpho USDC Prime yields 6.4% on Base."]))
    tab.ask("Best stablecoin vault")
    tab.wait_turn(1)
    first = tab.current_thread()

    # Feedback: thumbs down, then a comment; stored with the message.
    page.click(".feedback-down")
    page.wait_for_selector(".feedback-down[aria-pressed='true']")
    page.fill(".feedback-comment", "APY is stale")
    page.click(".feedback-send")
    page.wait_for_selector(".feedback-thanks")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(".feedback-down[aria-pressed='true']")
    stored = page.evaluate(
        """async (id) => {
          const s = JSON.parse(localStorage.getItem('albert.session'));
          const r = await fetch(`/api/threads/${id}`, {headers: {
            authorization: `Bearer ${s.token}`, 'x-albert-client': s.client_id}});
          return (await r.json()).messages.map(m => m.meta.feedback).filter(Boolean);
        }""",
        first,
    )
    assert stored[0]["rating"] == "down" and stored[0]["comment"] == "APY is stale"

    # A second thread; search finds each by its words and by title.
    page.click("#new-thread")
    page.wait_for_function("() => document.querySelectorAll('#thread-list .thread').length === 2")
    model.script(Reply(text=["PEPE is a meme token."]))
    tab.ask("Tell me about memes")
    tab.wait_turn(1)
    second = tab.current_thread()
    page.fill("#search", "morpho")
    page.wait_for_selector("#thread-list .search-hit")
    hits = tab.threads()
    assert hits == [first]
    assert "[Morpho]" in page.inner_text(".hit-snippet")
    page.fill("#search", "meme")
    page.wait_for_function(
        f"() => [...document.querySelectorAll('#thread-list .thread')]"
        f".map(e => e.dataset.threadId).join() === '{second}'"
    )
    page.fill("#search", "zzzz")
    page.wait_for_selector("#thread-empty:has-text('Nothing found')")
    page.fill("#search", "")
    page.wait_for_function("() => document.querySelectorAll('#thread-list .thread').length === 2")

    # Pin the older thread: it is listed first, also after a reload.
    assert tab.threads() == [second, first]
    page.click(f"#thread-list .thread[data-thread-id='{first}'] .thread-pin")
    page.wait_for_function(
        f"() => document.querySelector('#thread-list .thread').dataset.threadId === '{first}'"
    )
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("#thread-list .thread[data-pinned='true']")
    assert tab.threads() == [first, second]

    # Export the first thread as Markdown and as JSON.
    page.click(f"#thread-list .thread[data-thread-id='{first}'] .thread-open")
    tab.wait_turn(1)
    page.click("#export-menu summary")
    with page.expect_download() as download:
        page.click("#export-md")
    markdown = Path(download.value.path()).read_text()
    assert download.value.suggested_filename == f"albert-{first}.md"
    assert markdown.startswith("# Best stablecoin vault")
    assert "Morpho USDC Prime yields 6.4% on Base." in markdown
    assert "_Feedback: down: APY is stale_" in markdown
    page.click("#export-menu summary")
    with page.expect_download() as download:
        page.click("#export-json")
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["thread"]["id"] == first and exported["thread"]["pinned"] is True
    assert [m["role"] for m in exported["messages"]] == ["user", "assistant"]

    # Feedback left as typed events on both sides.
    wanted = {"feedback_given", "answer_feedback_stored", "chat_action_used"}
    events: list[dict[str, Any]] = []
    for _ in range(80):
        events = read_events(events_log, client_id)
        actions = {e["event_properties"].get("action") for e in events}
        if wanted <= {e["event_type"] for e in events} and "export_json" in actions:
            break
        time.sleep(0.1)
    for event in events:
        BY_NAME[event["event_type"]].model_validate(event["event_properties"], strict=True)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_type.setdefault(event["event_type"], []).append(event["event_properties"])
    assert wanted <= set(by_type), sorted(by_type)
    assert by_type["feedback_given"][0] == {"rating": "down", "with_comment": False}
    assert {"rating": "down", "with_comment": True} in by_type["feedback_given"]
    assert by_type["answer_feedback_stored"][-1]["comment_chars"] == len("APY is stale")
    actions = {e["action"] for e in by_type["chat_action_used"]}
    assert {"search", "pin", "export_markdown", "export_json"} <= actions
