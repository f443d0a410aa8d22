"""Tenants: white-label product surfaces, each with its own settings."""

import functools
import json

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

DEFAULT_TENANT = "default"


class Tenant(BaseModel):
    """What a tenant key selects."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

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
    # Sign-in with the host product's JWT (albert.auth.host_jwt): both or neither.
    jwt_issuer: str | None = Field(
        None, min_length=1, max_length=512, description="The `iss` the host's tokens carry"
    )
    jwt_audience: str | None = Field(
        None, min_length=1, max_length=512, description="The `aud` they must be issued for"
    )
    jwks_url: str | None = Field(
        None, max_length=2_000, description="This tenant's JWKS URL; AUTH_JWKS_URL if absent"
    )

    @model_validator(mode="after")
    def _issuer_with_audience(self) -> "Tenant":
        if (self.jwt_issuer is None) != (self.jwt_audience is None):
            raise ValueError("jwt_issuer and jwt_audience go together: set both or neither")
        if self.jwks_url is not None and self.jwt_issuer is None:
            raise ValueError("jwks_url needs jwt_issuer and jwt_audience")
        return self

    @property
    def accepts_host_tokens(self) -> bool:
        """True when users of this tenant may sign in with the host product's JWT."""
        return self.jwt_issuer is not None and self.jwt_audience is not None


class PublicTenant(BaseModel):
    """What the browser may know of its tenant."""

    model_config = ConfigDict(defer_build=True)

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
    seen: dict[tuple[str, str], str] = {}
    for key, tenant in tenants.items():
        if tenant.jwt_issuer is None or tenant.jwt_audience is None:
            continue
        pair = (tenant.jwt_issuer, tenant.jwt_audience)
        if pair in seen:
            # A host token must name exactly one tenant: its object lives there.
            raise ValueError(
                f"tenants {seen[pair]!r} and {key!r} share jwt_issuer and jwt_audience"
            )
        seen[pair] = key
    tenants.setdefault(DEFAULT_TENANT, Tenant())
    return tenants
