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

These routes are never reachable from outside: the router forwards `/api/*` only. The
object still checks who calls: export and commit need the anonymous session's own token,
import a signed-in user's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from albert.auth.tokens import Identity
from albert.mcp.configs import McpConfigStore, McpServerRow
from albert.ports import SocketHub
from albert.storage.meta import ObjectMeta
from albert.storage.ports import SqlStorage
from albert.storage.transfer import (
    ImportCounts,
    ThreadsExport,
    delete_threads,
    digest_of,
    export_threads,
    import_threads,
    running_turns,
)
from albert.web import HttpRequest, HttpResponse

log = logging.getLogger(__name__)

CLAIM_PREFIX = "/internal/claim/"
CLAIMED_BY = "claimed_by"
CLOSE_SESSION_CLAIMED = 4009
MAX_IMPORT_BYTES = 64 * 1024 * 1024


class ClaimExport(BaseModel):
    """What an anonymous object holds (nothing, and the pointer, once claimed)."""

    model_config = ConfigDict(defer_build=True)

    claimed_by: str | None = None
    digest: str = ""
    threads: ThreadsExport = Field(
        default_factory=lambda: ThreadsExport(threads=[], messages=[], tool_outputs=[])
    )
    mcp_servers: list[McpServerRow] = Field(default_factory=list)


class ClaimImport(BaseModel):
    """Body of the import: where the work comes from, and the export itself."""

    model_config = ConfigDict(defer_build=True)

    source: str = Field(min_length=1, max_length=300)
    export: ClaimExport


class ClaimImported(BaseModel):
    """What the user's object now holds of the claimed work."""

    model_config = ConfigDict(defer_build=True)

    counts: ImportCounts
    mcp_servers: list[str] = Field(description="The imported configs' names here")


class ClaimCommit(BaseModel):
    """Body of the commit: the digest imported, and the user's object it went to."""

    model_config = ConfigDict(defer_build=True)

    digest: str = Field(min_length=64, max_length=64)
    to: str = Field(min_length=1, max_length=300)


class ClaimsApi:
    """The claim routes of one object, and whether the object was claimed already."""

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

    @property
    def claimed_by(self) -> str | None:
        """The user's object this anonymous object's work moved to, if it was claimed."""
        return self._claimed_by

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

    @staticmethod
    def handles(path: str) -> bool:
        """True for the claim routes."""
        return path.startswith(CLAIM_PREFIX)

    async def handle(self, request: HttpRequest, identity: Identity) -> HttpResponse:
        """Answer one claim step for the verified caller."""
        if request.method != "POST":
            return HttpResponse.error(405, "method_not_allowed", "use POST")
        step = request.path.removeprefix(CLAIM_PREFIX)
        try:
            if step == "export" and identity.anonymous:
                return HttpResponse.json(self.export())
            if step == "commit" and identity.anonymous:
                return await self._commit(ClaimCommit.model_validate_json(request.body))
            if step == "import" and not identity.anonymous:
                if len(request.body) > MAX_IMPORT_BYTES:
                    return HttpResponse.error(413, "too_large", "claim export too large")
                body = ClaimImport.model_validate_json(request.body)
                return HttpResponse.json(await self.import_(body))
        except ValidationError:
            return HttpResponse.error(422, "invalid_body", f"invalid claim {step} body")
        return HttpResponse.error(403, "forbidden", "not a claim step for this caller")

    def export(self) -> ClaimExport:
        """Everything this object holds, with its digest (only the pointer once claimed)."""
        claimed_by = self.claimed_by
        if claimed_by is not None:
            return ClaimExport(claimed_by=claimed_by)
        return self._snapshot()

    def _snapshot(self) -> ClaimExport:
        threads = export_threads(self._sql)
        servers = self._mcp_store.export_rows() if self._mcp_store is not None else []
        wrapper = ClaimExport(threads=threads, mcp_servers=servers)
        return wrapper.model_copy(update={"digest": digest_of(threads, _Servers(rows=servers))})

    async def import_(self, body: ClaimImport) -> ClaimImported:
        """Upsert another object's export here (idempotent), then connect its servers."""
        if body.export.claimed_by is not None:
            return ClaimImported(counts=ImportCounts(), mcp_servers=[])
        counts = import_threads(self._sql, body.export.threads, body.source)
        names: list[str] = []
        if self._mcp_store is not None:
            names = self._mcp_store.import_rows(body.export.mcp_servers)
        if self._reload_mcp is not None:
            for name in names:
                await self._reload_mcp(name)
        log.info(
            "claim import: %d thread(s), %d message(s), %d MCP server(s)",
            counts.threads,
            counts.messages,
            len(names),
        )
        return ClaimImported(counts=counts, mcp_servers=names)

    async def _commit(self, body: ClaimCommit) -> HttpResponse:
        claimed_by = self.claimed_by
        if claimed_by is not None:
            if claimed_by == body.to:
                return HttpResponse.json({"claimed_by": claimed_by})
            return HttpResponse.error(409, "claimed_elsewhere", "claimed by another account")
        # From here to the pointer no await: one synchronous step, one transaction.
        if running_turns(self._sql):
            return HttpResponse.error(409, "claim_busy", "a turn is running; try again")
        if self._snapshot().digest != body.digest:
            return HttpResponse.error(409, "claim_changed", "the session changed; export again")
        delete_threads(self._sql)
        removed = self._mcp_store.delete_all() if self._mcp_store is not None else []
        self._meta.set(CLAIMED_BY, body.to)
        self._claimed_by = body.to
        for socket in list(self._hub.sockets()):
            socket.close(CLOSE_SESSION_CLAIMED, "this session moved to a signed-in account")
        if self._reload_mcp is not None:
            for name in removed:
                await self._reload_mcp(name)
        log.info("anonymous object claimed; %d MCP server(s) moved", len(removed))
        return HttpResponse.json({"claimed_by": body.to})


class _Servers(BaseModel):
    model_config = ConfigDict(defer_build=True)

    rows: list[McpServerRow]
