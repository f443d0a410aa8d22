"""The page's frame in Chromium: icons that need no emoji font, the page icon, a layout that
follows the window as it is resized, and suggestions that ask."""

from __future__ import annotations

import unicodedata
from typing import Any

import httpx
import pytest

from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.web.test_chat_browser import Page, script_tool_turn

pytestmark = pytest.mark.browser

# Every control's text and every generated `content`, with the element it belongs to.
_DRAWN_TEXT = """() => {
  const out = [];
  for (const e of document.querySelectorAll('*')) {
    for (const pseudo of ['::before', '::after']) {
      const content = getComputedStyle(e, pseudo).content;
      if (content && content !== 'none' && content !== 'normal') out.push([e.className, content]);
    }
  }
  for (const c of document.querySelectorAll('button, summary, [role=button], a')) {
    out.push([c.id || c.className, c.textContent]);
  }
  return out;
}"""
_NAMELESS_CONTROLS = """() => [...document.querySelectorAll('button, summary')]
  .filter(c => c.getClientRects().length)
  .filter(c => !(c.getAttribute('aria-label') || c.textContent.trim()))
  .map(c => c.outerHTML.slice(0, 80))"""
_EMPTY_ICONS = """() => [...document.querySelectorAll('button svg.icon, summary svg.icon')]
  .filter(s => s.closest('button, summary').getClientRects().length)
  .filter(s => getComputedStyle(s).display !== 'none')
  .filter(s => { const r = s.getBoundingClientRect();
    return r.width < 8 || r.height < 8 || !s.querySelector('path'); })
  .map(s => s.closest('button, summary').outerHTML.slice(0, 80))"""
# The element at the middle of the message box is the box itself: nothing covers it.
_INPUT_UNCOVERED = """() => {
  const r = document.querySelector('#input').getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  return r.width > 150 && r.right <= innerWidth && document.elementFromPoint(x, y)?.id === 'input';
}"""

# Focus is on something the open phone-width list covers.
_FOCUS_BEHIND = "() => Boolean(document.activeElement.closest('main'))"


def needs_a_symbol_font(char: str) -> bool:
    """A pictograph, dingbat or arrow: drawn only where an emoji or symbol font is installed."""
    point = ord(char)
    return (
        unicodedata.category(char) == "So"
        or 0x2190 <= point <= 0x2BFF
        or 0x1F000 <= point
        or point in (0xFE0F, 0x200D)
    )


def open_tab(browser: Any, runtime: RuntimeProcess, width: int, height: int) -> tuple[Any, Page]:
    context = browser.new_context(viewport={"width": width, "height": height})
    return context, Page(context.new_page(), runtime.url)


