"""A turn's tools: the local ones, with every ready server's tools merged over them.

Remote tools pass the quarantine gate as they are merged; a server that cannot
list its tools costs the turn nothing but those tools. Each server adds a note
for the prompt: its guidance when it is connected, or that it is not. A remote tool's call
goes to the server of its name at the time of the call (`ToolCatalogue.call`), so a tool
of an earlier turn reaches the server as it is configured now, or says it is gone.

Names are the platform's first: the built-in tools, then the default server's (which may
replace a built-in one), then each client server's in name order. A client server's tool
whose name is taken already, or is one of the platform's (`PLATFORM_TOOL_NAMES`, a fixed
list: the default server's names stay reserved while it is down, and `read_tool_result`,
which the turn adds last), also as a strict gateway folds names, is offered as
`server__tool`, and one whose name has characters model APIs refuse (a dot is legal in MCP)
with those replaced; the server is still called by its own name. So no server a client
adds can stand in for a platform tool, whatever state the platform's servers are in.
Renames show in the server's status.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from albert.ai.prompt import ServerNote
from albert.mcp.classify import guidance_for
from albert.mcp.remote_tool import RemoteToolSpec, remote_tool
from albert.ports import TurnTools
from albert.tools.base import Tool, ToolResult
from albert.tools.platform_names import PLATFORM_TOOL_NAMES
from albert.tools.quarantine import NAME_PATTERN, sanitised
from albert.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from albert.mcp.server import McpServer

_REFUSED_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]")
_RESERVED = frozenset(sanitised(name) for name in PLATFORM_TOOL_NAMES)
# Added to the turn after every server's tools, so it would silently replace a server's.
_ADDED_LAST = frozenset({sanitised("read_tool_result")})
TASK_ONLY = 'it runs only as a task (execution.taskSupport "required"), which Albert does not run'

UNAVAILABLE = (
    "This server is not connected right now, so its tools cannot be used in this answer; "
    "say so if the question needs them."
)
NEEDS_AUTHORIZATION = (
    "This server waits for the user's authorization, so its tools cannot be used yet; if "
    "the question needs them, tell the user to press Authorize on the server in the chat."
)


class ToolCatalogue:
    """Builds the TurnTools of one turn from the local tools and the servers, and runs the
    remote tools it offered on their servers."""

    def __init__(self, servers: Mapping[str, McpServer], local_tools: Sequence[Tool]) -> None:
        self._servers = servers
        self._local = list(local_tools)

    async def build(self) -> TurnTools:
        """Local tools with every ready server's tools merged over them, and the notes."""
        registry = ToolRegistry(self._local)
        if not self._servers:
            return TurnTools(registry=registry)
        notes: list[ServerNote] = []
        vaults = False
        ordered = sorted(
            self._servers.values(), key=lambda s: (s.config.source != "default", s.name)
        )
        for server in ordered:
            note, has_vaults = await self._offer(server, registry)
            if note is not None:
                notes.append(note)
            vaults = vaults or has_vaults
        return TurnTools(registry=registry, server_notes=notes, vault_data_available=vaults)

    async def call(
        self, server_name: str, spec: RemoteToolSpec, arguments: dict[str, Any]
    ) -> ToolResult:
        """Run a remote tool on the server of that name now (the `Invoker` of every tool
        offered here)."""
        server = self._servers.get(server_name)
        if server is None:
            return ToolResult.error(
                f"{spec.name} is unavailable: the {server_name} server is not connected right now"
            )
        return await server.call(spec, arguments)

    async def _offer(
        self, server: McpServer, registry: ToolRegistry
    ) -> tuple[ServerNote | None, bool]:
        """Merge one server's tools into the registry: its prompt note, and if it has vaults."""
        if server.state != "ready":
            if server.state == "needs_authorization":
                return ServerNote(server=server.name, guidance=NEEDS_AUTHORIZATION), False
            if server.state in ("reconnecting", "failed", "connecting"):
                return ServerNote(server=server.name, guidance=UNAVAILABLE), False
            return None, False
        specs = await server.fresh_tools()
        if specs is None:
            return None, False
        server.watch()
        tools, renamed, task_only = self._named(server, specs, registry)
        rejected = registry.merge(tools, source=server.name)
        offered = [tool.name for tool in tools if registry.get(tool.name) is tool]
        server.quarantine(
            [*task_only, *(f"{r.tool}: {r.reason}" for r in rejected)], renamed, offered
        )
        kind = server.kind or "generic"
        note = ServerNote(server=server.name, guidance=guidance_for(kind, server.instructions))
        return note, kind == "vaults"

    def _named(
        self, server: McpServer, specs: Sequence[RemoteToolSpec], registry: ToolRegistry
    ) -> tuple[list[Tool], list[str], list[str]]:
        """The server's tools under the names the model may see, what was renamed, and the
        tools left out because they run only as tasks."""
        if server.config.source == "default":
            # The platform's own server may replace a built-in tool, not the one added last.
            taken = _ADDED_LAST
        else:
            taken = _RESERVED | {sanitised(name) for name in registry.names()}
        tools: list[Tool] = []
        renamed: list[str] = []
        task_only: list[str] = []
        for spec in specs:
            if spec.task_required:
                task_only.append(f"{spec.name[:80]}: {TASK_ONLY}")
                continue
            name = spec.name
            if not NAME_PATTERN.match(name) and len(name) <= 64:
                name = _REFUSED_CHARACTERS.sub("_", name)
            if sanitised(name) in taken:
                name = f"{server.name}__{name}"
            if name != spec.name:
                renamed.append(f"{spec.name[:80]} → {name}")
            tools.append(remote_tool(server.name, spec, self.call, name=name))
        return tools, renamed, task_only
