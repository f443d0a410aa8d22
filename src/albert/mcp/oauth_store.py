"""What the object keeps of each MCP server's OAuth, in its own SQLite (`mcp_oauth`).

One row per server: the authorization server it uses, the client we registered there,
the tokens, and the one authorization waiting for its callback (PKCE verifier and the
state's nonce). A row remembers the server URL it was made for: a config pointing
elsewhere starts from nothing, so a token never travels to another server. Nothing of a
row is ever sent to the browser; the status only says `needs_authorization` or not.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from albert.mcp.config_store import MCP_SCHEMA
from albert.storage.migrations import migrate
from albert.storage.ports import SqlStorage

UNKNOWN_AUTHORIZATION = "this authorization is not known here (used or replaced)"


class AuthorizationFailed(Exception):
    """An authorization could not go on; the message is short and safe to show."""


class PendingAuthorization(BaseModel):
    """An authorization sent to the browser, until its callback comes (or it expires)."""

    model_config = ConfigDict(defer_build=True)

    nonce: str
    verifier: str
    redirect_uri: str
    scope: str | None = None
    created_at: float


class OAuthRecord(BaseModel):
    """One server's OAuth as the flow (albert.mcp.oauth_flow) left it."""

    model_config = ConfigDict(defer_build=True)

    # The WWW-Authenticate header of the server's last 401 (where its metadata is, scope).
    challenge: str | None = None
    resource: str | None = None
    issuer: str | None = None
    # The authorization server's metadata (RFC 8414) and our registration there (RFC
    # 7591), as JSON objects the flow parses with the SDK's models.
    metadata: dict[str, Any] | None = None
    client: dict[str, Any] | None = None
    # Where the registration can be read back (RFC 7592), when the server offers it: how
    # the flow learns that the server has forgotten it (a restart, a clean-up).
    registration_uri: str | None = None
    registration_token: str | None = None
    access_token: str | None = None
    refresh_token: str | None = None
    token_type: str = "Bearer"
    expires_at: float | None = None
    scope: str | None = None
    pending: PendingAuthorization | None = None
    # Why the last tokens were dropped, in the user's words, until new ones arrive: the
    # server's status says it beside "authorize again".
    ended: str | None = None

    @property
    def has_tokens(self) -> bool:
        """An access token is stored (valid or not)."""
        return self.access_token is not None

    def without_tokens(self, ended: str | None = None) -> OAuthRecord:
        """The same record with its tokens dropped (refused by the server or the issuer);
        `ended` says why, when it is known."""
        return self.model_copy(
            update={
                "access_token": None,
                "refresh_token": None,
                "expires_at": None,
                "ended": ended or self.ended,
            }
        )

    def without_client(self) -> OAuthRecord:
        """The same record without our registration: the next authorization registers anew."""
        return self.model_copy(
            update={"client": None, "registration_uri": None, "registration_token": None}
        )


class OAuthStore:
    """Reads and writes `mcp_oauth`."""

    def __init__(self, sql: SqlStorage, now_ms: Any) -> None:
        migrate(sql, MCP_SCHEMA)
        self._sql = sql
        self._now_ms = now_ms

    def get(self, name: str, url: str) -> OAuthRecord | None:
        """The server's record, if one was made for this URL."""
        rows = self._sql.execute("SELECT url, record FROM mcp_oauth WHERE name = ?", name)
        if not rows or rows[0]["url"] != url:
            return None
        return OAuthRecord.model_validate_json(rows[0]["record"])

    def save(self, name: str, url: str, record: OAuthRecord) -> None:
        """Replace the server's record."""
        nonce = record.pending.nonce if record.pending is not None else None
        self._sql.execute(
            "INSERT INTO mcp_oauth (name, url, record, pending_nonce, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET url = excluded.url, "
            "record = excluded.record, pending_nonce = excluded.pending_nonce, "
            "updated_at = excluded.updated_at",
            name,
            url,
            record.model_dump_json(exclude_none=True),
            nonce,
            self._now_ms(),
        )

    def challenged(self, name: str, url: str, header: str) -> str | None:
        """The server refused us (401): keep its challenge, drop the tokens it refused.

        Returns why the last authorization ended, when the flow knew (for the status)."""
        record = self.get(name, url) or OAuthRecord()
        self.save(name, url, record.without_tokens().model_copy(update={"challenge": header}))
        return record.ended

    def has_tokens(self, name: str, url: str) -> bool:
        """Tokens are stored for this server (cheap: no SDK import)."""
        record = self.get(name, url)
        return record is not None and record.has_tokens

    def pending(self, nonce: str) -> tuple[str, str, OAuthRecord] | None:
        """The server (name, url, record) whose authorization waits for this nonce."""
        rows = self._sql.execute(
            "SELECT name, url, record FROM mcp_oauth WHERE pending_nonce = ?", nonce
        )
        if not rows:
            return None
        row = rows[0]
        return str(row["name"]), str(row["url"]), OAuthRecord.model_validate_json(row["record"])

    def forget(self, name: str) -> None:
        """The server's config went: its client and tokens go with it."""
        self._sql.execute("DELETE FROM mcp_oauth WHERE name = ?", name)
