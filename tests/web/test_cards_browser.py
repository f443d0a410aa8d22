"""Answers people can look at: the demo planner's answers on the whole local stack (`albert
dev`: Typesense, demo data, data server, local chains), in headless Chromium.

Each result with structured content is drawn as its card (web/js/cards.js) under a short
lead sentence: a wallet as holdings and positions tables, a vault's history as SVG charts,
vaults as a table whose APY stays in view on a phone; and no answer shows an index id, a
parameter name, a repository path or a broken link.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.runtime_process import RuntimeProcess
from tests.web.test_accessibility_browser import serious_violations
from tests.web.test_chat_browser import Page

pytestmark = pytest.mark.browser

FARMER = "0x257BC0C6921b4ae476E65A28744ee181cd81c533"
# A pool with 882 daily points in the demo world's recorded history.
WETH_USDT = "defillama:ethereum:3603d576-a4d7-4317-9ae1-bf451b3e637a"
TURN_MS = 60_000

# What must never reach a reader: an index id, a parameter or field name (snake_case, or
# name=value), a repository path, a value a link was built without.
INTERNAL = {
    "index id": re.compile(r"\b[a-z]+:[a-z0-9-]+:[0-9a-fx-]{8,}", re.IGNORECASE),
    "parameter name": re.compile(r"\b[a-z]+_[a-z0-9_]+\b"),
    "name=value": re.compile(r"\b[a-z_]+=\S"),
    "repository path": re.compile(r"\b(?:data_server|demo_planner|src/albert)\b|\w/\w+\.py\b"),
    "undefined": re.compile(r"\bundefined\b"),
}

# The turn as a reader sees it: the answer and its cards (not the question, which the user
# typed, nor the folded tool chips, which show the call as it was made).
SEEN_TEXT = """(li) => {
  const copy = li.cloneNode(true);
  copy.querySelectorAll('details.tool, .msg-user-wrap, .msg-actions').forEach((e) => e.remove());
  copy.querySelectorAll('details.guidelines').forEach((d) => d.setAttribute('open', ''));
  return copy.textContent;
}"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeProcess]:
    process = RuntimeProcess(tmp_path_factory.mktemp("cards-stack"), command="dev")
    # start() then stop(): `with process.start()` would enter the process a second time.
    process.start(timeout=180)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def open_tab(browser: Any, stack: RuntimeProcess) -> Iterator[Any]:
    contexts: list[Any] = []
    tabs: list[Page] = []

    def opener(width: int = 1200, theme: str = "light", axe: bool = False) -> Page:
        # Only a context that injects axe-core lifts the CSP (for that one script).
        context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=axe)
        contexts.append(context)
        tab = Page(context.new_page(), stack.url).open()
        tab.page.set_default_timeout(TURN_MS)
        if theme == "dark":
            tab.page.click("#toggle-theme")
        tabs.append(tab)
        return tab

    yield opener
    for context in contexts:
        context.close()
    for tab in tabs:
        assert tab.errors == [], tab.errors


def ask(tab: Page, question: str, index: int) -> Any:
    tab.ask(question)
    return tab.page.wait_for_selector(
        f'#turns > li.turn:nth-child({index})[data-state="done"]', timeout=TURN_MS
    )


