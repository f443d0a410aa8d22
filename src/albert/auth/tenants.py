"""Tenants: white-label product surfaces, each with its own settings."""

import functools
import json
import re

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)

DEFAULT_TENANT = "default"
MAX_EMBED_ORIGINS = 20

# An origin exactly as a browser serialises it (`event.origin`, CSP source): lower-case
# scheme and host, no default port, nothing after the authority. Anything looser could
# not be compared with `==` in the page nor named in `frame-ancestors` safely.
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_ORIGIN = re.compile(
    rf"(?P<scheme>https?)://(?P<host>{_LABEL}(?:\.{_LABEL})*|\[[0-9a-f:.]{{2,45}}\])"
    r"(?::(?P<port>[1-9][0-9]{0,4}))?"
)
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})


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
    # HS256 is per tenant and opt-in: the name of the deployment secret holding this
    # tenant's shared key. A tenant without one never accepts HS256, whatever else is set.
    jwt_hs256_secret: str | None = Field(
        None,
        pattern=r"^AUTH_JWT_SECRET(_[A-Z0-9]+)*$",
        description="Name of the secret (AUTH_JWT_SECRET or AUTH_JWT_SECRET_<NAME>) that "
        "signs this tenant's HS256 host tokens; unset: HS256 is refused for it",
    )
    # Host pages allowed to frame this tenant's chat (`/embed`, albert.embed); none: the
    # chat stays unframable.
    embed_origins: list[str] = Field(
        default_factory=list,
        max_length=MAX_EMBED_ORIGINS,
        description="Exact origins (https://terminal.example) allowed to embed the chat",
    )

    @field_validator("embed_origins")
    @classmethod
    def _exact_origins(cls, origins: list[str], info: ValidationInfo) -> list[str]:
        production = not (info.context or {}).get("local", False)
        for origin in origins:
            check_embed_origin(origin, production=production)
        if len(set(origins)) != len(origins):
            raise ValueError("embed_origins lists an origin twice")
        return origins

    @model_validator(mode="after")
    def _issuer_with_audience(self) -> "Tenant":
        if (self.jwt_issuer is None) != (self.jwt_audience is None):
            raise ValueError("jwt_issuer and jwt_audience go together: set both or neither")
        if self.jwks_url is not None and self.jwt_issuer is None:
            raise ValueError("jwks_url needs jwt_issuer and jwt_audience")
        if self.jwt_hs256_secret is not None and self.jwt_issuer is None:
            raise ValueError("jwt_hs256_secret needs jwt_issuer and jwt_audience")
        return self

    @property
    def accepts_host_tokens(self) -> bool:
        """True when users of this tenant may sign in with the host product's JWT."""
        return self.jwt_issuer is not None and self.jwt_audience is not None


def check_embed_origin(origin: str, *, production: bool) -> None:
    """Raise ValueError unless `origin` may be listed in `embed_origins`.

    `https://host[:port]` exactly as a browser writes an origin; plain `http://` only for
    a loopback host (127.0.0.1, localhost, [::1]) and never in production.
    """
    match = _ORIGIN.fullmatch(origin) if len(origin) <= 255 else None
    if match is None:
        raise ValueError(
            f"embed origin {origin!r} must be an exact origin, scheme://host[:port] in lower"
            " case: no wildcard, path, query, fragment, user or trailing slash"
        )
    scheme, host, port = match["scheme"], match["host"], match["port"]
    if port is not None and int(port) > 65_535:
        raise ValueError(f"embed origin {origin!r}: port out of range")
    if port == {"https": "443", "http": "80"}[scheme]:
        raise ValueError(f"embed origin {origin!r}: drop the default port, browsers omit it")
    if scheme == "http":
        if host not in _LOOPBACK_HOSTS:
            raise ValueError(
                f"embed origin {origin!r} must use https:// (http:// only for loopback)"
            )
        if production:
            raise ValueError(
                f"embed origin {origin!r}: http:// loopback origins are for local mode only"
            )


class PublicTenant(BaseModel):
    """What the browser may know of its tenant."""

    model_config = ConfigDict(defer_build=True)

    key: str
    name: str


@functools.cache
def _tenants_adapter() -> TypeAdapter[dict[str, Tenant]]:
    # Built on first use: most workers never configure tenants, and cold start counts.
    return TypeAdapter(dict[str, Tenant])


def parse_tenants(raw: str, *, local: bool = False) -> dict[str, Tenant]:
    """The TENANTS setting (a JSON object of key → Tenant); the default tenant always exists.

    `local`: the local mode, where embed origins may be plain-HTTP loopback.
    """
    data = json.loads(raw) if raw.strip() else {}
    tenants = _tenants_adapter().validate_python(data, context={"local": local})
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
    secrets: dict[str, str] = {}
    for key, tenant in tenants.items():
        name = tenant.jwt_hs256_secret
        if name is None:
            continue
        if name in secrets:
            # Whoever mints one tenant's tokens must not be able to mint another's.
            raise ValueError(f"tenants {secrets[name]!r} and {key!r} share jwt_hs256_secret {name}")
        secrets[name] = key
    tenants.setdefault(DEFAULT_TENANT, Tenant())
    return tenants
