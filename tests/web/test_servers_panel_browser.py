"""The MCP servers panel in headless Chromium against the local runtime.

The runtime's default server (wrangler.toml's "vaults") cannot be reached from here and is
read-only; the test adds a server whose port refuses every connection, and a real MCP
server (the vault profile of tests/support/mcp_test_server.py, in this process), through
the panel's form.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.runtime_process import RuntimeProcess
from tests.web.test_accessibility_browser import open_tab, serious_violations
from tests.web.test_chat_browser import Page

pytestmark = pytest.mark.browser

# Connecting to a server and its first status frame: a loaded machine gets slack.
SLOW_MS = 20_000
DIALOG = "dialog#servers-dialog[open]"

LIST_SERVERS = """async () => {
  const session = JSON.parse(localStorage.getItem("albert.session"));
  const response = await fetch("/api/mcp/servers", {
    headers: {authorization: `Bearer ${session.token}`},
  });
  return (await response.json()).servers;
}"""

ADD_SERVER = """async ([name, url]) => {
  const session = JSON.parse(localStorage.getItem("albert.session"));
  const response = await fetch("/api/mcp/servers", {
    method: "POST",
    headers: {"content-type": "application/json", authorization: `Bearer ${session.token}`},
    body: JSON.stringify({name, url}),
  });
  return response.status;
}"""


@pytest.fixture(scope="module")
def vaults() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("vaults") as server:
        yield server


def item(name: str) -> str:
    return f'{DIALOG} li.server-item[data-server="{name}"]'


def focused(page: Any) -> str:
    return str(
        page.evaluate(
            "() => { const a = document.activeElement;"
            " return (a.id || a.dataset.action || a.className || a.tagName) + '|' +"
            " (a.closest('[data-server]')?.dataset.server || ''); }"
        )
    )


def test_add_see_errors_reconnect_edit_and_remove_servers(
    browser: Any, runtime: RuntimeProcess, vaults: InProcessMcpServer, closed_port: int
) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        tab = Page(context.new_page(), runtime.url).open()
        page = tab.page
        page.click("#open-servers")
        page.wait_for_selector(DIALOG)
        assert page.inner_text(f"{DIALOG} h2") == "MCP servers"
        # The deployment's server: read-only, explained, no Edit or Remove.
        default = page.wait_for_selector(item("vaults"))
        assert "read-only" in default.inner_text()
        assert default.query_selector('[data-action="remove"]') is None
        assert default.query_selector('[data-action="edit"]') is None

        # A bad name is refused next to the name field, before anything is sent.
        page.click(f"{DIALOG} button.servers-add")
        assert focused(page) == "server-name|"
        page.fill("#server-name", "Bad Name!")
        page.fill("#server-url", "http://127.0.0.1:9/mcp")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector("#server-name-error:not([hidden])")
        assert "lower-case letters" in page.inner_text("#server-name-error")
        assert page.get_attribute("#server-name", "aria-invalid") == "true"
        assert focused(page) == "server-name|"
        # The server's refusal lands beside the field it names (here the URL).
        page.fill("#server-name", "bogus")
        page.fill("#server-url", "http://10.0.0.1/mcp")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector("#server-url-error:not([hidden])")
        assert "refused" in page.inner_text("#server-url-error")
        assert page.is_hidden("#server-name-error")

        # A server nobody answers: its state and its error in words, in the panel.
        page.fill("#server-url", f"http://127.0.0.1:{closed_port}/mcp")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector(f"{item('bogus')} .server-error", timeout=SLOW_MS)
        assert page.is_hidden(f"{DIALOG} .server-form")
        assert page.inner_text(f"{item('bogus')} .server-error").startswith("Last error: ")
        words = page.inner_text(f"{item('bogus')} .server-state-words")
        assert words.startswith(("reconnecting", "unavailable")), words
        chip = page.get_attribute(
            '#mcp .mcp-server[data-server="bogus"] button.mcp-chip', "aria-label"
        )
        assert chip is not None and "not connected" in chip

        # A working server, with a header and a kind: its tools, renamed ones marked.
        page.click(f"{DIALOG} button.servers-add")
        page.fill("#server-name", "mine")
        page.fill("#server-url", vaults.url)
        page.select_option("#server-kind", "vaults")
        page.click(f"{DIALOG} .server-add-header")
        page.fill(f"{DIALOG} .header-row .header-name", "X-Team")
        page.fill(f"{DIALOG} .header-row .header-value", "blue")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        renamed = f'{item("mine")} .server-tools li[data-renamed="true"]'
        page.wait_for_selector(renamed, timeout=SLOW_MS)
        tools = page.inner_text(f"{item('mine')} .server-tools")
        assert "search_vaults, offered as mine__search_vaults" in tools
        assert page.get_attribute(item("mine"), "data-state") == "ready"
        assert "ready" in page.inner_text(f"{item('mine')} .server-state-words")

        # Reconnect now: it connects afresh and is ready again.
        page.click(f'{item("mine")} [data-action="reconnect"]')
        page.wait_for_selector(f'{DIALOG} .servers-message:text("Reconnecting mine.")')
        page.wait_for_selector(f'{item("mine")}[data-state="ready"]', timeout=SLOW_MS)

        # Edit: the form is filled in; the stored header's value is kept without being seen.
        page.click(f'{item("mine")} [data-action="edit"]')
        assert page.input_value("#server-name") == "mine"
        assert page.get_attribute("#server-name", "readonly") is not None
        assert page.input_value("#server-url") == vaults.url
        assert page.input_value("#server-kind") == "vaults"
        assert page.input_value(f"{DIALOG} .header-row .header-name") == "X-Team"
        assert page.input_value(f"{DIALOG} .header-row .header-value") == ""
        page.select_option("#server-kind", "generic")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector(f'{DIALOG} .servers-message:text("Saved mine.")')
        [mine] = [s for s in page.evaluate(LIST_SERVERS) if s["name"] == "mine"]
        assert (mine["kind"], mine["header_names"]) == ("generic", ["X-Team"])

        # Switched off in the form: kept, shown off, not connected; then on again.
        page.click(f'{item("mine")} [data-action="edit"]')
        assert page.is_checked("#server-enabled")
        page.uncheck("#server-enabled")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector(f'{item("mine")}[data-state="disabled"]')
        [mine] = [s for s in page.evaluate(LIST_SERVERS) if s["name"] == "mine"]
        assert mine["enabled"] is False and mine["header_names"] == ["X-Team"]
        page.click(f'{item("mine")} [data-action="edit"]')
        assert not page.is_checked("#server-enabled")
        page.check("#server-enabled")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector(f'{item("mine")}[data-state="ready"]', timeout=SLOW_MS)

        # Remove, with a confirm step (Keep first), and the chip goes too.
        page.click(f'{item("bogus")} [data-action="remove"]')
        assert focused(page) == "cancel-remove|bogus"
        page.click(f'{item("bogus")} [data-action="confirm-remove"]')
        page.wait_for_selector(item("bogus"), state="detached")
        page.wait_for_selector('#mcp .mcp-server[data-server="bogus"]', state="detached")
        assert sorted(s["name"] for s in page.evaluate(LIST_SERVERS)) == ["mine", "vaults"]

        # Escape closes the panel, and focus is back on the button that opened it.
        page.keyboard.press("Escape")
        page.wait_for_selector("dialog#servers-dialog", state="hidden")
        assert focused(page) == "open-servers|"
        # A chip opens the panel on its server.
        page.click('#mcp .mcp-server[data-server="mine"] button.mcp-chip')
        page.wait_for_selector(DIALOG)
        # Focus moves to it once the panel has loaded the servers.
        page.wait_for_function("() => document.activeElement.textContent === 'mine'")
        page.keyboard.press("Escape")
        page.wait_for_selector("dialog#servers-dialog", state="hidden")
        assert tab.errors == [], tab.errors
    finally:
        context.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_no_serious_violation_with_the_panel_open(
    browser: Any,
    runtime: RuntimeProcess,
    vaults: InProcessMcpServer,
    closed_port: int,
    theme: str,
    artifacts: Path,
) -> None:
    context, tab = open_tab(browser, runtime, 1200, 900)
    try:
        page = tab.open().page
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        assert page.evaluate(ADD_SERVER, ["bogus", f"http://127.0.0.1:{closed_port}/mcp"]) == 201
        assert page.evaluate(ADD_SERVER, ["mine", vaults.url]) == 201
        page.wait_for_selector('#mcp .mcp-server[data-server="mine"] button.mcp-chip')
        page.click('#mcp .mcp-server[data-server="mine"] button.mcp-chip')
        page.wait_for_selector(f"{item('bogus')} .server-error", timeout=SLOW_MS)
        page.wait_for_selector(f"{item('mine')} .server-tools", timeout=SLOW_MS)
        assert serious_violations(page) == []
        # The form with an inline error, and a removal waiting for its confirmation.
        page.click(f"{DIALOG} button.servers-add")
        page.click(f"{DIALOG} .server-add-header")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector("#server-name-error:not([hidden])")
        page.click(f'{item("bogus")} [data-action="remove"]')
        assert serious_violations(page) == []
        page.screenshot(path=str(artifacts / f"servers-panel-{theme}.png"), full_page=True)
        assert tab.errors == [], tab.errors
    finally:
        context.close()


def test_careless_input_keeps_servers_and_focus(
    browser: Any, runtime: RuntimeProcess, closed_port: int
) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        tab = Page(context.new_page(), runtime.url).open()
        page = tab.page
        # A failed load says so, and not also that there are no servers.
        page.route(
            "**/api/mcp/servers",
            lambda route: route.fulfill(
                status=500,
                body='{"error": "internal", "detail": "<b>boom</b>"}',
                headers={"content-type": "application/json"},
            ),
        )
        page.click("#open-servers")
        page.wait_for_selector(f"{DIALOG} .servers-load-error:not([hidden])")
        assert "<b>boom</b>" in page.inner_text(f"{DIALOG} .servers-load-error")
        assert page.query_selector(f"{DIALOG} .servers-empty") is None
        page.keyboard.press("Escape")
        page.unroute("**/api/mcp/servers")

        url = f"http://127.0.0.1:{closed_port}/mcp?q=<img/src=x/onerror=alert(1)>"
        assert page.evaluate(ADD_SERVER, ["taken", url]) == 201
        page.click("#open-servers")
        page.wait_for_selector(item("taken"))
        assert page.inner_text(f"{item('taken')} .server-url") == url
        assert page.query_selector(f"{DIALOG} img") is None

        # Adding under a stored name is refused beside the name: it would replace that server.
        page.click(f"{DIALOG} button.servers-add")
        page.fill("#server-name", "taken")
        page.fill("#server-url", "http://127.0.0.1:9/other")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector("#server-name-error:not([hidden])")
        assert "already" in page.inner_text("#server-name-error")
        assert focused(page) == "server-name|"
        [taken] = [s for s in page.evaluate(LIST_SERVERS) if s["name"] == "taken"]
        assert taken["url"] == url

        # Header rows are named by their place, also after one is removed.
        for _ in range(3):
            page.click(f"{DIALOG} .server-add-header")
        labels = "els => els.map(e => e.getAttribute('aria-label'))"
        page.click(f"{DIALOG} .header-row:first-child .server-remove-header")
        assert page.eval_on_selector_all(f"{DIALOG} .header-row > *", labels) == [
            "Header 1 name",
            "Header 1 value",
            "Remove header 1",
            "Header 2 name",
            "Header 2 value",
            "Remove header 2",
        ]

        # A refusal of the whole form keeps focus in it.
        page.route(
            "**/api/mcp/servers",
            lambda route: (
                route.fulfill(
                    status=409,
                    body='{"error": "too_many", "detail": "at most 10 MCP servers per client"}',
                    headers={"content-type": "application/json"},
                )
                if route.request.method == "POST"
                else route.continue_()
            ),
        )
        for row in page.query_selector_all(f"{DIALOG} .header-row .server-remove-header"):
            row.click()
        page.fill("#server-name", "eleventh")
        page.click(f"{DIALOG} .server-form button[type=submit]")
        page.wait_for_selector(f"{DIALOG} .form-error:not([hidden])")
        assert "at most 10" in page.inner_text(f"{DIALOG} .form-error")
        assert page.evaluate(
            "() => document.querySelector('dialog').contains(document.activeElement)"
        )
        assert page.evaluate("() => document.activeElement.type") == "submit"
        page.unroute("**/api/mcp/servers")

        # Removing the server being edited closes its form: saving it would add it again.
        # A double click on Remove removes it once, and says so.
        deletes: list[str] = []
        page.on("request", lambda r: deletes.append(r.url) if r.method == "DELETE" else None)
        page.click(f"{DIALOG} .server-form button:text('Cancel')")
        page.click(f'{item("taken")} [data-action="edit"]')
        page.click(f'{item("taken")} [data-action="remove"]')
        page.dblclick(f'{item("taken")} [data-action="confirm-remove"]')
        page.wait_for_selector(item("taken"), state="detached")
        page.wait_for_selector(f'{DIALOG} .servers-message:text("Removed taken.")')
        assert len(deletes) == 1, deletes
        assert page.is_hidden(f"{DIALOG} .server-form")
        assert page.is_visible(f"{DIALOG} button.servers-add")
        assert tab.errors == [], tab.errors
    finally:
        context.close()
