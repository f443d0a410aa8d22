"""Keyboard use and accessibility of the browser chat, in Chromium against the local stack.

axe-core (tests/web/vendor/, copied from npm by scripts/vendor_web.py; never served to
users) checks the page with a conversation on it: a table, code, a tool call, light and dark
themes and a 375 px wide phone; no serious or critical violation is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.web.test_chat_browser import Page, script_tool_turn

pytestmark = pytest.mark.browser

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
ANSWER = (
    "Two vaults:\n\n| Vault | APY |\n| --- | ---: |\n| USDC Prime | 6.42% |\n| cbETH | 3.1% |\n\n"
    "```python\nprint('hi')\n```\n"
)


def open_tab(browser: Any, runtime: RuntimeProcess, width: int, height: int) -> tuple[Any, Page]:
    # The test injects axe-core as a script of its own: only this context lifts the CSP.
    context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    return context, Page(context.new_page(), runtime.url)


def serious_violations(page: Any) -> list[str]:
    page.add_script_tag(content=AXE.read_text())
    result = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes']}"
        for v in result
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize(
    ("width", "theme"), [(1200, "light"), (1200, "dark"), (375, "light"), (375, "dark")]
)
def test_axe_finds_no_serious_violation(
    browser: Any,
    runtime: RuntimeProcess,
    model: ScriptedModelServer,
    width: int,
    theme: str,
    artifacts: Path,
) -> None:
    context, tab = open_tab(browser, runtime, width, 800)
    page = tab.open().page
    page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
    script_tool_turn(model)
    tab.ask("What is PEPE?")
    tab.wait_turn(1)
    model.script(Reply(text=[ANSWER]))
    tab.ask("Compare vaults")
    tab.wait_turn(2)
    page.wait_for_selector(".answer table")
    assert serious_violations(page) == []
    # Open tool details and the thread list are checked too.
    page.click("details.tool summary")
    if width < 720:
        page.click("#toggle-sidebar")
        page.wait_for_selector("#scrim:not([hidden])")
    assert serious_violations(page) == []
    page.screenshot(path=str(artifacts / f"a11y-{width}-{theme}.png"))
    context.close()
    assert tab.errors == [], tab.errors


def test_keyboard_enter_sends_shift_enter_breaks_escape_stops(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    context, tab = open_tab(browser, runtime, 1200, 800)
    page = tab.open().page
    page.focus("#input")
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    assert page.input_value("#input") == "first line\nsecond line"
    model.script(Reply(text=[f"part {i} " for i in range(40)], chunk_delay_seconds=0.2))
    page.keyboard.press("Enter")
    page.wait_for_selector('#turns > li.turn[data-state="running"][aria-busy="true"]')
    assert tab.user_texts() == ["first line\nsecond line"]
    assert page.input_value("#input") == ""
    page.wait_for_function("() => document.querySelector('.answer').textContent.includes('part 1')")
    page.wait_for_selector("#announcer:has-text('answering')")
    # Escape stops the answer; what was written so far stays.
    page.keyboard.press("Escape")
    tab.wait_turn(1, "cancelled")
    assert "part 0" in tab.answers() and "part 39" not in tab.answers()
    page.wait_for_selector("#announcer:has-text('stopped')")
    assert page.get_attribute("#turns > li.turn", "aria-busy") == "false"
    context.close()
    assert tab.errors == [], tab.errors


def test_phone_width_has_no_sideways_scroll(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    context, tab = open_tab(browser, runtime, 375, 700)
    page = tab.open().page
    wide = "| " + " | ".join(f"Column {i}" for i in range(12)) + " |\n"
    wide += "|" + " --- |" * 12 + "\n| " + " | ".join(f"{i}.5%" for i in range(12)) + " |\n"
    script_tool_turn(model)
    tab.ask("What is PEPE?")
    tab.wait_turn(1)
    model.script(Reply(text=[wide]))
    tab.ask("A wide table please")
    tab.wait_turn(2)
    page.click("details.tool summary")
    # Only the table scrolls sideways; the page itself fits the phone.
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    box = page.eval_on_selector(".answer .table-scroll", "e => [e.scrollWidth, e.clientWidth]")
    assert box[0] > box[1]
    for selector in ("#input", "#send", "#toggle-sidebar", "#new-thread"):
        if selector == "#new-thread":
            page.click("#toggle-sidebar")
            page.wait_for_function(
                "() => document.querySelector('#sidebar').getBoundingClientRect().left >= 0"
            )
        rect = page.eval_on_selector(selector, "e => e.getBoundingClientRect().toJSON()")
        assert rect["left"] >= 0 and rect["right"] <= 375, (selector, rect)
    context.close()
    assert tab.errors == [], tab.errors
