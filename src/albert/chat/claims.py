"""Claiming anonymous work, the object's side: export, import, retire.

When a browser with an anonymous session signs in, the router (albert.auth.claim) moves
the anonymous object's threads and MCP server configs into the user's object in three
steps, each its own request and each safe to repeat:

1. `POST /internal/claim/export` to the anonymous object: everything it holds, with a
   digest of it (or, once claimed, only the pointer to the user's object);
2. `POST /internal/claim/import` to the user's object: upserted by id, so a repeat (or a
   crash and a rerun) leaves one copy;
3. `POST /internal/claim/commit` to the anonymous object: if the digest still matches and
   no turn is running, everything is deleted and `claimed_by` (the pointer) is set, in
   one synchronous step. A changed object answers 409 and the router starts again.

A crash between any two steps leaves either the data where it was (and maybe a copy in
the user's object that the rerun updates in place) or the move complete: nothing is lost
and nothing is doubled. A claimed object is retired: its API answers 410 and its sockets
are closed with 4009, saying where the work went (to whoever holds that session).

These routes (in albert.chat.routes) are never reachable from outside: the router forwards
`/api/*` only. The object still checks who calls: export and commit need the anonymous
session's own token, import a signed-in user's.

This module is what every request and frame touches (is the object claimed?); the steps
themselves, their bodies and the transfer of rows are in albert.chat.claim_steps, imported
with the first claim request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from albert.ports import SocketHub
from albert.storage.meta import ObjectMeta
from albert.storage.ports import SqlStorage
from albert.web import HttpResponse

if TYPE_CHECKING:
    from albert.chat.claim_steps import ClaimSteps
    from albert.mcp.config_store import McpConfigStore

CLAIMED_BY = "claimed_by"
CLOSE_SESSION_CLAIMED = 4009
# The largest import body: another object's whole export, sent by the router.
MAX_IMPORT_BYTES = 64 * 1024 * 1024


class ClaimsApi:
    """Whether one object was claimed already, and its claim steps."""

    def __init__(
        self,
        sql: SqlStorage,
        hub: SocketHub,
        mcp_store: McpConfigStore | None = None,
        reload_mcp: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._sql = sql
        self._hub = hub
        self._meta = ObjectMeta(sql)
        self._mcp_store = mcp_store
        self._reload_mcp = reload_mcp
        # Read on every request and frame; only a commit here ever changes it.
        self._claimed_by = self._meta.get(CLAIMED_BY)
        self._steps: ClaimSteps | None = None

    @property
    def claimed_by(self) -> str | None:
        """The user's object this anonymous object's work moved to, if it was claimed."""
        return self._claimed_by

    def mark_claimed(self, to: str) -> None:
        """Record that the work moved to `to` (the commit step, in its transaction)."""
        self._meta.set(CLAIMED_BY, to)
        self._claimed_by = to

    def gone(self) -> HttpResponse | None:
        """The answer to any request once the object was claimed; None before."""
        if self.claimed_by is None:
            return None
        return HttpResponse.error(
            410,
            "session_claimed",
            "this anonymous session was moved into a signed-in account; sign in to see its "
            "threads, or start a new session",
        )

    def close_socket_if_gone(self, socket: object) -> bool:
        """Close a socket of a claimed object (4009); True when it was closed."""
        if self.claimed_by is None:
            return False
        close = getattr(socket, "close", None)
        if close is not None:
            close(CLOSE_SESSION_CLAIMED, "this session moved to a signed-in account")
        return True

    def steps(self) -> ClaimSteps:
        """The claim steps of this object, made (and their modules imported) on first use."""
        if self._steps is None:
            # No await in between: one ClaimSteps per object.
            from albert.chat.claim_steps import ClaimSteps

            self._steps = ClaimSteps(self, self._sql, self._hub, self._mcp_store, self._reload_mcp)
        return self._steps
