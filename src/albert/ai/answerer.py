"""What answers the chat: the demo planner, a model at an endpoint, or Workers AI.

Said once at start in the terminal (`albert dev`/`albert serve`) and on the empty chat
screen (`GET /api/answerer`, albert.router). It names the model and the endpoint's host
only: never its key, user info or path (an AI Gateway URL carries an account id).
"""

from __future__ import annotations

import importlib.util
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from albert.ai.factory import DEMO_PLANNER
from albert.ai.plain_errors import endpoint_host
from albert.settings import Settings

AnswererKind = Literal["demo_planner", "model", "workers_ai", "none"]


class Answerer(BaseModel):
    """Body of GET /api/answerer."""

    model_config = ConfigDict(frozen=True)

    kind: AnswererKind
    model: str | None = Field(None, description="The model's name (absent for the planner)")
    host: str | None = Field(None, description="The endpoint's host, no path or credentials")
    text: str = Field(description="One short line for people")


def planner_installed(name: str = DEMO_PLANNER) -> bool:
    """True where the demo planner package is there (the local runtimes; not an upload)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def answerer(settings: Settings, *, planner: bool | None = None) -> Answerer:
    """What answers under these settings (mirrors albert.ai.factory and the Workers AI
    binding's use in durable_objects/chat.py: a gateway first; without one, the demo
    planner where it is installed (the local runtimes, which have no AI binding), else
    Workers AI). `planner`: whether the demo planner is installed (looked up if None)."""
    if not settings.uses_demo_planner:
        host = endpoint_host(settings.model_base_url) or None
        where = f" at {host}" if host else ""
        return Answerer(
            kind="model",
            model=settings.model_name,
            host=host,
            text=f"Answers come from {settings.model_name}{where}.",
        )
    if planner_installed() if planner is None else planner:
        return Answerer(
            kind="demo_planner",
            text="Answers come from the demo planner: no model is set up.",
        )
    if settings.workers_ai_model:
        return Answerer(
            kind="workers_ai",
            model=settings.workers_ai_model,
            text=f"Answers come from {settings.workers_ai_model} on Workers AI.",
        )
    return Answerer(kind="none", text="No model is set up, so Albert cannot answer yet.")
