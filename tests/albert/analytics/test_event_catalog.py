"""The catalog and the browser module generated from it stay one definition."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from albert.analytics.event_catalog import BY_NAME, CLIENT_EVENTS, EVENTS, field_specs
from scripts.gen_event_catalog import OUTPUT, render

PROJECT_DIR = Path(__file__).resolve().parents[3]


def test_every_event_is_named_once_and_documented() -> None:
    assert len(BY_NAME) == len(EVENTS)
    for event in EVENTS:
        assert event.name == event.name.lower()
        assert event.description
        field_specs(event)  # every field has a type the browser can check
    assert set(CLIENT_EVENTS) == {
        "session_started",
        "session_ended",
        "message_submitted",
        "thread_switched",
        "theme_toggled",
        "conversation_list_toggled",
        "feedback_given",
        "chat_action_used",
    }


def test_generated_browser_catalog_is_current() -> None:
    assert OUTPUT.read_text() == render(), (
        "web/js/events.generated.js is stale: run `uv run python scripts/gen_event_catalog.py`"
    )


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_browser_validator_agrees_with_the_server(tmp_path: Path) -> None:
    # An .mjs copy: node then reads it as a module whatever package.json says.
    module = tmp_path / "events.mjs"
    module.write_text(OUTPUT.read_text())
    cases = [
        ("theme_toggled", {"theme": "dark"}),
        ("theme_toggled", {"theme": "blue"}),
        ("session_ended", {"duration_ms": 10}),
        ("session_ended", {"duration_ms": 1.5}),
        ("session_ended", {"duration_ms": "10"}),
        ("session_started", {"theme": "light", "viewport_width": 380}),
        ("session_started", {"theme": "light"}),
        ("message_submitted", {"chars": 3, "retry": True}),
        ("message_submitted", {"chars": 3, "extra": 1}),
        ("thread_switched", {}),
        ("conversation_list_toggled", {"visible": "yes"}),
        ("message_sent", {"thread_id": "t", "chars": 1}),
    ]
    script = (
        f"import {{validate}} from {json.dumps(module.as_uri())};\n"
        f"const cases = {json.dumps(cases)};\n"
        "console.log(JSON.stringify(cases.map(([n, p]) => {"
        " try { validate(n, p); return true; } catch (e) { return false; } })));\n"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    browser = json.loads(out.stdout)
    server = []
    for name, props in cases:
        model = CLIENT_EVENTS.get(name)
        try:
            ok = model is not None and bool(model.model_validate(props, strict=True))
        except ValueError:
            ok = False
        server.append(ok)
    assert browser == server
    assert browser.count(True) == 5
