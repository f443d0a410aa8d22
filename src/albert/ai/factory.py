"""Picks the model client the settings ask for."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator

import httpx

from albert.ai.model import ModelClient, ModelError, ModelEvent, ModelRequest
from albert.settings import Settings

# The demo planner is its own package beside src/ (demo_planner/): the local runtimes have
# it, the Cloudflare upload does not (a deployed worker has a model: a gateway, or Workers
# AI through its binding).
DEMO_PLANNER = "demo_planner"
NO_MODEL = (
    "no model is configured: set MODEL_BASE_URL (an OpenAI-compatible gateway) or the AI "
    "binding; the demo planner that answers without one runs only locally"
)


class NoModelConfigured:
    """What answers when there is no model and no demo planner: every step fails, saying so."""

    model_name = "none"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Fail the step at once (an error frame; the user's message is kept)."""
        raise ModelError("http", NO_MODEL)
        yield  # an async generator, as the port's other clients are


def model_client(
    settings: Settings, http: httpx.AsyncClient, *, planner: str = DEMO_PLANNER
) -> ModelClient:
    """The OpenAI-compatible client when a gateway is configured, else the demo planner
    (the package named `planner`) where it is installed, else NoModelConfigured."""
    # Imported on the path that uses them: a worker loads one client, not both.
    if settings.uses_demo_planner:
        try:
            module = importlib.import_module(planner)
        except ModuleNotFoundError as exc:
            if exc.name != planner:
                raise  # the planner is there but broken: that is a defect to see
            return NoModelConfigured()
        client: ModelClient = module.DemoPlanner()
        return client
    from albert.ai.openai_client import OpenAICompatibleClient

    return OpenAICompatibleClient(
        http,
        base_url=settings.model_base_url,
        api_key=settings.model_api_key.get_secret_value(),
        model=settings.model_name,
        timeout=settings.model_timeout_seconds,
    )
