"""Reading settings out of the platform's env bindings."""

from __future__ import annotations

from collections.abc import Callable
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


def env_secret_lookup(env: Any, prefix: str) -> Callable[[str], str | None]:
    """Read a secret by name from the env object; only names starting with `prefix`.

    Which names may be read at all is decided here; whether a value may be used, and
    where, is the caller's decision (the MCP_SECRETS binding for MCP_SECRET_*, a tenant's
    own `jwt_hs256_secret` for AUTH_JWT_SECRET*).
    """

    def lookup(name: str) -> str | None:
        if not name.startswith(prefix):
            return None
        value = getattr(env, name, None)
        return None if value is None else str(value)

    return lookup
