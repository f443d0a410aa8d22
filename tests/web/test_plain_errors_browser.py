"""In the browser: a wrong model URL reads as plain words naming what to check, the
technical detail folded; the empty screen says what answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.ports import free_port
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import ScriptedModelServer

TIMEOUT_MS = 10_000
KEY = "sk-test-secret-123456"


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RuntimeProcess, int]]:
    port = free_port()
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "MODEL_API_KEY": KEY,
        "MODEL_NAME": "gpt-test",
        "ANALYTICS_API_KEY": "",
    }
    with RuntimeProcess(tmp_path_factory.mktemp("broken-model"), variables) as process:
        yield process, port


def open_page(browser: Any, url: str) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector('#conn[data-state="live"]')
    return context, page, errors


def test_the_empty_screen_says_which_model_answers(
    browser: Any, runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    context, page, errors = open_page(browser, runtime.url)
    try:
        host = model.base_url.split("//", 1)[1].split("/", 1)[0]
        page.wait_for_selector("#empty #answerer")
        assert page.inner_text("#answerer") == f"Answers come from gpt-4o-mini at {host}."
        assert page.is_visible("#answerer")
    finally:
        context.close()
    assert errors == []


def test_a_wrong_model_url_says_what_to_check_with_the_detail_folded(
    browser: Any, broken: tuple[RuntimeProcess, int]
) -> None:
    runtime, port = broken
    context, page, errors = open_page(browser, runtime.url)
    try:
        page.wait_for_selector("#empty #answerer")
        said = page.inner_text("#answerer")
        assert said == f"Answers come from gpt-test at 127.0.0.1:{port}."
        page.fill("#input", "What is PEPE?")
        page.press("#input", "Enter")
        page.wait_for_selector('#turns > li.turn[data-state="error"] .turn-error')
        box = page.locator(".turn-error")
        visible = box.inner_text()
        # Plain words naming what to check and where; no code, no exception name in sight.
        assert "could not reach" in visible and f"127.0.0.1:{port}" in visible, visible
        assert "MODEL_BASE_URL" in visible, visible
        assert "model_error" not in visible and "ConnectError" not in visible, visible
        detail = page.locator(".turn-error details")
        assert detail.get_attribute("open") is None  # folded
        assert not page.is_visible(".turn-error details code")
        page.click(".turn-error details summary")
        shown = page.inner_text(".turn-error details code")
        assert shown.startswith("model_error: network") and "ConnectError" in shown, shown
        assert KEY not in page.content()
        # Reloaded from storage, the turn says the same, with the same folded detail.
        page.reload()
        page.wait_for_selector('#turns > li.turn[data-state="error"] .turn-error')
        assert page.locator(".turn-error").inner_text() == visible
        assert page.locator(".turn-error details").get_attribute("open") is None
        page.click(".turn-error details summary")
        assert page.inner_text(".turn-error details code") == shown
    finally:
        context.close()
    assert errors == []
    # The terminal: what answers, said at start; the failure, one warning line; no key.
    log = Path(runtime.log_path).read_text(errors="replace")
    assert f"Answers come from gpt-test at 127.0.0.1:{port}." in log
    failed = [line for line in log.splitlines() if "the model failed" in line]
    assert len(failed) == 1 and failed[0].startswith("WARNING"), failed
    assert KEY not in log
