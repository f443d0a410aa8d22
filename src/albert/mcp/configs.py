"""MCP server configs of one client, kept in the client's Durable Object SQLite.

A config may carry plain headers and a secret reference: the NAME of an env
secret (MCP_SECRET_*) whose value is added as one header when connecting, and
only to the origins MCP_SECRETS binds it to (albert.mcp.secret_binding). The
value itself is never stored, and neither header values nor secrets are ever
sent back to the browser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from albert.mcp.secret_binding import SECRET_NAME_PATTERN, SecretRefused
from albert.settings import Settings
from albert.storage.migrations import Migrations, migrate
from albert.storage.ports import SqlStorage

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


# Append only: each entry runs once per object, recorded in mcp_schema_migrations.
MCP_MIGRATIONS: list[tuple[str, ...]] = [
    (
        """CREATE TABLE IF NOT EXISTS mcp_servers (
            name TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            headers TEXT NOT NULL,
            secret_header TEXT,
            secret_ref TEXT,
            enabled INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        )""",
    ),
    (
        # Where each server is in its recovery cycle, so eviction does not restart it
        # (albert.mcp.retry_log). Times are Unix seconds.
        """CREATE TABLE IF NOT EXISTS mcp_retry_state (
            name TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            next_at REAL,
            failed_at REAL,
            last_error TEXT
        )""",
    ),
]
# The MCP namespace of the object's migrations, applied by the one runner.
MCP_SCHEMA = Migrations("mcp", "mcp_schema_migrations", MCP_MIGRATIONS)


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
    enabled: bool
    source: Literal["client", "default"]

    @classmethod
    def of(cls, config: McpServerConfig) -> McpServerView:
        """The browser-safe view of a config."""
        return cls(
            name=config.name,
            url=config.url,
            header_names=sorted(config.headers),
            secret_ref=config.secret_ref,
            enabled=config.enabled,
            source=config.source,
        )


class McpServerList(BaseModel):
    """GET /api/mcp/servers."""

    model_config = ConfigDict(defer_build=True)

    servers: list[McpServerView]


class McpConfigStore:
    """The client's MCP server configs, plus the default server from settings."""

    def __init__(self, sql: SqlStorage, settings: Settings, now_ms: Callable[[], int]) -> None:
        migrate(sql, MCP_SCHEMA)
        self._sql = sql
        self._settings = settings
        self._now_ms = now_ms

    def default(self) -> McpServerConfig | None:
        """The settings' default server, if one is configured."""
        url = self._settings.mcp_default_server_url.strip()
        if not url:
            return None
        return McpServerConfig(
            name=self._settings.mcp_default_server_name, url=url, source="default"
        )

    def has_any(self) -> bool:
        """True when at least one server is configured (cheap; used before importing mcp)."""
        if self.default() is not None:
            return True
        return bool(self._sql.execute("SELECT 1 AS one FROM mcp_servers LIMIT 1"))

    def client_configs(self) -> list[McpServerConfig]:
        """The client's own configs, by name."""
        rows = self._sql.execute(
            "SELECT name, url, headers, secret_header, secret_ref, enabled "
            "FROM mcp_servers ORDER BY name"
        )
        out = []
        for row in rows:
            prefix, _, header = (row["secret_header"] or "Bearer |Authorization").partition("|")
            out.append(
                McpServerConfig(
                    name=row["name"],
                    url=row["url"],
                    headers=json.loads(row["headers"]),
                    secret_ref=row["secret_ref"],
                    secret_header=header or "Authorization",
                    secret_prefix=prefix,
                    enabled=bool(row["enabled"]),
                )
            )
        return out

    def all(self) -> list[McpServerConfig]:
        """Configs in force: the client's own, and the default unless one of them shadows it."""
        own = self.client_configs()
        default = self.default()
        if default is not None and all(c.name != default.name for c in own):
            return [default, *own]
        return own

    def get(self, name: str) -> McpServerConfig | None:
        """The config in force under that name."""
        return next((c for c in self.all() if c.name == name), None)

    def count_client(self) -> int:
        """How many configs the client stored."""
        rows = self._sql.execute("SELECT COUNT(*) AS n FROM mcp_servers")
        return int(rows[0]["n"]) if rows else 0

    def put(self, body: McpServerIn) -> McpServerConfig:
        """Insert or replace the client's config of that name."""
        now = self._now_ms()
        # The prefix rides along in secret_header ("prefix|header") to keep one table shape.
        self._sql.execute(
            "INSERT INTO mcp_servers (name, url, headers, secret_header, secret_ref, enabled, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET url = excluded.url, headers = excluded.headers, "
            "secret_header = excluded.secret_header, secret_ref = excluded.secret_ref, "
            "enabled = excluded.enabled, updated_at = excluded.updated_at",
            body.name,
            body.url,
            json.dumps(body.headers),
            f"{body.secret_prefix}|{body.secret_header}",
            body.secret_ref,
            1 if body.enabled else 0,
            now,
            now,
        )
        config = self.get(body.name)
        assert config is not None
        return config

    def delete(self, name: str) -> bool:
        """Remove the client's config; False when it had none of that name."""
        found = self._sql.execute("SELECT 1 AS one FROM mcp_servers WHERE name = ?", name)
        if not found:
            return False
        self._sql.execute("DELETE FROM mcp_servers WHERE name = ?", name)
        return True

    # --- moving configs to another object (an anonymous client signing in) ------------

    def export_rows(self) -> list[McpServerRow]:
        """The client's own configs as stored, by name (the default server is not theirs)."""
        rows = self._sql.execute(
            "SELECT name, url, headers, secret_header, secret_ref, enabled, created_at, "
            "updated_at FROM mcp_servers ORDER BY name"
        )
        return [McpServerRow(**r) for r in rows]

    def import_rows(self, rows: list[McpServerRow]) -> list[str]:
        """Add configs from another object; returns the name each got here.

        Repeating an import changes nothing: a config equal to one stored under its name
        (or under a name an earlier import gave it) is that one. A config whose name is
        taken by a different one is stored as `name-2`, `name-3` …, so none is lost.
        """
        return [self._import_row(row) for row in rows]

    def _import_row(self, row: McpServerRow) -> str:
        for name in _import_names(row.name):
            found = self._sql.execute(
                "SELECT url, headers, secret_header, secret_ref, enabled FROM mcp_servers "
                "WHERE name = ?",
                name,
            )
            if found:
                if row.same_server(found[0]):
                    return name
                continue
            self._sql.execute(
                "INSERT INTO mcp_servers (name, url, headers, secret_header, secret_ref, "
                "enabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                name,
                row.url,
                row.headers,
                row.secret_header,
                row.secret_ref,
                row.enabled,
                row.created_at,
                row.updated_at,
            )
            return name
        raise ValueError(f"no free name for MCP server {row.name!r}")

    def delete_all(self) -> list[str]:
        """Remove every config of the client; returns their names."""
        names = [str(r["name"]) for r in self._sql.execute("SELECT name FROM mcp_servers")]
        self._sql.execute("DELETE FROM mcp_servers")
        return names


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

    def same_server(self, stored: dict[str, object]) -> bool:
        """True when a stored row configures the same server the same way."""
        mine = (self.url, self.headers, self.secret_header, self.secret_ref, self.enabled)
        theirs = tuple(
            stored[k] for k in ("url", "headers", "secret_header", "secret_ref", "enabled")
        )
        return mine == theirs


def _import_names(name: str) -> list[str]:
    """`name`, then `name-2` … `name-99`, each within the 32-character limit."""
    names = [name]
    for n in range(2, 100):
        suffix = f"-{n}"
        names.append(name[: 32 - len(suffix)] + suffix)
    return names
