"""Tenants: white-label product surfaces, each with its own settings."""

from __future__ import annotations

import functools
import json

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

DEFAULT_TENANT = "default"


class Tenant(BaseModel):
    """What a tenant key selects."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("Albert", description="Product name shown in the UI")
    prompt_flavour: str = Field("", description="Extra system-prompt text for this surface")
    allowed_mcp_hosts: list[str] | None = Field(
        None, description="Hosts MCP servers may live on; None allows any host the SSRF rules allow"
    )
    deep_link_base_url: str | None = None
    model_name: str | None = None
    model_calls_per_window: int | None = Field(
        None, ge=0, description="This tenant's model budget (MODEL_CALLS_PER_TENANT); 0: none"
    )


class PublicTenant(BaseModel):
    """What the browser may know of its tenant."""

    key: str
    name: str


@functools.cache
def _tenants_adapter() -> TypeAdapter[dict[str, Tenant]]:
    # Built on first use: most workers never configure tenants, and cold start counts.
    return TypeAdapter(dict[str, Tenant])


def parse_tenants(raw: str) -> dict[str, Tenant]:
    """The TENANTS setting (a JSON object of key → Tenant); the default tenant always exists."""
    tenants = _tenants_adapter().validate_python(json.loads(raw)) if raw.strip() else {}
    for key in tenants:
        if (
            not key
            or len(key) > 32
            or not key.replace("-", "").replace("_", "").isalnum()
            or key != key.lower()
        ):
            raise ValueError(f"tenant key {key!r} must be 1-32 lower-case letters, digits, - or _")
    tenants.setdefault(DEFAULT_TENANT, Tenant())
    return tenants
