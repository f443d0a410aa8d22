"""What the browser sees of a client's MCP servers: their status, as `GET /api/mcp/status`
answers it and as `mcp_status` frames carry it (a new socket first, then every change)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from albert.clock import Clock
from albert.ports import ChatSocket, SocketHub
from albert.protocol.frames import McpServerStatus, McpStatusFrame

if TYPE_CHECKING:
    from albert.mcp.server import McpServer

log = logging.getLogger(__name__)


class StatusBroadcast:
    """Builds the servers' status and broadcasts it as an `mcp_status` frame."""

    def __init__(
        self, servers: Mapping[str, McpServer], clock: Clock, hub: SocketHub | None
    ) -> None:
        self._servers = servers
        self._clock = clock
        self._hub = hub

    def status(self) -> list[McpServerStatus]:
        """Every configured server's state, in configuration order."""
        now = self._clock.now_ms() / 1000
        return [server.status(now) for server in self._servers.values()]

    def frame(self) -> str:
        """The current status as an `mcp_status` frame."""
        return McpStatusFrame(servers=self.status()).model_dump_json()

    def notify(self) -> None:
        """Send the current status to every socket of this client (never raises).

        Called on every state change: a failing socket list must not undo the change.
        """
        if self._hub is None:
            return
        try:
            text = self.frame()
            for socket in self._hub.sockets():
                socket.send(text)
        except Exception:
            log.exception("could not send the MCP status")

    def send_to(self, socket: ChatSocket) -> None:
        """Send the current status to one (new) socket."""
        socket.send(self.frame())
