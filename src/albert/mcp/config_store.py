"""The MCP server configs of one client in its object's SQLite, and the default server.

Every object opens the store (is there any server to connect?); the config models
(albert.mcp.configs) are imported only when there is one to build, or a request of the
MCP API brings one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from albert.settings import Settings
from albert.storage.migrations import Migrations, migrate
from albert.storage.ports import SqlStorage

if TYPE_CHECKING:
    from albert.mcp.configs import McpServerConfig, McpServerIn, McpServerRow

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
        # (albert.mcp.recovery_policy). Times are Unix seconds.
        """CREATE TABLE IF NOT EXISTS mcp_retry_state (
            name TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            next_at REAL,
            failed_at REAL,
            last_error TEXT
        )""",
    ),
    (
        # A failure no retry can fix (needs authorization, not an MCP endpoint, answers
        # over the caps): no retries, no half-open attempts until the config changes.
        "ALTER TABLE mcp_retry_state ADD COLUMN final INTEGER NOT NULL DEFAULT 0",
    ),
    # What the server is, when its config says (albert.mcp.classify); NULL: guessed.
    ("ALTER TABLE mcp_servers ADD COLUMN kind TEXT",),
    # The final failure is the server asking for the user's authorization (OAuth).
    ("ALTER TABLE mcp_retry_state ADD COLUMN authorize INTEGER NOT NULL DEFAULT 0",),
    (
        # OAuth of each server (albert.mcp.oauth_store): the registered client, tokens,
        # and the one authorization waiting for its callback. Never sent to the browser.
        """CREATE TABLE IF NOT EXISTS mcp_oauth (
            name TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            record TEXT NOT NULL,
            pending_nonce TEXT UNIQUE,
            updated_at INTEGER NOT NULL
        )""",
    ),
]
# The MCP namespace of the object's migrations, applied by the one runner.
MCP_SCHEMA = Migrations("mcp", "mcp_schema_migrations", MCP_MIGRATIONS)


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
        from albert.mcp.configs import McpServerConfig

        key = self._settings.data_server_api_key.get_secret_value()
        return McpServerConfig(
            name=self._settings.mcp_default_server_name,
            url=url,
            # The deployment's own server: its key comes from the deployment's secret.
            headers={"Authorization": f"Bearer {key}"} if key else {},
            source="default",
            kind=None if (kind := self._settings.mcp_default_server_kind) == "guess" else kind,
        )

    def has_any(self) -> bool:
        """True when at least one server is configured (cheap; used before importing mcp)."""
        if self.default() is not None:
            return True
        return bool(self._sql.execute("SELECT 1 AS one FROM mcp_servers LIMIT 1"))

    def client_configs(self) -> list[McpServerConfig]:
        """The client's own configs, by name."""
        rows = self._sql.execute(
            "SELECT name, url, headers, secret_header, secret_ref, enabled, kind "
            "FROM mcp_servers ORDER BY name"
        )
        if not rows:
            return []
        from albert.mcp.configs import McpServerConfig

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
                    kind=row["kind"],
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
            "created_at, updated_at, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET url = excluded.url, headers = excluded.headers, "
            "secret_header = excluded.secret_header, secret_ref = excluded.secret_ref, "
            "enabled = excluded.enabled, updated_at = excluded.updated_at, kind = excluded.kind",
            body.name,
            body.url,
            json.dumps(body.headers),
            f"{body.secret_prefix}|{body.secret_header}",
            body.secret_ref,
            1 if body.enabled else 0,
            now,
            now,
            body.kind,
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
            "updated_at, kind FROM mcp_servers ORDER BY name"
        )
        from albert.mcp.configs import McpServerRow

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
                "enabled, created_at, updated_at, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                name,
                row.url,
                row.headers,
                row.secret_header,
                row.secret_ref,
                row.enabled,
                row.created_at,
                row.updated_at,
                row.kind,
            )
            return name
        raise ValueError(f"no free name for MCP server {row.name!r}")

    def delete_all(self) -> list[str]:
        """Remove every config of the client; returns their names."""
        names = [str(r["name"]) for r in self._sql.execute("SELECT name FROM mcp_servers")]
        self._sql.execute("DELETE FROM mcp_servers")
        return names


def _import_names(name: str) -> list[str]:
    """`name`, then `name-2` … `name-99`, each within the 32-character limit."""
    names = [name]
    for n in range(2, 100):
        suffix = f"-{n}"
        names.append(name[: 32 - len(suffix)] + suffix)
    return names
