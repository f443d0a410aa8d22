"""Tool chips read at a glance: tool, server, state and time; failures visibly so."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.web.test_chat_browser import Page

pytestmark = pytest.mark.browser


@pytest.fixture
def tab(browser: Any, runtime: RuntimeProcess) -> Any:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = Page(context.new_page(), runtime.url)
    yield page.open()
    context.close()
    assert page.errors == [], page.errors


def test_a_done_and_a_failed_tool_show_how_they_went(tab: Page, model: ScriptedModelServer) -> None:
    page = tab.page
    model.script(
        Reply(
            tool_calls=[
                ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"}),
                ScriptedToolCall(name="no_such_tool", arguments={"x": 1}),
            ]
        ),
        Reply(text=["One worked."]),
    )
    tab.ask("Try two tools")
    tab.wait_turn(1)
    done = page.wait_for_selector('details.tool[data-outcome="ok"]')
    failed = page.wait_for_selector('details.tool[data-outcome="error"]')
    assert done.query_selector(".tool-status").inner_text().endswith("Done")
    assert done.query_selector(".tool-server").inner_text() == "built in"
    took = done.query_selector(".tool-took").inner_text()
    assert took.endswith(("ms", " s")), took
    assert failed.query_selector(".tool-status").inner_text().endswith("Failed")
    # A failed chip has a red edge (the error colour), not the neutral border.
    edge = failed.evaluate("e => getComputedStyle(e).borderLeftWidth")
    assert edge == "4px"
    # Expanding shows the arguments and the error the model saw.
    failed.query_selector("summary").click()
    assert '"x": 1' in failed.query_selector(".tool-args").inner_text()
    assert failed.query_selector(".tool-body .label:nth-of-type(2)").inner_text() == "Error"
    assert "no_such_tool" in failed.query_selector(".tool-result").inner_text()