def test_no_control_relies_on_a_glyph_of_an_emoji_or_symbol_font(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    context, tab = open_tab(browser, runtime, 1200, 800)
    page = tab.open().page
    script_tool_turn(model)
    tab.ask("What is PEPE?")
    tab.wait_turn(1)
    # The turn's controls are drawn: the tool's summary, copy, regenerate, feedback, edit.
    page.wait_for_selector(".feedback-up")
    page.click(".feedback-down")
    page.wait_for_selector(".feedback-comment")
    page.hover("#thread-list .thread")
    for dark in (False, True):
        if dark:
            page.click("#toggle-theme")
            page.wait_for_selector("html[data-theme=dark]")
        drawn = page.evaluate(_DRAWN_TEXT)
        offenders = [(who, text) for who, text in drawn if any(map(needs_a_symbol_font, text))]
        assert offenders == []
        assert page.evaluate(_NAMELESS_CONTROLS) == []
        # The icons are drawn at a size one can see, in both themes.
        assert page.evaluate(_EMPTY_ICONS) == []
    # The servers panel's controls too.
    page.click("#open-servers")
    page.wait_for_selector("#servers-dialog[open]")
    drawn = page.evaluate(_DRAWN_TEXT)
    assert [(who, text) for who, text in drawn if any(map(needs_a_symbol_font, text))] == []
    assert page.evaluate(_NAMELESS_CONTROLS) == []
    assert page.evaluate(_EMPTY_ICONS) == []
    page.keyboard.press("Escape")
    page.wait_for_selector("#servers-dialog:not([open])", state="attached")
    icons = page.eval_on_selector_all(
        ".thread-pin svg, .thread-rename svg, .thread-delete svg, .feedback-up svg, "
        "#toggle-sidebar svg, #toggle-theme svg, .regenerate svg, #open-servers svg",
        "els => els.length",
    )
    assert icons >= 8
    context.close()
    assert tab.errors == [], tab.errors


def test_the_page_icon_loads(browser: Any, runtime: RuntimeProcess) -> None:
    icon_ico = httpx.get(f"{runtime.url}/favicon.ico", timeout=10)
    assert icon_ico.status_code == 200
    assert icon_ico.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert icon_ico.headers["content-type"].startswith("image/")
    icon_svg = httpx.get(f"{runtime.url}/favicon.svg", timeout=10)
    assert icon_svg.status_code == 200
    assert icon_svg.headers["content-type"].startswith("image/svg+xml")

    context, tab = open_tab(browser, runtime, 1200, 800)
    page = tab.open().page
    hrefs = page.eval_on_selector_all("link[rel=icon]", "els => els.map(e => e.href)")
    assert f"{runtime.url}/favicon.svg" in hrefs
    # The page's own policy lets it draw its icon: the SVG decodes as an image in the page.
    size = page.evaluate(
        """async (url) => {
          const img = new Image();
          img.src = url;
          await img.decode();
          return [img.naturalWidth, img.naturalHeight];
        }""",
        hrefs[0],
    )
    assert size[0] > 0 and size[1] > 0
    context.close()
    assert tab.errors == [], tab.errors


def test_the_layout_follows_the_window_from_desktop_to_phone_and_back(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    context, tab = open_tab(browser, runtime, 1280, 800)
    page = tab.open().page
    assert page.get_attribute("html", "data-sidebar") == "open"
    assert page.eval_on_selector("#sidebar", "e => e.getBoundingClientRect().left") >= 0

    # Shrunk to a phone's width: the list closes, nothing covers the message box.
    page.set_viewport_size({"width": 375, "height": 700})
    page.wait_for_function("() => document.documentElement.dataset.sidebar === 'closed'")
    page.wait_for_function("() => getComputedStyle(sidebar).visibility === 'hidden'")
    assert page.is_hidden("#scrim")
    assert page.evaluate(_INPUT_UNCOVERED)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    for control in ("#toggle-sidebar", "#open-servers", "#toggle-theme", "#send"):
        rect = page.eval_on_selector(control, "e => e.getBoundingClientRect().toJSON()")
        assert rect["width"] > 0 and rect["left"] >= 0 and rect["right"] <= 375, control
    model.script(Reply(text=["Still here."]))
    tab.ask("Are you there?")
    tab.wait_turn(1)

    # Opened on the phone: the list lies over a dimmed chat and brings its own close button.
    page.click("#toggle-sidebar")
    page.wait_for_selector("#scrim:not([hidden])")
    page.wait_for_function("() => sidebar.getBoundingClientRect().left >= 0")
    assert page.is_visible("#close-sidebar")
    assert page.evaluate("document.activeElement.id") == "new-thread"
    # The keyboard stays in the list: the chat it covers is out of reach.
    for key in ["Tab"] * 8 + ["Shift+Tab"] * 12:
        page.keyboard.press(key)
        assert page.evaluate(_FOCUS_BEHIND) is False, key
    page.click("#close-sidebar")
    page.wait_for_function("() => document.documentElement.dataset.sidebar === 'closed'")
    assert page.evaluate("document.activeElement.id") == "toggle-sidebar"
    assert page.is_hidden("#scrim")
    # Escape closes it too.
    page.click("#toggle-sidebar")
    page.wait_for_selector("#scrim:not([hidden])")
    page.keyboard.press("Escape")
    page.wait_for_function("() => document.documentElement.dataset.sidebar === 'closed'")
    # A choice made in the list with the keyboard closes it, and focus is not lost.
    for choice in ("#new-thread", "#thread-list .thread-open"):
        page.click("#toggle-sidebar")
        page.wait_for_selector("#scrim:not([hidden])")
        page.focus(choice)
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.documentElement.dataset.sidebar === 'closed'")
        assert page.evaluate("document.activeElement.id") == "toggle-sidebar", choice

    # Back to a desktop's width: the list as the user left it there (open), no scrim.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.wait_for_function("() => document.documentElement.dataset.sidebar === 'open'")
    assert page.is_hidden("#scrim")
    assert page.is_hidden("#close-sidebar")
    assert page.evaluate(_INPUT_UNCOVERED)
    context.close()
    assert tab.errors == [], tab.errors


def test_a_suggestion_asks_its_question(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    context, tab = open_tab(browser, runtime, 1200, 800)
    page = tab.open().page
    page.click("#new-thread")
    suggestions = page.eval_on_selector_all(
        "#suggestions button", "els => els.map(e => e.textContent)"
    )
    assert len(suggestions) >= 3
    model.script(Reply(text=["Here they are."]))
    page.click(f"#suggestions button >> text={suggestions[0]}")
    tab.wait_turn(1)
    assert tab.user_texts() == [suggestions[0]]
    assert page.input_value("#input") == ""
    page.wait_for_selector("#empty", state="hidden")
    context.close()
    assert tab.errors == [], tab.errors
