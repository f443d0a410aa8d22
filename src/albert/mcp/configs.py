"""MCP server configs of one client, kept in the client's Durable Object SQLite.

A config may carry plain headers and a secret reference: the NAME of an env
secret (MCP_SECRET_*) whose value is added as one header when connecting, and
only to the origins MCP_SECRETS binds it to (albert.mcp.secret_binding). The
value itself is never stored, and neither header values nor secrets are ever
sent back to the browser.

The models live here; the store that reads and writes them is albert.mcp.config_store,
which every object opens and which imports this module only once there is a config.
"""

from __future__ import annotations

import re
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from albert.mcp.classify import ServerKind
from albert.mcp.secret_binding import SECRET_NAME_PATTERN, SecretRefused

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,31}$"
SECRET_REF_PATTERN = SECRET_NAME_PATTERN
HEADER_NAME_PATTERN = r"^[A-Za-z0-9-]{1,64}$"
# Headers the transport sets itself, and the ones that change how a message is framed
# or routed; neither plain headers nor the secret's header may be one (any spelling).
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "content-encoding",
        "transfer-encoding",
        "te",
        "trailer",
        "connection",
        "keep-alive",
        "upgrade",
        "expect",
        "proxy-authorization",
        "proxy-connection",
        "accept",
        "accept-encoding",
        "last-event-id",
        "mcp-session-id",
        "mcp-protocol-version",
    }
)
MAX_HEADERS = 16


class SecretLookup(Protocol):
    """Where a connection gets a secret's value: only for a URL the secret is bound to."""

    def value_for(self, name: str, url: str) -> str:
        """The value, or SecretRefused."""
        ...


# The name the manager catches; every secret refusal is this one exception.
MissingSecret = SecretRefused


def _header_name_error(name: str) -> str | None:
    if not re.fullmatch(HEADER_NAME_PATTERN[1:-1], name):
        return f"invalid header name {name!r}"
    if name.lower() in RESERVED_HEADERS:
        return f"header {name!r} is set by the client itself"
    return None


class McpServerIn(BaseModel):
    """POST /api/mcp/servers: add or replace one server of this client."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(pattern=NAME_PATTERN, description="Short id: lower-case, digits, - and _")
    url: str = Field(min_length=8, max_length=2_000)
    headers: dict[str, str] = Field(default_factory=dict)
    secret_ref: str | None = Field(
        None, pattern=SECRET_REF_PATTERN, description="Name of an env secret, never its value"
    )
    secret_header: str = Field("Authorization", pattern=HEADER_NAME_PATTERN)
    secret_prefix: Literal["Bearer ", ""] = Field(
        "Bearer ", description="Put before the secret value in the header"
    )
    enabled: bool = True
    kind: ServerKind | None = Field(
        None,
        description="What the server is (vaults: live DeFi vault and yield data, which "
        "changes the prompt); unset: guessed from its tool names",
    )
    keep_headers: list[str] = Field(
        default_factory=list,
        max_length=MAX_HEADERS,
        description="Replacing a stored server: names of its stored headers whose stored "
        "values are kept (the browser never sees them); only while the URL's origin stays",
    )

    @field_validator("headers")
    @classmethod
    def _check_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        if len(headers) > MAX_HEADERS:
            raise ValueError(f"at most {MAX_HEADERS} headers")
        seen: set[str] = set()
        for key, value in headers.items():
            error = _header_name_error(key)
            if error is not None:
                raise ValueError(error)
            if key.lower() in seen:
                raise ValueError(f"header {key!r} is given twice")
            seen.add(key.lower())
            if (
                len(value) > 4_000
                or not value.isascii()
                or any(ord(c) < 0x20 or c == "\x7f" for c in value)
            ):
                raise ValueError(f"invalid value for header {key!r}")
        return headers

    @field_validator("secret_header")
    @classmethod
    def _check_secret_header(cls, name: str) -> str:
        error = _header_name_error(name)
        if error is not None:
            raise ValueError(error)
        return name

    @model_validator(mode="after")
    def _secret_header_free(self) -> McpServerIn:
        if self.secret_ref and any(k.lower() == self.secret_header.lower() for k in self.headers):
            raise ValueError(f"header {self.secret_header!r} is given twice (plain and secret)")
        return self


class McpServerConfig(BaseModel):
    """A stored server config (or the default one from settings)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    secret_ref: str | None = None
    secret_header: str = "Authorization"
    secret_prefix: str = "Bearer "
    enabled: bool = True
    source: Literal["client", "default"] = "client"
    kind: ServerKind | None = None

    @property
    def uses_oauth(self) -> bool:
        """A 401 from this server asks the user to authorize (OAuth), not for a fixed key:
        a client's server with no credentials of its own in the config."""
        if self.source == "default" or self.secret_ref is not None:
            return False
        return all(name.lower() != "authorization" for name in self.headers)

    def request_headers(self, secrets: SecretLookup) -> dict[str, str]:
        """Headers to send, with the referenced secret filled in (never stored).

        SecretRefused unless the secret is bound to this config's URL right now.
        """
        out = dict(self.headers)
        if self.secret_ref:
            if _header_name_error(self.secret_header) is not None:
                raise SecretRefused()  # stored before the header rule covered it
            value = secrets.value_for(self.secret_ref, self.url)
            out[self.secret_header] = f"{self.secret_prefix}{value}"
        return out


class McpServerView(BaseModel):
    """What the browser sees of a config: header names only, no values, no secrets."""

    model_config = ConfigDict(defer_build=True)

    name: str
    url: str
    header_names: list[str]
    secret_ref: str | None
    # Where the secret's value goes (a header name and "Bearer " or nothing), so an edit
    # can keep it; never the value.
    secret_header: str = "Authorization"
    secret_prefix: Literal["Bearer ", ""] = "Bearer "
    enabled: bool
    source: Literal["client", "default"]
    kind: ServerKind | None = None

    @classmethod
    def of(cls, config: McpServerConfig) -> McpServerView:
        """The browser-safe view of a config."""
        return cls(
            name=config.name,
            url=config.url,
            header_names=sorted(config.headers),
            secret_ref=config.secret_ref,
            secret_header=config.secret_header,
            secret_prefix="" if config.secret_prefix == "" else "Bearer ",
            enabled=config.enabled,
            source=config.source,
            kind=config.kind,
        )


class McpServerList(BaseModel):
    """GET /api/mcp/servers."""

    model_config = ConfigDict(defer_build=True)

    servers: list[McpServerView]


class McpServerRow(BaseModel):
    """A client's config exactly as stored (moved between objects as is)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str = Field(pattern=NAME_PATTERN)
    url: str
    headers: str
    secret_header: str | None = None
    secret_ref: str | None = None
    enabled: int
    created_at: int
    updated_at: int
    kind: str | None = None

    def same_server(self, stored: dict[str, object]) -> bool:
        """True when a stored row configures the same server the same way."""
        mine = (self.url, self.headers, self.secret_header, self.secret_ref, self.enabled)
        theirs = tuple(
            stored[k] for k in ("url", "headers", "secret_header", "secret_ref", "enabled")
        )
        return mine == theirs
