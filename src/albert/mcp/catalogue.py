"""A turn's tools: the local ones, with every ready server's tools merged over them.

Remote tools pass the quarantine gate as they are merged; a server that cannot
list its tools costs the turn nothing but those tools. Each server adds a note
for the prompt: its guidance when it is connected, or that it is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from albert.ai.prompt import ServerNote
from albert.mcp.classify import guidance_for
from albert.mcp.health import HealthCheck
from albert.mcp.remote_tool import Invoker, RemoteTool
from albert.mcp.server_state import ServerState
from albert.ports import TurnTools
from albert.tools.base import Tool
from albert.tools.registry import ToolRegistry

UNAVAILABLE = (
    "This server is not connected right now, so its tools cannot be used in this answer; "
    "say so if the question needs them."
)


class ToolCatalogue:
    """Builds the TurnTools of one turn from the local tools and the servers' state."""

    def __init__(
        self,
        servers: Mapping[str, ServerState],
        *,
        local_tools: Sequence[Tool],
        health: HealthCheck,
        invoke: Invoker,
    ) -> None:
        self._servers = servers
        self._local = list(local_tools)
        self._health = health
        self._invoke = invoke

    async def build(self) -> TurnTools:
        """Local tools with every ready server's tools merged over them, and the notes."""
        registry = ToolRegistry(self._local)
        if not self._servers:
            return TurnTools(registry=registry)
        notes: list[ServerNote] = []
        vaults = False
        for server in list(self._servers.values()):
            note, has_vaults = await self._offer(server, registry)
            if note is not None:
                notes.append(note)
            vaults = vaults or has_vaults
        return TurnTools(registry=registry, server_notes=notes, vault_data_available=vaults)

    async def _offer(
        self, server: ServerState, registry: ToolRegistry
    ) -> tuple[ServerNote | None, bool]:
        """Merge one server's tools into the registry: its prompt note, and if it has vaults."""
        if server.state != "ready":
            if server.state in ("reconnecting", "failed", "connecting"):
                return ServerNote(server=server.name, guidance=UNAVAILABLE), False
            return None, False
        specs = await self._health.fresh_tools(server)
        if specs is None:
            return None, False
        self._health.watch(server)
        rejected = registry.merge(
            [RemoteTool(server.name, spec, self._invoke) for spec in specs], source=server.name
        )
        server.quarantine([f"{r.tool}: {r.reason}" for r in rejected])
        kind = server.kind or "generic"
        note = ServerNote(server=server.name, guidance=guidance_for(kind, server.instructions))
        return note, kind == "vaults"
