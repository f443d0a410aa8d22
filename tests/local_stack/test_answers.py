"""`albert serve`/`albert dev` say at start what answers the chat, without a key or path."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from local_stack import cli
from local_stack.answers import answerer_line
from local_stack.stack import NOT_RECORDED_NOTE

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-live-abcdef123456"


def project(tmp_path: Path, dev_vars: str | None = None) -> Path:
    shutil.copy(ROOT / "wrangler.toml", tmp_path / "wrangler.toml")
    if dev_vars is not None:
        (tmp_path / ".dev.vars").write_text(dev_vars)
    return tmp_path


def test_without_a_model_the_demo_planner_answers(tmp_path: Path) -> None:
    line = answerer_line(project(tmp_path), {"ALBERT_MODE": "local"})
    assert line == "Answers come from the demo planner: no model is set up."


def test_a_model_is_named_with_its_host_only(tmp_path: Path) -> None:
    dev_vars = (
        "MODEL_BASE_URL=https://gateway.ai.cloudflare.com/v1/acct-42/gw/openai\n"
        f"MODEL_API_KEY={KEY}\nMODEL_NAME=gpt-x\n"
    )
    line = answerer_line(project(tmp_path, dev_vars), {})
    assert line == "Answers come from gpt-x at gateway.ai.cloudflare.com."
    # A --var wins over .dev.vars, as in the runtime.
    other = answerer_line(project(tmp_path, dev_vars), {"MODEL_NAME": "llama3"})
    assert other == "Answers come from llama3 at gateway.ai.cloudflare.com."


def test_albert_serve_prints_the_line_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(cli, "exit_on_signals", lambda: None)
    monkeypatch.setattr(cli.gc, "freeze", lambda: None)
    monkeypatch.setattr(cli, "run", lambda *args: served.append(args))
    dev_vars = f"MODEL_BASE_URL=http://127.0.0.1:9/v1\nMODEL_API_KEY={KEY}\n"
    cli.main(["serve", "--port", "0", "--project-dir", str(project(tmp_path, dev_vars))])
    served[0][3].close()  # the reserved socket
    out = capsys.readouterr().out
    assert "Answers come from gpt-4o-mini at 127.0.0.1:9.\n" in out
    assert KEY not in out


def test_the_not_recorded_note_says_what_it_means() -> None:
    assert "Not Recorded" in NOT_RECORDED_NOTE and "answers without it" in NOT_RECORDED_NOTE
