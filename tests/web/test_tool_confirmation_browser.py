"""The question before a destructive remote tool runs, in real headless Chromium against the
local runtime, the scripted model and a real `mcp` SDK server that counts its calls."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.web.test_chat_browser import Page

pytestmark = pytest.mark.browser

# A bidi override, markup and padding in the path: each shown as text, the override and the
# padding escaped, on the open card (the server's text) and the stored one (the page's).
PATH = "/reports/q3.csv\u202e<b>x</b>   .bak"
SHOWN = "/reports/q3.csv\\u202e<b>x</b>  \\u0020.bak"


@pytest.fixture(scope="module")
def files() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("destructive") as server:
        yield server


@pytest.fixture
def tab(browser: Any, runtime: RuntimeProcess) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = Page(context.new_page(), runtime.url)
    policy: list[str] = []
    page.page.on(
        "console",
        lambda m: policy.append(m.text) if "Content Security Policy" in m.text else None,
    )
    yield page
    context.close()
    assert page.errors == [], page.errors
    assert policy == [], policy  # the card needs no inline script or style


def _add_server(tab: Page, runtime: RuntimeProcess, files: InProcessMcpServer) -> None:
    token = tab.page.evaluate("JSON.parse(localStorage.getItem('albert.session')).token")
    added = httpx.post(
        f"{runtime.url}/api/mcp/servers",
        json={"name": "files", "url": files.url},
        headers={"authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert added.status_code == 201, added.text
    tab.page.wait_for_selector(
        '#mcp .mcp-server[data-server="files"][data-state="ready"]', timeout=15_000
    )


def _script_delete(model: ScriptedModelServer, answer: str) -> None:
    model.script(
        Reply(
            text=["Deleting it. "],
            tool_calls=[ScriptedToolCall(name="delete_file", arguments={"path": PATH})],
        ),
        Reply(text=[answer]),
    )


def _asked_to_delete(
    tab: Page,
    model: ScriptedModelServer,
    runtime: RuntimeProcess,
    files: InProcessMcpServer,
    answer: str,
) -> tuple[Any, Any]:
    """A fresh page with the files server added, a turn asking to delete PATH, and the
    page with its open question (the card)."""
    files.served.clear()
    page = tab.open().page
    _add_server(tab, runtime, files)
    _script_delete(model, answer)
    tab.ask("Delete the q3 report")
    return page, page.wait_for_selector('.confirm[data-decision="pending"]')


def _wait_served(files: InProcessMcpServer, count: int) -> None:
    deadline = time.monotonic() + 10
    while files.served["delete_file"] < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_run_is_asked_shown_again_after_a_reload_and_runs_once(
    tab: Page, model: ScriptedModelServer, runtime: RuntimeProcess, files: InProcessMcpServer
) -> None:
    page, card = _asked_to_delete(tab, model, runtime, files, "Deleted the report.")
    assert card.query_selector(".confirm-server").inner_text() == "files"
    assert card.query_selector(".confirm-tool").inner_text() == "delete_file"
    shown = card.query_selector(".confirm-args").inner_text()
    assert SHOWN in shown and "\u202e" not in shown
    assert card.query_selector(".confirm-args b") is None  # text, never markup
    assert "up to 120 s" in card.query_selector(".confirm-status").inner_text()
    time.sleep(0.3)
    assert files.served["delete_file"] == 0

    # A reload while the question is open shows it again, still answerable.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    tab.wait_live()
    page.wait_for_selector('.confirm[data-decision="pending"] .confirm-run:not([disabled])')
    assert page.get_attribute("#turns > li.turn", "data-state") == "running"
    page.click(".confirm-run")

    tab.wait_turn(1)
    page.wait_for_selector('.confirm[data-decision="approved"]')
    assert page.is_disabled(".confirm-run") and page.is_disabled(".confirm-skip")
    assert page.inner_text(".confirm-status") == "You chose to run it."
    assert "Deleted the report." in tab.answers()
    _wait_served(files, 1)
    assert files.served["delete_file"] == 1
    assert page.get_attribute("details.tool[data-call-id]", "data-status") == "ok"

    # The stored thread keeps the decision.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    tab.wait_turn(1)
    page.wait_for_selector('.confirm[data-decision="approved"]')
    assert page.is_disabled(".confirm-run")
    assert SHOWN in page.inner_text(".confirm-args")
    assert page.query_selector(".confirm-args b") is None
    assert files.served["delete_file"] == 1


def test_dont_run_by_keyboard_never_calls_the_tool(
    tab: Page, model: ScriptedModelServer, runtime: RuntimeProcess, files: InProcessMcpServer
) -> None:
    page, _ = _asked_to_delete(tab, model, runtime, files, "Left it in place.")
    # Reachable with the keyboard: Tab moves from Run to Don't run, Enter answers.
    page.focus(".confirm-run")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Don't run"
    page.keyboard.press("Enter")
    tab.wait_turn(1)
    page.wait_for_selector('.confirm[data-decision="declined"]')
    assert page.is_disabled(".confirm-run") and page.is_disabled(".confirm-skip")
    assert "not to run" in page.inner_text(".confirm-status")
    # Focus stays on the card, not lost to the page.
    assert page.evaluate("document.activeElement.classList.contains('confirm')")
    assert page.get_attribute("details.tool[data-call-id]", "data-status") == "error"
    # The chip says it was declined (not that the tool failed), with its server.
    assert page.get_attribute("details.tool[data-call-id]", "data-outcome") == "declined"
    assert page.inner_text("details.tool .tool-status").endswith("Declined")
    assert page.inner_text("details.tool .tool-server") == "on files"
    assert "Left it in place." in tab.answers()
    time.sleep(0.3)
    assert files.served["delete_file"] == 0
