"""What a chat app's user expects, in Chromium against the local stack: copy an answer or a
code block, the keyboard (Enter, Shift+Enter, Esc, ↑), export, and no serious axe-core
violation (axe-core from npm, run in the page for the test only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from miniflare.process import PROJECT_DIR
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.web.test_chat_browser import Page

pytestmark = pytest.mark.browser

AXE = PROJECT_DIR / "node_modules" / "axe-core" / "axe.min.js"
ANSWER = "Use this:\n\n```python\nprint('apy')\n```\n\nand **that**."


@pytest.fixture
def tab(browser: Any, runtime: RuntimeProcess) -> Any:
    context = browser.new_context(
        viewport={"width": 1200, "height": 800},
        permissions=["clipboard-read", "clipboard-write"],
        accept_downloads=True,
    )
    page = Page(context.new_page(), runtime.url)
    yield page.open()
    context.close()
    assert page.errors == [], page.errors


def clipboard(tab: Page) -> str:
    return str(tab.page.evaluate("navigator.clipboard.readText()"))


def test_an_answer_and_its_code_are_copied(tab: Page, model: ScriptedModelServer) -> None:
    model.script(Reply(text=[ANSWER]))
    tab.ask("how?")
    tab.wait_turn(1)
    tab.page.click(".copy-code")
    assert clipboard(tab) == "print('apy')\n"
    tab.page.click(".copy-answer")
    assert clipboard(tab) == ANSWER
    assert tab.page.inner_text(".copy-answer") == "Copied"


def test_the_keyboard_sends_breaks_lines_stops_and_recalls(
    tab: Page, model: ScriptedModelServer
) -> None:
    page = tab.page
    page.fill("#input", "first line")
    page.press("#input", "Shift+Enter")
    page.type("#input", "second line")
    assert page.input_value("#input") == "first line\nsecond line"
    model.script(Reply(text=["Slow ", "answer ", "…"], pause_after_chunks=1, pause_seconds=20))
    page.press("#input", "Enter")
    tab.wait_turn(1, "running")
    page.wait_for_selector("#stop:not([hidden])")
    page.keyboard.press("Escape")
    tab.wait_turn(1, "cancelled")
    assert page.input_value("#input") == ""
    page.focus("#input")
    page.keyboard.press("ArrowUp")
    assert page.input_value("#input") == "first line\nsecond line"


def test_a_conversation_is_exported_as_markdown_and_json(
    tab: Page, model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script(Reply(text=["| Vault | APY |\n| --- | ---: |\n| A | 4.2% |"]))
    tab.ask("Best vault?")
    tab.wait_turn(1)
    with tab.page.expect_download() as markdown:
        tab.page.click("#export-markdown")
    saved = tmp_path / markdown.value.suggested_filename
    markdown.value.save_as(saved)
    text = saved.read_text()
    assert saved.suffix == ".md" and "## You\n\nBest vault?" in text and "| A | 4.2% |" in text
    with tab.page.expect_download() as exported:
        tab.page.click("#export-json")
    body = json.loads(Path(exported.value.path()).read_text())
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]


def test_axe_core_finds_no_serious_violation(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    if not AXE.exists():
        pytest.skip("node_modules is not installed (scripts/bootstrap installs it)")
    source = AXE.read_text()
    for width in (1200, 375):
        context = browser.new_context(viewport={"width": width, "height": 800})
        try:
            tab = Page(context.new_page(), runtime.url).open()
            model.script(Reply(text=[ANSWER + "\n\n| a | b |\n| --- | --- |\n| 1 | 2 |"]))
            tab.ask("check me")
            tab.wait_turn(1)
            # Run in the page through the debugger (the page's CSP allows only its own
            # scripts): axe-core is a test tool, never served to users.
            tab.page.evaluate(source)
            result = tab.page.evaluate(
                "async () => { const r = await axe.run(document, {resultTypes: ['violations']});"
                " return r.violations.map(v => ({id: v.id, impact: v.impact,"
                " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 3)})); }"
            )
            serious = [v for v in result if v["impact"] in ("serious", "critical")]
            assert serious == [], (width, serious)
        finally:
            context.close()


def test_conversations_are_searched_by_content_and_pinned_first(
    tab: Page, model: ScriptedModelServer
) -> None:
    page = tab.page
    for question, answer in (
        ("Best USDC vaults?", "Morpho's USDC Prime yields 6%."),
        ("What is PEPE?", "A meme token."),
    ):
        page.click("#new-thread")
        model.script(Reply(text=[answer]))
        tab.ask(question)
        tab.wait_turn(1)
    titles = lambda: page.eval_on_selector_all(  # noqa: E731
        "#thread-list .thread-open", "els => els.map(e => e.textContent)"
    )
    page.wait_for_function(  # the first question becomes a thread's title
        "() => [...document.querySelectorAll('#thread-list .thread-open')]"
        ".map(e => e.textContent).join('|') === 'What is PEPE?|Best USDC vaults?'"
    )
    # Pinned: first in the list, and still after a reload.
    page.click('#thread-list .thread:has-text("Best USDC vaults?") .thread-pin')
    page.wait_for_function(
        "() => document.querySelector('#thread-list .thread').textContent.includes('Best USDC')"
    )
    tab.open()
    assert titles()[0] == "Best USDC vaults?"
    # Searched on the server, by a word of an answer (a prefix, as typed).
    page.fill("#thread-search", "Morph")
    page.wait_for_function("() => document.querySelectorAll('#thread-list .thread').length === 1")
    assert titles() == ["Best USDC vaults?"]
    assert "USDC Prime" in page.inner_text(".thread-snippet")
    page.fill("#thread-search", "zebra")
    page.wait_for_selector("#thread-empty:not([hidden])")
    assert page.inner_text("#thread-empty") == "No conversation matches."
    page.fill("#thread-search", "")
    page.wait_for_function("() => document.querySelectorAll('#thread-list .thread').length >= 2")
