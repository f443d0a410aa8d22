"""What the browser sees of the MCP servers: their status, sent to every socket on a change
and to each new socket as its first frame."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from albert.clock import Clock
from albert.ports import ChatSocket, SocketHub
from albert.protocol.frames import McpServerStatus, McpStatusFrame

if TYPE_CHECKING:
    from albert.mcp.server_state import ServerState

log = logging.getLogger(__name__)


class StatusBroadcast:
    """Builds the servers' status and broadcasts it as an `mcp_status` frame."""

    def __init__(
        self, servers: Mapping[str, ServerState], clock: Clock, hub: SocketHub | None
    ) -> None:
        self._servers = servers
        self._clock = clock
        self._hub = hub

    def status(self) -> list[McpServerStatus]:
        """Every configured server's state, in configuration order."""
        now = self._clock.now_ms() / 1000
        return [_status_of(server, now) for server in self._servers.values()]

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


def _status_of(server: ServerState, now: float) -> McpServerStatus:
    ready = server.state == "ready"
    next_at = server.retry.next_at
    if server.state == "failed":
        # The half-open try: after the cool-down (on the alarm while a socket is open).
        next_at = server.retry.half_open_at
    return McpServerStatus(
        name=server.name,
        state=server.state,
        kind=server.kind if ready else None,
        tools=len(server.tools or []) if ready else 0,
        attempts=server.retry.attempts,
        next_retry_in_seconds=None if next_at is None else max(0.0, next_at - now),
        last_error=server.last_error,
        quarantined=server.quarantined,
        renamed=server.renamed,
    )