def test_a_wallet_answer_renders_holdings_and_positions_tables(
    open_tab: Any, artifacts: Path
) -> None:
    tab = open_tab()
    turn = ask(tab, f"Show my portfolio {FARMER}", 1)
    card = turn.wait_for_selector(".cards .card-wallet")
    heads = card.eval_on_selector_all(
        ".card-section",
        "ss => ss.map(s => [s.querySelector('h4').textContent, "
        "[...s.querySelectorAll('th')].map(t => t.textContent)])",
    )
    assert ["Holdings", ["Token", "Amount", "Value", "Share"]] in heads
    assert ["Vault positions", ["Vault", "Value", "APY", "Share", "Risk"]] in heads
    holdings = card.eval_on_selector_all(
        ".card-section:first-of-type tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.innerText.split('\\n')[0]))",
    )
    assert ["USDC", "12,500.5", "$12,500.50", "18.86%"] in holdings
    assert card.inner_text().count("$66,291.71") == 1
    # Addresses are short, with the whole one a click away (copy) and the explorer another.
    short = card.query_selector(".addr .addr-short")
    assert short is not None and short.inner_text() == "0x257B…c533"
    assert short.get_attribute("title") == FARMER
    explorer = card.query_selector(".card-head .addr-explorer")
    assert explorer.get_attribute("href") == f"https://etherscan.io/address/{FARMER}"
    assert explorer.get_attribute("rel") == "noopener noreferrer"
    # The answer's own words are one lead sentence: no bullet list of full addresses.
    answer = turn.query_selector(".answer").inner_text()
    assert "This wallet holds $66,291.71 of known value across 12 positions" in answer
    assert not re.search(r"0x[0-9a-fA-F]{40}", answer) and "wallet_portfolio" not in answer
    # The guidelines, once, folded; unfolded, they stay so when the turn is drawn again.
    assert turn.eval_on_selector_all("details.guidelines", "ds => ds.map(d => d.open)") == [False]
    tab.page.click("#turns details.guidelines summary")
    tab.page.click("#turns .feedback-up")
    tab.page.wait_for_selector("#turns .feedback-comment")
    assert tab.page.eval_on_selector("#turns details.guidelines", "d => d.open") is True
    # A reloaded thread draws the same card from what was stored.
    card = tab.page.query_selector("#turns .cards .card-wallet")
    before = card.inner_text()
    tab.page.screenshot(path=str(artifacts / "cards-wallet.png"), full_page=True)
    tab.page.reload()
    tab.page.wait_for_selector("body[data-ready=true]")
    again = tab.page.wait_for_selector("#turns .cards .card-wallet")
    assert again.inner_text() == before


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_vault_history_answer_renders_an_svg_chart(
    open_tab: Any, theme: str, artifacts: Path
) -> None:
    tab = open_tab(theme=theme)
    turn = ask(tab, f"Show me the APY history of {WETH_USDT} over the last 90 days", 1)
    card = turn.wait_for_selector(".cards .card-history")
    charts = card.query_selector_all("svg[role='img']")
    assert len(charts) == 2
    labels = [c.get_attribute("aria-label") for c in charts]
    assert labels[0].startswith("APY of WETH-USDT (0.05%), 90 daily points from 2025-07-09")
    assert labels[1].startswith("TVL of WETH-USDT (0.05%), 90 daily points")
    assert "lowest" in labels[0] and "highest" in labels[0]
    points = card.eval_on_selector(".chart-apy polyline", "l => l.points.numberOfItems")
    assert points == 90
    # Drawn in the theme's accent colour, whichever theme is on.
    stroke, accent = tab.page.evaluate(
        "() => [getComputedStyle(document.querySelector('.chart-apy .chart-line')).stroke,"
        " getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()]"
    )
    rgb = tab.page.evaluate(
        "(c) => { const d = document.createElement('div'); d.style.color = c;"
        " document.body.append(d); const v = getComputedStyle(d).color; d.remove(); return v; }",
        accent,
    )
    assert stroke == rgb
    answer = turn.query_selector(".answer").inner_text()
    assert "went from 10.24% to 27.48% over 90 daily points" in answer
    assert WETH_USDT not in answer
    card.screenshot(path=str(artifacts / f"cards-history-{theme}.png"))


QUESTIONS = [
    "highest yields",
    "APY history of the highest-TVL USDT vault",
    "how risky is the second one?",
    "What is PEPE?",
    "Is 0x47666Fab8bd0Ac7003bce3f5C3585383F09486E2 risky?",
    "What is the market saying about Aave?",
    "top gainers today",
    "biggest losers this week",
    f"what are my positions in {FARMER}",
    "Compare Aave and Morpho yields for WETH",
]


