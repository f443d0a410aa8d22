"""Reading settings out of the platform's env bindings."""

from __future__ import annotations

from typing import Any

from albert.settings import Settings


def env_mapping(env: Any) -> dict[str, Any]:
    """The vars and secrets that Settings knows, read by name from the env object."""
    names = [field.alias for field in Settings.model_fields.values() if field.alias]
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(env, name, None)
        if value is not None:
            out[name] = str(value)
    return out
