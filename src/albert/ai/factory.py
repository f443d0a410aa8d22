"""Picks the model client the settings ask for."""

from __future__ import annotations

import httpx

from albert.ai.model import ModelClient
from albert.settings import Settings


def model_client(settings: Settings, http: httpx.AsyncClient) -> ModelClient:
    """The OpenAI-compatible client when a gateway is configured, else the demo planner."""
    # Imported on the path that uses them: a worker loads one client, not both.
    if settings.uses_demo_planner:
        from albert.ai.planner import DemoPlanner

        return DemoPlanner()
    from albert.ai.openai_client import OpenAICompatibleClient

    return OpenAICompatibleClient(
        http,
        base_url=settings.model_base_url,
        api_key=settings.model_api_key.get_secret_value(),
        model=settings.model_name,
        timeout=settings.model_timeout_seconds,
    )
