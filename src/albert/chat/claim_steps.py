"""The claim steps of an object: export, import, commit (see albert.chat.claims).

Imported with the first claim request an object gets, never at start: the bodies'
models and the row transfer (albert.storage.transfer) serve sign-ins only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from albert.auth.tokens import Identity
from albert.chat.claims import CLOSE_SESSION_CLAIMED, MAX_IMPORT_BYTES
from albert.mcp.config_store import McpConfigStore
from albert.mcp.configs import McpServerRow
from albert.ports import SocketHub
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

if TYPE_CHECKING:
    from albert.chat.claims import ClaimsApi

log = logging.getLogger(__name__)


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


class ClaimSteps:
    """The three claim steps of one object; whether it was claimed lives in its ClaimsApi."""

    def __init__(
        self,
        claims: ClaimsApi,
        sql: SqlStorage,
        hub: SocketHub,
        mcp_store: McpConfigStore | None,
        reload_mcp: Callable[[str], Awaitable[None]] | None,
    ) -> None:
        self._claims = claims
        self._sql = sql
        self._hub = hub
        self._mcp_store = mcp_store
        self._reload_mcp = reload_mcp

    async def answer(self, step: str, request: HttpRequest, identity: Identity) -> HttpResponse:
        """Answer one claim step (`export`, `import`, `commit`) for the verified caller."""
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
        claimed_by = self._claims.claimed_by
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
        claimed_by = self._claims.claimed_by
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
        self._claims.mark_claimed(body.to)
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
