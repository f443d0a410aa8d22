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

    @classmethod
    def from_env(cls, env: Mapping[str, Any]) -> Settings:
        """Build settings from a mapping of env names to values; unknown names are ignored."""
        return cls.model_validate({k: v for k, v in env.items() if v is not None})

    @property
    def uses_demo_planner(self) -> bool:
        """True when no model gateway is configured."""
        return not self.model_base_url
