"""With a real model (here the scripted one, over real HTTP), the tool results of a turn are
drawn as cards under the model's text, and a reloaded thread draws them again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.web.test_chat_browser import Page

pytestmark = pytest.mark.browser

PEPE = "0x6982508145454Ce325dDbE47a25d4ec3d2311933"


@pytest.fixture
def tab(browser: Any, runtime: RuntimeProcess) -> Any:
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    page = Page(context.new_page(), runtime.url)
    yield page.open()
    context.close()
    assert page.errors == [], page.errors


def test_a_model_turn_s_tool_results_render_as_cards_under_its_text(
    tab: Page, model: ScriptedModelServer, artifacts: Path
) -> None:
    page = tab.page
    model.script(
        Reply(
            text=["Looking at the token and the news. "],
            tool_calls=[
                ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"}),
                ScriptedToolCall(name="search_feed", arguments={"query": "bitcoin", "limit": 2}),
                # Fails: a failed call has no card, its chip says what went wrong.
                ScriptedToolCall(name="analyze_address", arguments={"address": "0x12"}),
            ],
        ),
        Reply(text=["PEPE is a meme token on Ethereum; ", "see the card below."]),
    )
    tab.ask("What is PEPE and what is said about it?")
    turn = tab.wait_turn(1)
    kinds = turn.eval_on_selector_all(".cards > .card", "cs => cs.map(c => c.dataset.kind)")
    assert kinds == ["token", "feed"]
    # The cards come after every text part of the answer: under the model's words.
    order = turn.evaluate(
        "t => { const cards = t.querySelector('.cards');"
        " return [...t.querySelectorAll('.answer')].every("
        "a => a.compareDocumentPosition(cards) & Node.DOCUMENT_POSITION_FOLLOWING); }"
    )
    assert order is True
    token = turn.query_selector(".card-token")
    assert token.query_selector(".card-title").inner_text() == "Pepe (PEPE)"
    assert token.query_selector(".addr-short").get_attribute("title") == PEPE
    assert token.query_selector(".addr-explorer").get_attribute("href") == (
        f"https://etherscan.io/address/{PEPE}"
    )
    # No product base URL is configured: no token page link is made up.
    assert token.query_selector(".token-page") is None
    bands = token.query_selector_all(".chart-band svg[role='img']")
    assert [b.get_attribute("aria-label").split(":")[0] for b in bands] == [
        "Price of Pepe (PEPE) in the last 24 hours",
        "Price of Pepe (PEPE) against its all-time range, on a log scale",
    ]
    assert "$0.000007990 now, between $0.000007780 and $0.000008130" in (
        bands[0].get_attribute("aria-label")
    )
    assert "Data as of 2024-08-15" in token.inner_text()
    feed = turn.query_selector(".card-feed")
    assert len(feed.query_selector_all(".feed-item")) == 2
    for link in feed.query_selector_all("a"):
        assert link.get_attribute("href").startswith("https://")
        assert link.get_attribute("target") == "_blank"
    # No risk is rated here: no guidelines.
    assert turn.query_selector("details.guidelines") is None
    turn.screenshot(path=str(artifacts / "cards-model-turn.png"))
    before = turn.query_selector(".cards").inner_text()
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    again = page.wait_for_selector("#turns > li.turn .cards")
    assert again.inner_text() == before


HOSTILE = """async () => {
  const { renderCards } = await import('/js/cards.js');
  const hostile = '<img src=x onerror="window.__owned = 1">';
  const parts = [
    { type: 'tool', status: 'ok', name: 'search_vaults', callId: 'a', structured: {
      found: 1, sort_by: 'apy:desc', vaults: [{ name: hostile, url: 'javascript:alert(1)',
        protocol: '<b>p</b>', chain: hostile, apy: '12', tvl_usd: 5, risk_rating: '<i>x</i>',
        address: hostile }] } },
    { type: 'tool', status: 'ok', name: 'search_feed', callId: 'b', structured: { hits: [
      { item: { title: hostile, url: 'https://x.test/?a=undefined', source: hostile,
        published_at: hostile, body: hostile, tokens: [hostile] } }] } },
    // The wrong shape for its kind: no card, and nothing thrown.
    { type: 'tool', status: 'ok', name: 'wallet_portfolio', callId: 'c',
      structured: { positions: 'x' } },
    // A failed call: no card, whatever it carries.
    { type: 'tool', status: 'error', name: 'analyze_risk', callId: 'd',
      structured: { factors: [] } },
  ];
  const box = renderCards(parts);
  document.body.append(box);
  await new Promise((r) => setTimeout(r, 50));
  return {
    kinds: [...box.querySelectorAll('.card')].map((c) => c.dataset.kind),
    elements: box.querySelectorAll('img, b, i, script').length,
    links: [...box.querySelectorAll('a')].map((a) => a.getAttribute('href')),
    apy: box.querySelector('td.apy').textContent,
    text: box.textContent.includes(hostile),
    owned: window.__owned === 1,
  };
}"""


def test_tool_data_is_drawn_as_text_never_as_markup(tab: Page) -> None:
    # Structured content may come from a server we do not run: every value is text, links
    # are http(s) and not visibly broken, a value of the wrong type reads as unknown.
    drawn = tab.page.evaluate(HOSTILE)
    assert drawn["kinds"] == ["vaults", "feed"]
    assert drawn["elements"] == 0 and drawn["owned"] is False
    assert drawn["links"] == [] and drawn["apy"] == "—"
    assert drawn["text"] is True
