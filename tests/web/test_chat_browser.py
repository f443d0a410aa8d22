"""The browser chat in real headless Chromium against the local runtime process."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from albert.analytics.event_catalog import BY_NAME
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

pytestmark = pytest.mark.browser

TIMEOUT_MS = 10_000
DEEP_LINK = "https://app.albert.example/token/ethereum/0x6982508145454Ce325dDbE47a25d4ec3d2311933"


class Page:
    """A chat tab with the helpers the tests share."""

    def __init__(self, page: Any, base_url: str) -> None:
        self.page = page
        self.base_url = base_url
        self.errors: list[str] = []
        page.set_default_timeout(TIMEOUT_MS)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("dialog", lambda dialog: dialog.accept())

    def open(self) -> Page:
        self.page.goto(self.base_url + "/")
        self.page.wait_for_selector("body[data-ready=true]")
        self.wait_live()
        return self

    def wait_live(self, timeout: float = TIMEOUT_MS) -> None:
        self.page.wait_for_selector('#conn[data-state="live"]', timeout=timeout)

    def ask(self, text: str) -> None:
        self.page.fill("#input", text)
        self.page.press("#input", "Enter")

    def wait_turn(self, index: int, state: str = "done") -> Any:
        selector = f'#turns > li.turn:nth-child({index})[data-state="{state}"]'
        return self.page.wait_for_selector(selector)

    def turn_ids(self) -> list[str]:
        return self.page.eval_on_selector_all(
            "#turns > li", "els => els.map(e => e.dataset.turnId)"
        )

    def user_texts(self) -> list[str]:
        return self.page.eval_on_selector_all(".msg-user", "els => els.map(e => e.textContent)")

    def answers(self) -> str:
        return "\n".join(
            self.page.eval_on_selector_all(".answer", "els => els.map(e => e.textContent)")
        )

    def threads(self) -> list[str]:
        return self.page.eval_on_selector_all(
            "#thread-list .thread", "els => els.map(e => e.dataset.threadId)"
        )

    def current_thread(self) -> str:
        return str(
            self.page.get_attribute('#thread-list .thread[aria-current="true"]', "data-thread-id")
        )

    def client_id(self) -> str:
        return str(
            self.page.evaluate("JSON.parse(localStorage.getItem('albert.session')).client_id")
        )


@pytest.fixture
def tab(browser: Any, runtime: RuntimeProcess) -> Any:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = Page(context.new_page(), runtime.url)
    yield page
    context.close()
    assert page.errors == [], page.errors


def script_tool_turn(model: ScriptedModelServer, *extra: ScriptedToolCall) -> None:
    model.script(
        Reply(
            text=["Let me look that up. "],
            tool_calls=[
                ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"}),
                *extra,
            ],
        ),
        Reply(
            text=["**PEPE** is ", "a meme token ", "on Ethereum.\n\n", "- chart: ", DEEP_LINK],
            chunk_delay_seconds=0.15,
        ),
    )


def test_chat_streams_tools_threads_history_and_theme(
    tab: Page, model: ScriptedModelServer, artifacts: Path
) -> None:
    page = tab.open().page
    page.click("#new-thread")
    page.wait_for_selector("#thread-list .thread")
    first = tab.current_thread()

    # Record every status a tool box shows, to see it running before it finishes.
    page.evaluate(
        """() => {
        window.__toolStates = [];
        new MutationObserver(() => document.querySelectorAll('details.tool').forEach(
            (d) => window.__toolStates.push(d.dataset.status)))
          .observe(document.body, {subtree: true, childList: true, attributes: true});
        }"""
    )
    script_tool_turn(
        model, ScriptedToolCall(name="search_feed", arguments={"query": "bitcoin", "limit": 2})
    )
    tab.ask("What is PEPE?")
    # The answer streams: part of it is on screen while the turn is still running.
    page.wait_for_function(
        "() => { const t = document.querySelector('#turns > li.turn');"
        " return t && t.dataset.state === 'running' && t.textContent.includes('PEPE** is')"
        " === false && t.textContent.includes('PEPE is') }"
    )
    assert page.is_visible("#stop")
    tab.wait_turn(1)
    assert not page.is_visible("#stop")

    tool = page.wait_for_selector('details.tool[data-status="ok"]')
    states = page.evaluate("window.__toolStates")
    assert states.index("running") < states.index("ok")
    names = page.eval_on_selector_all(".tool-name", "els => els.map(e => e.textContent)")
    assert names == ["analyze_token", "search_feed"]
    assert tool.query_selector(".tool-meta").text_content().endswith("ms")
    assert not page.is_visible(".tool-result")
    tool.query_selector("summary").click()
    assert "Pepe" in page.inner_text(".tool-result")
    assert '"symbol": "PEPE"' in page.inner_text(".tool-args")
    # Links in a tool result (the feed's article links) are clickable, and only those.
    page.click('details.tool:has-text("search_feed") summary')
    links = page.query_selector_all('details.tool:has-text("search_feed") .tool-result a')
    assert len(links) == 2
    for link in links:
        assert link.get_attribute("href").startswith("https://cryptopanic.com/news/")
        assert link.get_attribute("rel") == "noopener noreferrer"

    answer = page.inner_html(".answer:last-of-type")
    assert "<strong>PEPE</strong>" in answer
    link = page.wait_for_selector(f'.answer a[href="{DEEP_LINK}"]')
    assert link.get_attribute("rel") == "noopener noreferrer"
    # The first question's subject becomes the thread's title.
    page.wait_for_function("() => document.querySelector('#thread-title').textContent === 'PEPE'")

    # A second thread, then back to the first: nothing lost, nothing doubled.
    page.click("#new-thread")
    page.wait_for_function("() => document.querySelectorAll('#thread-list .thread').length === 2")
    second = tab.current_thread()
    assert second != first
    assert page.is_visible("#empty")
    tab.ask("Hello there")
    tab.wait_turn(1)
    assert "Scripted answer." in tab.answers()
    page.click(f'#thread-list .thread[data-thread-id="{first}"] .thread-open')
    page.wait_for_function("() => document.querySelector('#turns .tool') !== null")
    assert tab.user_texts() == ["What is PEPE?"]
    assert len(tab.turn_ids()) == 1

    # Rename the second thread.
    page.click(f'#thread-list .thread[data-thread-id="{second}"] .thread-rename')
    page.fill(".thread-rename-input", "Greetings")
    page.press(".thread-rename-input", "Enter")
    page.wait_for_selector(f'#thread-list .thread[data-thread-id="{second}"] >> text=Greetings')

    # Reload: the same thread comes back with its history from the server.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector('details.tool[data-status="ok"]')
    assert tab.current_thread() == first
    assert tab.user_texts() == ["What is PEPE?"]
    assert "PEPE is a meme token on Ethereum." in tab.answers()
    assert page.is_visible(f'.answer a[href="{DEEP_LINK}"]')
    assert "Greetings" in page.inner_text("#thread-list")

    # Theme: light, then dark, remembered across a reload.
    page.evaluate("localStorage.removeItem('albert.theme')")
    page.evaluate("document.documentElement.dataset.theme = 'light'")
    page.screenshot(path=str(artifacts / "chat-light.png"))
    page.click("#toggle-theme")
    assert page.get_attribute("html", "data-theme") == "dark"
    page.screenshot(path=str(artifacts / "chat-dark.png"))
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.get_attribute("html", "data-theme") == "dark"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == background
    page.click("#toggle-theme")
    assert page.get_attribute("html", "data-theme") == "light"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != background

    # The conversation list hides and comes back.
    page.click("#toggle-sidebar")
    page.wait_for_function(
        "() => document.querySelector('#sidebar').getBoundingClientRect().right <= 0"
    )
    page.click("#toggle-sidebar")
    page.wait_for_function(
        "() => document.querySelector('#sidebar').getBoundingClientRect().left >= 0"
    )

    # Delete the second thread.
    page.click(f'#thread-list .thread[data-thread-id="{second}"] .thread-delete')
    page.wait_for_function("() => document.querySelectorAll('#thread-list .thread').length === 1")
    assert tab.threads() == [first]


def test_restart_reconnects_with_nothing_lost_or_doubled(
    tab: Page, model: ScriptedModelServer, runtime: RuntimeProcess
) -> None:
    page = tab.open().page
    tab.ask("First question")
    tab.wait_turn(1)
    model.script(Reply(text=["Second ", "answer."]))
    tab.ask("Second question")
    tab.wait_turn(2)
    before_ids = tab.turn_ids()
    before_answers = tab.answers()

    runtime.stop()
    page.wait_for_selector('#conn[data-state="reconnecting"]')
    assert page.inner_text("#conn-label") == "Reconnecting…"
    # Asked while the server is down: kept, and sent once the socket is back.
    model.script(Reply(text=["After ", "restart."]))
    tab.ask("Still there?")
    page.wait_for_selector(".msg-user.pending")
    runtime.start()
    tab.wait_live(timeout=20_000)
    tab.wait_turn(3)
    page.wait_for_timeout(300)
    assert tab.turn_ids()[:2] == before_ids
    assert len(set(tab.turn_ids())) == 3
    assert tab.user_texts() == ["First question", "Second question", "Still there?"]
    assert tab.answers() == before_answers + "\nAfter restart."

    # What the page shows is what the server stored, once each.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    tab.wait_turn(3)
    assert tab.user_texts() == ["First question", "Second question", "Still there?"]
    assert tab.answers() == before_answers + "\nAfter restart."


def test_a_socket_dropped_mid_answer_resumes_with_nothing_lost_or_repeated(
    tab: Page, model: ScriptedModelServer
) -> None:
    sockets: list[tuple[Any, Any]] = []

    def relay(route: Any) -> None:
        # The page's socket goes through the test, so the test can cut it like a network drop.
        sockets.append((route, route.connect_to_server()))

    tab.page.route_web_socket(re.compile(r"/api/chat"), relay)
    page = tab.open().page
    words = [f"word{i} " for i in range(40)]
    model.script(Reply(text=words, chunk_delay_seconds=0.08))
    tab.ask("Stream a long answer")
    page.wait_for_function(
        "() => (document.querySelector('.answer')?.textContent || '').includes('word6')"
    )
    route, server = sockets[-1]
    route.close()
    server.close()
    page.wait_for_selector('#conn[data-state="reconnecting"]')
    tab.wait_live(timeout=20_000)
    assert len(sockets) == 2
    # Still mid-answer after the reconnect: the rest streams in, it does not jump in at the end.
    page.wait_for_function(
        "() => (document.querySelector('.answer')?.textContent || '').includes('word30')"
    )
    live = page.inner_text(".answer").split()
    assert page.get_attribute("#turns > li.turn", "data-state") == "running"
    # Nothing lost, nothing repeated: a contiguous prefix of the answer, from its first word.
    assert live == [w.strip() for w in words[: len(live)]], live
    tab.wait_turn(1)
    assert tab.answers().split() == [w.strip() for w in words]


def test_an_answer_cut_off_by_kill_9_ends_with_its_text_and_a_retry(
    tab: Page, model: ScriptedModelServer, runtime: RuntimeProcess
) -> None:
    page = tab.open().page
    model.script(
        Reply(text=["Partial ", "answer ", "never ", "finished."], pause_after_chunks=3,
              pause_seconds=120)
    )  # fmt: skip
    tab.ask("Start answering")
    page.wait_for_function(
        "() => (document.querySelector('.answer')?.textContent || '').includes('answer')"
    )
    runtime.kill()  # SIGKILL mid-answer: no goodbye frame, no close code
    page.wait_for_selector('#conn[data-state="reconnecting"]')
    runtime.start()
    tab.wait_live(timeout=20_000)
    # The resume is answered with turn_interrupted: no endless typing, the text is kept.
    tab.wait_turn(1, "error")
    assert page.text_content(".turn-error code") == "interrupted"  # folded under Details
    assert "restart" in page.inner_text(".turn-error")
    assert tab.answers().strip() == "Partial answer"
    assert page.query_selector(".answer.typing") is None
    assert not page.is_visible("#stop")
    model.script(Reply(text=["Whole ", "answer."]))
    page.locator(".turn-error button.retry").click()
    tab.wait_turn(1)
    assert tab.user_texts() == ["Start answering"]
    assert "Whole answer." in tab.answers()


def test_the_vault_server_connection_state_is_shown(tab: Page) -> None:
    page = tab.open().page
    # This runtime's default MCP server (wrangler.toml's) cannot be reached from here.
    chip = page.wait_for_selector('#mcp .mcp-server[data-server="vaults"]')
    assert chip.get_attribute("data-state") in ("connecting", "reconnecting", "failed")
    assert chip.inner_text().startswith("vaults: ")
    assert page.is_visible("#mcp")


XSS = "<img src=x onerror=window.__xss=1><script>window.__xss=2</script>"
EVIL_TOOL = "<img src=x onerror=window.__xss=3>"


def test_model_and_tool_text_render_as_text(tab: Page, model: ScriptedModelServer) -> None:
    page = tab.open().page
    model.script(
        Reply(tool_calls=[ScriptedToolCall(name=EVIL_TOOL, arguments={"q": XSS})]),
        Reply(text=["Here: ", XSS, " and [x](javascript:alert(1)) **ok**"]),
    )
    tab.ask(XSS)
    tab.wait_turn(1)
    # The unknown tool's error result quotes the name it was given: still text.
    page.click("details.tool summary")
    assert page.is_visible('details.tool[data-status="error"]')
    assert XSS in page.inner_text(".tool-args")
    assert page.inner_text(".tool-name") == EVIL_TOOL
    assert EVIL_TOOL in page.inner_text(".tool-result")
    assert XSS in page.inner_text(".answer")
    assert XSS in page.inner_text(".msg-user")
    assert page.query_selector_all("#turns img") == []
    assert page.query_selector_all("#turns script") == []
    assert page.query_selector_all('#turns a[href^="javascript"]') == []
    assert page.evaluate("window.__xss === undefined")
    assert page.inner_html(".answer strong") == "ok"


def test_errors_retry_and_stop(tab: Page, model: ScriptedModelServer) -> None:
    page = tab.open().page
    model.script(Reply(status=503, error_message="gateway is down"))
    tab.ask("Will this fail?")
    tab.wait_turn(1, "error")
    # Plain words in sight; the code and the status folded under "Details".
    assert "had a problem" in page.inner_text(".turn-error")
    assert "model_error" not in page.inner_text(".turn-error")
    page.click(".turn-error details summary")
    assert page.inner_text(".turn-error code").startswith("model_error: ")
    assert "503" in page.inner_text(".turn-error code")
    model.script(Reply(text=["Worked ", "this time."]))
    page.locator(".turn-error button.retry").click()
    tab.wait_turn(1)
    assert tab.user_texts() == ["Will this fail?"]
    assert "Worked this time." in tab.answers()
    assert page.query_selector(".turn-error") is None

    model.script(Reply(text=[f"word{i} " for i in range(40)], chunk_delay_seconds=0.1))
    tab.ask("Talk for a while")
    page.wait_for_selector("#stop:not([hidden])")
    page.wait_for_function("() => document.querySelectorAll('.answer').length >= 2")
    page.click("#stop")
    tab.wait_turn(2, "cancelled")
    assert page.is_visible(".turn-note >> text=Stopped.")
    assert not page.is_visible("#stop")


def test_usable_at_phone_width(browser: Any, runtime: RuntimeProcess, artifacts: Path) -> None:
    context = browser.new_context(viewport={"width": 380, "height": 760}, is_mobile=True)
    tab = Page(context.new_page(), runtime.url)
    try:
        page = tab.open().page
        # The list starts hidden on a phone and nothing overflows sideways.
        assert page.evaluate(
            "document.querySelector('#sidebar').getBoundingClientRect().right <= 0"
        )
        assert page.evaluate("document.documentElement.scrollWidth <= 380")
        tab.ask("Hi from a phone")
        tab.wait_turn(1)
        box = page.query_selector("#send").bounding_box()
        assert box is not None and box["x"] + box["width"] <= 380
        page.click("#toggle-sidebar")
        page.wait_for_function(
            "() => document.querySelector('#sidebar').getBoundingClientRect().left >= 0"
        )
        page.screenshot(path=str(artifacts / "chat-phone.png"))
        page.click("#thread-list .thread-open")
        page.wait_for_function(
            "() => document.querySelector('#sidebar').getBoundingClientRect().right <= 0"
        )
    finally:
        context.close()
    assert tab.errors == []


def read_events(path: Path, client_id: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in events if e.get("user_id") == client_id]


def test_analytics_events_from_browser_and_server(
    tab: Page, model: ScriptedModelServer, events_log: Path
) -> None:
    page = tab.open().page
    client_id = tab.client_id()
    page.click("#toggle-theme")
    page.click("#toggle-sidebar")
    page.click("#toggle-sidebar")
    script_tool_turn(model)
    tab.ask("What is PEPE?")
    tab.wait_turn(1)
    page.click("#new-thread")
    page.wait_for_function("() => document.querySelectorAll('#thread-list .thread').length === 2")
    page.click("#thread-list .thread:nth-child(2) .thread-open")
    page.wait_for_selector("details.tool")

    wanted = {
        "session_started",
        "theme_toggled",
        "conversation_list_toggled",
        "message_submitted",
        "thread_switched",
        "thread_created",
        "thread_loaded",
        "message_sent",
        "tool_invoked",
        "ai_response_generated",
    }
    for _ in range(50):
        events = read_events(events_log, client_id)
        if wanted <= {e["event_type"] for e in events}:
            break
        page.wait_for_timeout(100)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        # Every event is one of the catalog's, with exactly its typed fields.
        BY_NAME[event["event_type"]].model_validate(event["event_properties"], strict=True)
        assert event["side"] == BY_NAME[event["event_type"]].side
        by_type.setdefault(event["event_type"], []).append(event["event_properties"])
    assert wanted <= set(by_type), sorted(by_type)

    assert by_type["session_started"][0] == {"theme": "light", "viewport_width": 1200}
    assert by_type["theme_toggled"] == [{"theme": "dark"}]
    assert by_type["conversation_list_toggled"] == [{"visible": False}, {"visible": True}]
    assert by_type["message_submitted"] == [{"chars": 13, "retry": False}]
    assert {"new_thread": True} in by_type["thread_switched"]
    assert by_type["message_sent"][0]["chars"] == 13
    assert by_type["message_sent"][0]["retry"] is False
    (tool,) = by_type["tool_invoked"]
    assert tool["tool"] == "analyze_token"
    assert tool["source"] == "local"
    assert tool["server"] is None
    assert tool["ok"] is True and tool["truncated"] is False and tool["outcome"] == "ok"
    assert tool["duration_ms"] > 0
    response = by_type["ai_response_generated"][0]
    assert response["steps"] == 2
    assert response["finish_reason"] == "stop"
    assert response["prompt_tokens"] == 22 and response["completion_tokens"] == 14
    assert response["latency_ms"] > 0
    assert response["model"]
    assert len(by_type["thread_created"]) == 2

    # Leaving the page sends session_ended by beacon.
    page.goto("about:blank")
    for _ in range(50):
        ended = [
            e for e in read_events(events_log, client_id) if e["event_type"] == "session_ended"
        ]
        if ended:
            break
        time.sleep(0.1)
    assert len(ended) == 1
    assert ended[0]["event_properties"]["duration_ms"] > 0


def test_a_rejected_token_is_replaced_and_chat_goes_on(tab: Page) -> None:
    page = tab.page
    page.goto(tab.base_url + "/healthz")
    forged = {"client_id": "c_" + "x" * 24, "token": "not.a-token", "expires_at": 4_000_000_000}
    page.evaluate(f"localStorage.setItem('albert.session', JSON.stringify({json.dumps(forged)}))")
    tab.open()
    session = page.evaluate("JSON.parse(localStorage.getItem('albert.session'))")
    assert session["token"] != forged["token"]
    tab.ask("Hello again")
    tab.wait_turn(1)
    assert "Scripted answer." in tab.answers()
