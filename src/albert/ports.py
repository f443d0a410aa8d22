"""Ports between the chat core and the tool layer: the client's sockets and a turn's tools.

Neutral ground: `albert.chat` and `albert.mcp` both depend on these, never on each other.
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
