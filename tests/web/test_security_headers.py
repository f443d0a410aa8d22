"""The page's Content-Security-Policy and friends: equal to the deployed file, and the chat
still works under them in real Chromium while an injected script does not run. That every
page, asset and worker response carries them is checked on both runtimes in
tests/conformance/test_static_assets.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from albert.security_headers import PAGE_HEADERS
from miniflare.asset_headers import HeaderRules
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer

WEB = Path(__file__).resolve().parents[2] / "web"


def test_the_deployed_headers_file_says_what_the_code_says() -> None:
    rules = HeaderRules.load(WEB)
    for path in ("/", "/index.html", "/js/app.js", "/css/app.css"):
        assert rules.for_path(path) == PAGE_HEADERS


def test_no_page_has_inline_script_or_style() -> None:
    for page in WEB.rglob("*.html"):
        html = page.read_text()
        scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, flags=re.S | re.I)
        assert scripts and all("src=" in attrs and not body.strip() for attrs, body in scripts)
        assert not re.search(r"<style|\sstyle=|\son[a-z]+=", html, flags=re.I), page


@pytest.mark.browser
def test_the_chat_works_under_the_policy_and_an_injected_script_does_not_run(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    context = browser.new_context()
    page = context.new_page()
    violations: list[str] = []
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => "
        "(window.__violations = window.__violations || []).push(e.violatedDirective))"
    )
    try:
        page.goto(runtime.url + "/")
        page.wait_for_selector("body[data-ready=true]", timeout=10_000)
        page.wait_for_selector('#conn[data-state="live"]', timeout=10_000)  # ws: connect-src
        # The theme came from the boot script, which runs as a file before first paint.
        assert page.evaluate("document.documentElement.dataset.theme") in ("light", "dark")
        model.script(Reply(text=["Under ", "the policy."]))
        page.fill("#input", "hello")
        page.press("#input", "Enter")
        page.wait_for_selector('#turns > li.turn:nth-child(1)[data-state="done"]', timeout=10_000)
        assert "Under the policy." in page.inner_text("#turns")
        violations += page.evaluate("window.__violations || []")
        assert violations == [] and not [c for c in console if "Content Security Policy" in c]
        # What an XSS would try: an inline script and an inline handler. Neither runs.
        page.evaluate(
            """() => {
              const s = document.createElement('script');
              s.textContent = 'window.__pwned = 1';
              document.head.appendChild(s);
              const img = document.createElement('img');
              img.setAttribute('onerror', 'window.__pwned = 2');
              img.src = 'data:,x';
              document.body.appendChild(img);
            }"""
        )
        page.wait_for_function("(window.__violations || []).length >= 1", timeout=5_000)
        assert page.evaluate("window.__pwned") is None
        assert "script-src-elem" in page.evaluate("window.__violations") or "script-src" in str(
            page.evaluate("window.__violations")
        )
    finally:
        context.close()
