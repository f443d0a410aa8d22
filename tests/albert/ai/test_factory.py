"""Which model client the settings give: a gateway's, the demo planner, or a clear refusal."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from albert.ai.factory import NO_MODEL, NoModelConfigured, model_client
from albert.ai.model import ChatMessage, ModelError, ModelRequest
from albert.ai.openai_client import OpenAICompatibleClient
from albert.settings import Settings
from demo_planner import DemoPlanner


def settings(**values: str) -> Settings:
    return Settings.from_env({"ALBERT_MODE": "local", **values})


async def test_a_gateway_gets_the_openai_compatible_client() -> None:
    async with httpx.AsyncClient() as http:
        client = model_client(settings(MODEL_BASE_URL="http://127.0.0.1:9/v1"), http)
    assert isinstance(client, OpenAICompatibleClient)


async def test_without_a_gateway_the_demo_planner_answers_where_it_is_installed() -> None:
    async with httpx.AsyncClient() as http:
        assert isinstance(model_client(settings(), http), DemoPlanner)


async def test_without_a_gateway_or_a_planner_every_step_fails_saying_why() -> None:
    # A deployed worker's upload has no demo_planner package.
    async with httpx.AsyncClient() as http:
        client = model_client(settings(), http, planner="albert_no_such_planner")
    assert isinstance(client, NoModelConfigured)
    request = ModelRequest(messages=[ChatMessage(role="user", content="hi")])
    with pytest.raises(ModelError) as refused:
        async for _ in client.stream(request):
            pass
    assert str(refused.value) == NO_MODEL and not refused.value.retryable


async def test_a_planner_that_is_there_but_broken_is_not_taken_for_a_missing_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "albert_broken_planner.py").write_text("import albert_missing_dependency\n")
    sys.path.insert(0, str(tmp_path))
    try:
        async with httpx.AsyncClient() as http:
            with pytest.raises(ModuleNotFoundError, match="albert_missing_dependency"):
                model_client(settings(), http, planner="albert_broken_planner")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("albert_broken_planner", None)
