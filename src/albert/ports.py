"""Ports between the chat core and the tool layer: the client's sockets and a turn's tools.

Neutral ground: the chat core (`albert.chat`) reaches the tool layer through these, and
`albert.mcp` never depends on the chat core. The chat core does know the MCP layer's own
face: the service holds an `albert.mcp.access.McpAccess` (the HTTP API, a new socket's
status, start and stop), and moving a client's work between objects carries its server
configs (`albert.mcp.config_store`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from albert.ai.prompt import ServerNote
from albert.tools.registry import ToolRegistry


class ChatSocket(Protocol):
    """One accepted WebSocket of this client."""

    def send(self, text: str) -> None:
        """Queue a text frame; a closed socket drops it silently."""
        ...

    def close(self, code: int, reason: str) -> None: ...


class SocketHub(Protocol):
    """Every socket currently open on this object."""

    def sockets(self) -> Sequence[ChatSocket]: ...


class TurnTools(NamedTuple):
    """What the tool layer offers for one turn: local tools, remote ones merged over them."""

    registry: ToolRegistry
    server_notes: Sequence[ServerNote] = ()
    vault_data_available: bool = False


class ToolProvider(Protocol):
    """Supplies the tools of a turn: local ones, with remote ones merged over them."""

    async def tools_for_turn(self) -> TurnTools: ...
