"""The one line at start that says what answers the chat (the page says it too)."""

from __future__ import annotations

from pathlib import Path

from albert.ai.answerer import answerer
from albert.settings import Settings
from miniflare.config import load_config


def answerer_line(project_dir: Path, values: dict[str, str]) -> str:
    """What answers under wrangler.toml's vars, .dev.vars and `values` on top (as the
    runtime reads them): the demo planner, or the model's name and the endpoint's host.
    Never a key or the endpoint's path."""
    config = load_config(project_dir)
    settings = Settings.from_env({**config.vars, **config.secrets, **values})
    return answerer(settings).text
