"""Picks the model client the settings ask for."""

from __future__ import annotations

import httpx

from albert.ai.demo_planner import DemoPlanner
from albert.ai.model import ModelClient
from albert.ai.openai_client import OpenAICompatibleClient
from albert.settings import Settings


def model_client(settings: Settings, http: httpx.AsyncClient) -> ModelClient:
    """The OpenAI-compatible client when a gateway is configured, else the demo planner."""
    if settings.uses_demo_planner:
        return DemoPlanner()
    return OpenAICompatibleClient(
        http,
        base_url=settings.model_base_url,
        api_key=settings.model_api_key.get_secret_value(),
        model=settings.model_name,
        timeout=settings.model_timeout_seconds,
    )
