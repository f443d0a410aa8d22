"""Settings of the agent, read from the worker's env bindings (vars and secrets)."""

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from albert.auth.tenants import Tenant, parse_tenants
from albert.auth.tokens import SigningKey, parse_key

# Used only when ALBERT_MODE=local and no key is configured; never in production.
LOCAL_DEV_SIGNING_KEY = "albert-local-development-key-not-a-secret"


class Settings(BaseModel):
    """Every knob of the agent; names match the env vars in wrangler.toml and .dev.vars."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore", defer_build=True)

    mode: Literal["local", "production"] = Field("production", alias="ALBERT_MODE")

    # Model gateway. An empty base URL selects the offline demo planner.
    model_base_url: str = Field("", alias="MODEL_BASE_URL")
    model_api_key: SecretStr = Field(SecretStr(""), alias="MODEL_API_KEY")
    model_name: str = Field("gpt-4o-mini", alias="MODEL_NAME")
    # The model the Workers AI binding runs when no gateway is set (read by
    # albert.cloudflare.ai from the env; here only to say what answers).
    workers_ai_model: str = Field("", alias="WORKERS_AI_MODEL")
    model_timeout_seconds: float = Field(60.0, alias="MODEL_TIMEOUT_SECONDS", gt=0)
    # Stall bounds on the model stream, apart from the whole turn's bound: a gateway
    # that accepts the request and then goes quiet must not hold a turn open.
    model_first_chunk_timeout_seconds: float = Field(
        30.0, alias="MODEL_FIRST_CHUNK_TIMEOUT_SECONDS", gt=0
    )
    model_chunk_timeout_seconds: float = Field(20.0, alias="MODEL_CHUNK_TIMEOUT_SECONDS", gt=0)
    turn_timeout_seconds: float = Field(300.0, alias="TURN_TIMEOUT_SECONDS", gt=0)
    # Context window of the configured model, in tokens (about four characters each).
    model_context_tokens: int = Field(128_000, alias="MODEL_CONTEXT_TOKENS", ge=2_000)

    # Tool loop.
    max_model_steps: int = Field(5, alias="MAX_MODEL_STEPS", ge=1, le=20)
    # Tool calls one model step may have run; the rest are answered unrun (README, "Limits").
    max_tool_calls_per_step: int = Field(16, alias="MAX_TOOL_CALLS_PER_STEP", ge=1, le=256)
    tool_result_max_chars: int = Field(50_000, alias="TOOL_RESULT_MAX_CHARS", ge=1_000)
    tool_timeout_seconds: float = Field(20.0, alias="TOOL_TIMEOUT_SECONDS", gt=0)
    # How long a remote tool its server marks destructive waits for the user's yes or no;
    # the turn's own bound is held meanwhile, so a user who is thinking does not time it out.
    tool_confirm_timeout_seconds: float = Field(
        120.0, alias="TOOL_CONFIRM_TIMEOUT_SECONDS", gt=0, le=3_600
    )

    # Input limits.
    max_message_chars: int = Field(8_000, alias="MAX_MESSAGE_CHARS", ge=1)
    max_frame_bytes: int = Field(64_000, alias="MAX_FRAME_BYTES", ge=1_024)
    max_title_chars: int = Field(200, alias="MAX_TITLE_CHARS", ge=1)
    max_page_size: int = Field(200, alias="MAX_PAGE_SIZE", ge=1)

    # Platform services (token/address analysis, feed search) and the token index.
    platform_api_url: str = Field("http://127.0.0.1:8788/platform", alias="PLATFORM_API_URL")
    # The data server's key, when it requires one (data_server/access.py): sent as the bearer
    # to the platform services and to the default MCP server (both are the data server).
    data_server_api_key: SecretStr = Field(SecretStr(""), alias="DATA_SERVER_API_KEY")
    typesense_url: str = Field("http://127.0.0.1:8108", alias="TYPESENSE_URL")
    typesense_api_key: SecretStr = Field(SecretStr(""), alias="TYPESENSE_API_KEY")
    # The product's pages a token links to ({base}/token/{chain}/{address}); empty: no link
    # is made (a tenant may set its own).
    deep_link_base_url: str = Field("", alias="DEEP_LINK_BASE_URL")

    # Default MCP server (the project's own vault server in the local stack).
    mcp_default_server_url: str = Field("", alias="MCP_DEFAULT_SERVER_URL")
    mcp_default_server_name: str = Field("vaults", alias="MCP_DEFAULT_SERVER_NAME")
    # What the default server is (albert.mcp.classify; "guess": from its tool names). The
    # platform's data server has vaults.
    mcp_default_server_kind: Literal["vaults", "filesystem", "generic", "guess"] = Field(
        "vaults", alias="MCP_DEFAULT_SERVER_KIND"
    )
    # MCP client: connect bound, health-check cache, recovery (retries, half-open cool-down).
    mcp_connect_timeout_seconds: float = Field(5.0, alias="MCP_CONNECT_TIMEOUT_SECONDS", gt=0)
    mcp_connect_wait_seconds: float = Field(1.0, alias="MCP_CONNECT_WAIT_SECONDS", ge=0)
    mcp_health_cache_seconds: float = Field(10.0, alias="MCP_HEALTH_CACHE_SECONDS", ge=0)
    mcp_retry_base_seconds: float = Field(1.0, alias="MCP_RETRY_BASE_SECONDS", gt=0)
    mcp_retry_max_seconds: float = Field(16.0, alias="MCP_RETRY_MAX_SECONDS", gt=0)
    mcp_retry_attempts: int = Field(5, alias="MCP_RETRY_ATTEMPTS", ge=0, le=20)
    mcp_half_open_cooldown_seconds: float = Field(
        60.0, alias="MCP_HALF_OPEN_COOLDOWN_SECONDS", ge=0
    )
    mcp_max_servers: int = Field(10, alias="MCP_MAX_SERVERS", ge=1, le=50)
    # How MCP host names are resolved for the private-network check: "auto" is DNS over
    # HTTPS in production (Workers have no system resolver) and the system one locally.
    mcp_dns_resolver: Literal["auto", "system", "doh"] = Field("auto", alias="MCP_DNS_RESOLVER")
    mcp_doh_url: str = Field("https://cloudflare-dns.com/dns-query", alias="MCP_DOH_URL")
    # Where each MCP_SECRET_* may be sent: JSON, secret name → {origins, tenants}
    # (albert.mcp.secret_binding). A secret not bound here is never sent anywhere.
    mcp_secrets_json: str = Field("", alias="MCP_SECRETS")

    # Analytics: Amplitude key (no key, no network) and a local JSON-lines file.
    analytics_api_key: SecretStr = Field(SecretStr(""), alias="ANALYTICS_API_KEY")
    analytics_log_path: str = Field("", alias="ANALYTICS_LOG_PATH")

    # Identity: session tokens are signed with the current key; the previous key still
    # verifies until its grace period ends, so a rotation logs nobody out.
    auth_signing_key: SecretStr = Field(SecretStr(""), alias="AUTH_SIGNING_KEY")
    auth_previous_signing_key: SecretStr = Field(SecretStr(""), alias="AUTH_PREVIOUS_SIGNING_KEY")
    auth_previous_key_valid_until: int | None = Field(None, alias="AUTH_PREVIOUS_KEY_VALID_UNTIL")
    session_ttl_seconds: int = Field(30 * 24 * 3600, alias="SESSION_TTL_SECONDS", ge=60)
    tenants_json: str = Field("", alias="TENANTS", description="JSON object: key → tenant")
    allowed_origins: str = Field(
        "", alias="ALLOWED_ORIGINS", description="Comma-separated origins allowed to open the chat"
    )
    # Sign-in with the host product's JWT (albert.auth.host_jwt); per tenant `jwt_issuer`,
    # `jwt_audience` and optionally `jwks_url` in TENANTS. RS256/ES256 keys come from the
    # JWKS URL; HS256 tokens are checked with the shared secret (at least 32 bytes).
    auth_jwks_url: str = Field("", alias="AUTH_JWKS_URL")
    auth_jwt_secret: SecretStr = Field(SecretStr(""), alias="AUTH_JWT_SECRET")
    auth_jwt_leeway_seconds: int = Field(30, alias="AUTH_JWT_LEEWAY_SECONDS", ge=0, le=300)
    # JWKS cache: a response's Cache-Control max-age (this default without one, at least
    # the refresh interval, at most a day); refetched at most once per refresh interval,
    # also for an unknown kid; kept for the stale period after its max-age while the
    # endpoint cannot be reached (or for Cache-Control's stale-if-error).
    auth_jwks_default_max_age_seconds: int = Field(
        300, alias="AUTH_JWKS_DEFAULT_MAX_AGE_SECONDS", ge=0, le=86_400
    )
    auth_jwks_min_refresh_seconds: float = Field(
        30.0, alias="AUTH_JWKS_MIN_REFRESH_SECONDS", ge=0, le=3_600
    )
    auth_jwks_max_stale_seconds: int = Field(
        86_400, alias="AUTH_JWKS_MAX_STALE_SECONDS", ge=0, le=7 * 86_400
    )
    auth_jwks_timeout_seconds: float = Field(5.0, alias="AUTH_JWKS_TIMEOUT_SECONDS", gt=0, le=30)

    # Per-client limits.
    chat_messages_per_minute: int = Field(20, alias="CHAT_MESSAGES_PER_MINUTE", ge=1)
    mcp_changes_per_minute: int = Field(10, alias="MCP_CHANGES_PER_MINUTE", ge=1)
    rate_window_seconds: float = Field(
        60.0,
        alias="RATE_WINDOW_SECONDS",
        gt=0,
        description="The window the two limits above count in",
    )
    max_threads_per_client: int = Field(1_000, alias="MAX_THREADS_PER_CLIENT", ge=1)
    # Open chat sockets per client (the oldest is closed with 4008 beyond it), and every
    # frame a client sends, pings included, counted in RATE_WINDOW_SECONDS.
    max_sockets_per_client: int = Field(8, alias="MAX_SOCKETS_PER_CLIENT", ge=1, le=100)
    frames_per_minute: int = Field(120, alias="FRAMES_PER_MINUTE", ge=1)

    # Shared limits (albert.limits.shared.SharedLimiter; on Cloudflare a limiter Durable Object
    # per key): new clients per address (IPv6: per /64) and model calls per tenant.
    # Unset: on in production with these defaults, off in local mode; 0 turns one off.
    new_sessions_per_ip: int | None = Field(None, alias="NEW_SESSIONS_PER_IP", ge=0)
    new_sessions_window_seconds: float = Field(
        600.0, alias="NEW_SESSIONS_WINDOW_SECONDS", gt=0, le=86_400
    )
    model_calls_per_tenant: int | None = Field(None, alias="MODEL_CALLS_PER_TENANT", ge=0)
    model_budget_window_seconds: float = Field(
        3600.0, alias="MODEL_BUDGET_WINDOW_SECONDS", gt=0, le=30 * 86_400
    )

    # Set from the verified tenant of the object (see for_tenant), never from env.
    tenant_key: str = Field("default", exclude=True)
    tenant_name: str = Field("Albert", exclude=True)
    prompt_flavour: str = Field("", exclude=True)
    mcp_allowed_hosts: list[str] | None = Field(None, exclude=True)

    @classmethod
    def from_env(cls, env: Mapping[str, Any]) -> "Settings":
        """Build settings from a mapping of env names to values; unknown names are ignored."""
        return cls.model_validate({k: v for k, v in env.items() if v is not None})

    def signing_keys(self) -> list[SigningKey]:
        """Keys that verify tokens, current first; a fixed key only in local mode."""
        return list(
            _signing_keys(
                self.auth_signing_key.get_secret_value(),
                self.mode == "local",
                self.auth_previous_signing_key.get_secret_value(),
                self.auth_previous_key_valid_until,
            )
        )

    def for_tenant(self, key: str) -> "Settings":
        """These settings with a tenant's overrides applied (unknown keys: the default)."""
        tenants = self.tenants()
        tenant = tenants.get(key)
        if tenant is None:
            key, tenant = "default", tenants["default"]
        update: dict[str, Any] = {
            "tenant_key": key,
            "tenant_name": tenant.name,
            "prompt_flavour": tenant.prompt_flavour,
            "mcp_allowed_hosts": tenant.allowed_mcp_hosts,
        }
        if tenant.model_name:
            update["model_name"] = tenant.model_name
        if tenant.model_calls_per_window is not None:
            update["model_calls_per_tenant"] = tenant.model_calls_per_window
        if tenant.deep_link_base_url:
            update["deep_link_base_url"] = tenant.deep_link_base_url
        return self.model_copy(update=update)

    def tenants(self) -> dict[str, Tenant]:
        """Configured tenants; the default tenant always exists."""
        return parse_tenants(self.tenants_json, local=self.mode == "local")

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a browser page from `origin` may open the chat socket."""
        if origin is None:
            return True  # not a browser: the token is what protects the socket
        allowed = {o.strip().rstrip("/") for o in self.allowed_origins.split(",") if o.strip()}
        if origin.rstrip("/") in allowed:
            return True
        if self.mode == "local":
            host = origin.split("://", 1)[-1].split(":", 1)[0]
            return host in ("127.0.0.1", "localhost", "[::1]")
        return False

    def session_limit(self) -> int | None:
        """New clients allowed per address per window; None when off."""
        return _limit(self.new_sessions_per_ip, self.mode, production_default=20)

    def model_budget(self) -> int | None:
        """Model calls allowed per tenant per window; None when off."""
        return _limit(self.model_calls_per_tenant, self.mode, production_default=10_000)

    @property
    def uses_demo_planner(self) -> bool:
        """True when no model gateway is configured."""
        return not self.model_base_url


def _limit(value: int | None, mode: str, *, production_default: int) -> int | None:
    if value is None:
        return production_default if mode == "production" else None
    return value or None


@lru_cache(maxsize=16)
def _signing_keys(
    current: str, local: bool, previous: str, previous_valid_until: int | None
) -> tuple[SigningKey, ...]:
    # Parsed once per key setting, not on every request that checks a token.
    keys = []
    if current:
        keys.append(parse_key(current))
    elif local:
        keys.append(parse_key(f"local:{LOCAL_DEV_SIGNING_KEY}"))
    if previous:
        keys.append(parse_key(previous, valid_until=previous_valid_until))
    return tuple(keys)