def test_no_answer_shows_an_internal_id_parameter_or_path(open_tab: Any) -> None:
    tab = open_tab()
    page = tab.page
    for index, question in enumerate(QUESTIONS, start=1):
        ask(tab, question, index)
    found = []
    for index, question in enumerate(QUESTIONS, start=1):
        turn = page.query_selector(f"#turns > li.turn:nth-child({index})")
        seen = turn.evaluate(SEEN_TEXT)
        found += [
            f"{question!r}: {what} {m.group(0)!r}"
            for what, pattern in INTERNAL.items()
            for m in pattern.finditer(seen)
        ]
        hrefs = turn.eval_on_selector_all(
            ".answer a, .cards a", "as => as.map(a => a.getAttribute('href'))"
        )
        found += [f"{question!r}: link {h}" for h in hrefs if not h.startswith("https://")]
        found += [f"{question!r}: link {h}" for h in hrefs if re.search(r"undefined|=null", h)]
    assert found == []
    # Every answer here was drawn as cards; the market ranking says the one day it read.
    kinds = page.eval_on_selector_all(".cards .card", "cs => cs.map(c => c.dataset.kind)")
    assert {"vaults", "history", "risk", "token", "address", "feed", "market", "wallet"} <= set(
        kinds
    )
    gainers = page.query_selector("#turns > li.turn:nth-child(7) .card-market .card-asof")
    assert gainers.inner_text().startswith("Data as of 2025-12-29: ranked by 24-hour price")
    losers = page.query_selector("#turns > li.turn:nth-child(8)").evaluate(SEEN_TEXT)
    assert "has a 7-day price change in the index" in losers and "cannot be ranked" in losers
    # The guidelines at most once per answer, never as instructions to a model.
    for index in range(1, len(QUESTIONS) + 1):
        turn = page.query_selector(f"#turns > li.turn:nth-child({index})")
        assert len(turn.query_selector_all("details.guidelines")) <= 1
        assert "Weigh every yield" not in turn.evaluate(SEEN_TEXT)


def test_on_a_phone_the_apy_column_is_in_view(open_tab: Any, artifacts: Path) -> None:
    tab = open_tab(width=375)
    turn = ask(tab, "highest yields", 1)
    box = turn.wait_for_selector(".card-vaults .table-scroll")
    apy_head = box.query_selector("th.apy")
    first_apy = box.query_selector("tbody tr td.apy")
    width = tab.page.evaluate("window.innerWidth")
    for cell in (apy_head, first_apy):
        rect = cell.bounding_box()
        assert rect is not None and rect["x"] >= 0 and rect["x"] + rect["width"] <= width
    assert apy_head.inner_text() == "APY" and first_apy.inner_text().endswith("%")
    assert box.evaluate("b => b.scrollLeft") == 0
    # Only the table may scroll sideways, never the page.
    assert tab.page.evaluate("document.documentElement.scrollWidth") <= width
    tab.page.screenshot(path=str(artifacts / "cards-phone.png"), full_page=True)


@pytest.mark.parametrize(("width", "theme"), [(1200, "dark"), (375, "light")])
def test_axe_finds_no_serious_violation_in_the_cards(
    open_tab: Any, width: int, theme: str, artifacts: Path
) -> None:
    tab = open_tab(width=width, theme=theme, axe=True)
    for index, question in enumerate(
        [
            f"Show my portfolio {FARMER}",
            f"Show me the APY history of {WETH_USDT} over the last 90 days",
            "how risky is vault " + WETH_USDT,
            "highest yields",
        ],
        start=1,
    ):
        ask(tab, question, index)
    tab.page.click("#turns > li.turn:nth-child(1) details.guidelines summary")
    assert serious_violations(tab.page) == []
    tab.page.screenshot(path=str(artifacts / f"cards-{width}-{theme}.png"), full_page=True)
