"""The Authorize button of an MCP server that needs OAuth, in headless Chromium.

The server pair is the `mcp` SDK's authorization server and an MCPServer that needs its
tokens (tests/support/oauth_servers.py); the authorization server approves at once, as if
the user pressed "Allow", and sends the new tab to the worker's callback.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.oauth_servers import GuardedServers, guarded_mcp
from tests.support.runtime_process import RuntimeProcess
from tests.web.test_chat_browser import Page

pytestmark = pytest.mark.browser

ADD_SERVER = """async (url) => {
  const session = JSON.parse(localStorage.getItem("albert.session"));
  const response = await fetch("/api/mcp/servers", {
    method: "POST",
    headers: {"content-type": "application/json", authorization: `Bearer ${session.token}`},
    body: JSON.stringify({name: "guarded", url}),
  });
  return response.status;
}"""


@pytest.fixture
def guarded() -> Iterator[GuardedServers]:
    with guarded_mcp() as servers:
        yield servers


def test_authorize_opens_the_authorization_and_the_server_becomes_ready(
    browser: Any, runtime: RuntimeProcess, guarded: GuardedServers
) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        tab = Page(context.new_page(), runtime.url).open()
        page = tab.page
        assert page.evaluate(ADD_SERVER, guarded.mcp_url) == 201
        chip = '#mcp .mcp-server[data-server="guarded"]'
        page.wait_for_selector(f'{chip}[data-state="needs_authorization"]')
        assert "needs authorization" in page.inner_text(chip)
        button = page.locator(f"{chip} button.mcp-authorize")
        assert button.get_attribute("aria-label") == "Authorize guarded"
        with context.expect_page() as opened:
            button.click()
        authorization = opened.value
        authorization.wait_for_url(f"{runtime.url}/api/mcp/oauth/callback?**")
        authorization.wait_for_selector("h1")
        assert authorization.inner_text("h1") == "Connected"
        # The authorization's tab could not reach back into the chat.
        assert authorization.evaluate("window.opener") is None
        # The chat learns it from the status frame, without a reload.
        page.wait_for_selector(f'{chip}[data-state="ready"]')
        assert page.locator(f"{chip} button.mcp-authorize").count() == 0
        assert tab.errors == []
    finally:
        context.close()
