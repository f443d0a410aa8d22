"""Servers whose connection attempts a test scripts, on a site of the real shared parts.

The recovery scheduler and the state machine are the real ones; only an attempt's outcome
is the test's (`Script`: it records a failure or a connection on the server, and says
which).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from albert.clock import Clock
from albert.mcp.background import BackgroundTasks
from albert.mcp.configs import McpServerConfig
from albert.mcp.recovery_policy import RecoveryPolicy
from albert.mcp.recovery_scheduler import RecoveryScheduler
from albert.mcp.secret_binding import SecretBinding
from albert.mcp.server import McpServer, ServerSite
from albert.mcp.ssrf import system_resolver
from albert.mcp.status import StatusBroadcast
from albert.mcp.turn_tools import ToolCatalogue
from albert.ports import SocketHub
from albert.settings import Settings

Script = Callable[[McpServer], Awaitable[bool]]


@dataclass
class RecordingAlarm:
    at_ms: int | None = None
    history: list[int | None] = field(default_factory=list)

    async def set_alarm(self, at_ms: int) -> None:
        self.at_ms = at_ms
        self.history.append(at_ms)

    async def get_alarm(self) -> int | None:
        return self.at_ms

    async def delete_alarm(self) -> None:
        self.at_ms = None
        self.history.append(None)


class ScriptedServer(McpServer):
    """A server whose every connection attempt is its `script`."""

    def __init__(self, config: McpServerConfig, site: ServerSite, script: Script) -> None:
        super().__init__(config, site)
        self.script = script

    async def connect(self) -> bool:
        return await self.script(self)


def site_for(
    scheduler: RecoveryScheduler,
    servers: dict[str, McpServer],
    clock: Clock,
    hub: SocketHub | None = None,
) -> ServerSite:
    """What `servers` share: `scheduler`, and the status sent to `hub`'s sockets."""
    return ServerSite(
        configs={},
        settings=Settings(),
        secrets=SecretBinding({}, "default", lambda _name: None),
        resolver=system_resolver,
        clock=clock,
        scheduler=scheduler,
        catalogue=ToolCatalogue(servers, []),
        tasks=BackgroundTasks(),
        status=StatusBroadcast(servers, clock, hub),
    )


def lone_server(config: McpServerConfig, clock: Clock, hub: SocketHub | None = None) -> McpServer:
    """One server on a site of its own (a scheduler with nothing to arm for), its status
    sent to `hub`'s sockets."""
    servers: dict[str, McpServer] = {}
    scheduler = RecoveryScheduler(
        servers, policy=RecoveryPolicy(), alarms=RecordingAlarm(), clock=clock
    )
    server = McpServer(config, site_for(scheduler, servers, clock, hub))
    servers[config.name] = server
    return server
