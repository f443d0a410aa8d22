"""Settings of the agent, read from the worker's env bindings (vars and secrets)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class Settings(BaseModel):
    """Every knob of the agent; names match the env vars in wrangler.toml and .dev.vars."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore")

    mode: Literal["local", "production"] = Field("production", alias="ALBERT_MODE")

    # Model gateway. An empty base URL selects the offline demo planner.
    model_base_url: str = Field("", alias="MODEL_BASE_URL")
    model_api_key: SecretStr = Field(SecretStr(""), alias="MODEL_API_KEY")
    model_name: str = Field("gpt-4o-mini", alias="MODEL_NAME")
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
    tool_result_max_chars: int = Field(50_000, alias="TOOL_RESULT_MAX_CHARS", ge=1_000)
    tool_timeout_seconds: float = Field(20.0, alias="TOOL_TIMEOUT_SECONDS", gt=0)

    # Input limits.
    max_message_chars: int = Field(8_000, alias="MAX_MESSAGE_CHARS", ge=1)
    max_frame_bytes: int = Field(64_000, alias="MAX_FRAME_BYTES", ge=1_024)
    max_title_chars: int = Field(200, alias="MAX_TITLE_CHARS", ge=1)
    max_page_size: int = Field(200, alias="MAX_PAGE_SIZE", ge=1)

    # Platform services (token/address analysis, feed search) and the token index.
    platform_api_url: str = Field("http://127.0.0.1:8788/platform", alias="PLATFORM_API_URL")
    typesense_url: str = Field("http://127.0.0.1:8108", alias="TYPESENSE_URL")
    typesense_api_key: SecretStr = Field(SecretStr(""), alias="TYPESENSE_API_KEY")
    deep_link_base_url: str = Field("https://app.albert.example", alias="DEEP_LINK_BASE_URL")

    # Default MCP server (the project's own vault server in the local stack).
    mcp_default_server_url: str = Field("", alias="MCP_DEFAULT_SERVER_URL")
    mcp_default_server_name: str = Field("vaults", alias="MCP_DEFAULT_SERVER_NAME")
    # MCP client: connect bound, health-check cache, retry schedule and half-open cool-down.
    mcp_connect_timeout_seconds: float = Field(5.0, alias="MCP_CONNECT_TIMEOUT_SECONDS", gt=0)
    mcp_connect_wait_seconds: float = Field(1.0, alias="MCP_CONNECT_WAIT_SECONDS", ge=0)
    mcp_health_cache_seconds: float = Field(10.0, alias="MCP_HEALTH_CACHE_SECONDS", ge=0)
    mcp_retry_base_seconds: float = Field(1.0, alias="MCP_RETRY_BASE_SECONDS", gt=0)
    mcp_retry_max_seconds: float = Field(16.0, alias="MCP_RETRY_MAX_SECONDS", gt=0)
    mcp_retry_attempts: int = Field(5, alias="MCP_RETRY_ATTEMPTS", ge=0, le=20)
    mcp_half_open_cooldown_seconds: float = Field(60.0, alias="MCP_HALF_OPEN_COOLDOWN_SECONDS", ge=0)
    mcp_max_servers: int = Field(10, alias="MCP_MAX_SERVERS", ge=1, le=50)

    # Analytics: Amplitude key (no key, no network) and a local JSON-lines file.
    analytics_api_key: SecretStr = Field(SecretStr(""), alias="ANALYTICS_API_KEY")
    analytics_log_path: str = Field("", alias="ANALYTICS_LOG_PATH")

    @classmethod
    def from_env(cls, env: Mapping[str, Any]) -> Settings:
        """Build settings from a mapping of env names to values; unknown names are ignored."""
        return cls.model_validate({k: v for k, v in env.items() if v is not None})

    @property
    def uses_demo_planner(self) -> bool:
        """True when no model gateway is configured."""
        return not self.model_base_url
