"""What answers the chat, said in one line without a key or a path."""

from __future__ import annotations

import json

import pytest

from albert.ai.answerer import answerer
from albert.auth.tokens import issue_token, new_client_id
from albert.router import route
from albert.settings import Settings
from albert.web import HttpRequest, HttpResponse

KEY = "sk-live-abcdef123456"
SIGNING = "k1:" + "s" * 32
NOW = 1_800_000_000


@pytest.mark.parametrize(
    ("env", "kind", "text"),
    [
        ({}, "demo_planner", "the demo planner: no model is set up."),
        (
            {
                "MODEL_BASE_URL": "https://user:pw@gateway.ai.cloudflare.com/v1/acct-42/gw/openai",
                "MODEL_API_KEY": KEY,
                "MODEL_NAME": "gpt-4o-mini",
            },
            "model",
            "gpt-4o-mini at gateway.ai.cloudflare.com.",
        ),
        (
            {"MODEL_BASE_URL": "http://127.0.0.1:11434/v1", "MODEL_NAME": "llama3"},
            "model",
            "llama3 at 127.0.0.1:11434.",
        ),
    ],
)
def test_what_answers_in_one_line(env: dict[str, str], kind: str, text: str) -> None:
    said = answerer(Settings.from_env(env))  # the demo planner is installed here
    assert said.kind == kind and text in said.text
    dumped = said.model_dump_json()
    assert KEY not in dumped and "acct-42" not in dumped and "pw" not in dumped


def test_the_router_answers_a_session_and_refuses_a_stranger() -> None:
    settings = Settings.from_env(
        {"AUTH_SIGNING_KEY": SIGNING, "MODEL_BASE_URL": "https://api.openai.com/v1"}
    )
    token = issue_token(
        settings.signing_keys()[0],
        client_id=new_client_id(),
        tenant="default",
        expires_at=NOW + 600,
        issued_at_ms=NOW * 1000,
    )
    headers = {"authorization": f"Bearer {token}"}
    answer = route(HttpRequest(method="GET", path="/api/answerer", headers=headers), settings, NOW)
    assert isinstance(answer, HttpResponse) and answer.status == 200
    assert json.loads(answer.body)["text"] == "Answers come from gpt-4o-mini at api.openai.com."
    stranger = route(HttpRequest(method="GET", path="/api/answerer"), settings, NOW)
    assert isinstance(stranger, HttpResponse) and stranger.status == 401


def test_without_the_planner_workers_ai_or_nothing_answers() -> None:
    workers = answerer(Settings.from_env({"WORKERS_AI_MODEL": "@cf/meta/llama"}), planner=False)
    assert workers.kind == "workers_ai" and workers.text.endswith("@cf/meta/llama on Workers AI.")
    nothing = answerer(Settings.from_env({}), planner=False)
    assert nothing.kind == "none" and "No model is set up" in nothing.text
    assert answerer(Settings.from_env({}), planner=True).kind == "demo_planner"
