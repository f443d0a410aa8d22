"""The chat object's core: one instance per client, behind the Durable Object glue.

Its HTTP requests are routed by albert.chat.routes; its socket frames go to the turns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert.ai.model import ModelClient
from albert.analytics.chat_events import TurnEvents
from albert.analytics.endpoint import EventsApi
from albert.analytics.service import AnalyticsService
from albert.chat.claims import ClaimsApi
from albert.chat.confirmations import PendingConfirmations
from albert.chat.driver import TurnDriver
from albert.chat.frame_admission import Admission
from albert.chat.interrupted_turns import UnsettledTurns, recover_interrupted_turns
from albert.chat.routes import Answer, answer
from albert.chat.sessions import SessionRevocations
from albert.chat.socket_policy import FrameGate, SocketPolicy
from albert.chat.threads_api import ThreadsApi
from albert.chat.turns import ChatTurns
from albert.clock import Clock
from albert.limits.client_rates import RateLimiter
from albert.ports import ChatSocket, SocketHub, ToolProvider
from albert.settings import Settings
from albert.storage.migrations import THREADS, migrate
from albert.storage.ports import SqlStorage
from albert.storage.threads import ThreadStore, ToolOutputs
from albert.storage.turn_journal import TurnJournal
from albert.web import HttpRequest

if TYPE_CHECKING:
    from albert.auth.tokens import Identity
    from albert.mcp.access import McpAccess


class ChatService:
    """Everything one client's object does: its HTTP API (albert.chat.routes), chat over
    sockets, and the parts the routes reach."""

    def __init__(
        self,
        *,
        sql: SqlStorage,
        clock: Clock,
        settings: Settings,
        model: ModelClient,
        tools: ToolProvider,
        hub: SocketHub,
        analytics: AnalyticsService | None = None,
        mcp: McpAccess | None = None,
    ) -> None:
        migrate(sql, THREADS)
        self.mcp = mcp
        self.settings = settings
        self.clock = clock
        # The cap and token expiry apply to every send, so turns and the MCP status
        # frames reach only sockets that may still listen.
        if not isinstance(hub, SocketPolicy):
            hub = SocketPolicy(hub, clock, settings.max_sockets_per_client)
        self.sockets: SocketPolicy = hub
        self._frames = FrameGate(settings.frames_per_minute, clock, settings.rate_window_seconds)
        self.store = ThreadStore(sql, clock)
        self.analytics = analytics or AnalyticsService.from_settings(settings, clock=clock, sql=sql)
        # Deleting a thread cancels its running turn first (the turns are made below).
        self.threads = ThreadsApi(
            self.store,
            settings,
            self.analytics,
            cancel_turn=self._cancel_thread_turn,
            clock=clock,
        )
        self.events = EventsApi(self.analytics, clock)
        self.outputs = ToolOutputs(sql, clock)
        journal = TurnJournal(sql, clock)
        unsettled = UnsettledTurns(self.store, journal)
        # Before any frame: turns a restart cut off get their end stored (those storage
        # refuses now wait in `unsettled`).
        recover_interrupted_turns(self.store, journal, unsettled)
        self.turns = self._chat_turns(model, tools, hub, clock, journal, unsettled)
        self.mcp_changes = RateLimiter(
            settings.mcp_changes_per_minute, clock, settings.rate_window_seconds
        )
        # A signed-in user's sessions revoked up to a time (a user's object only ever
        # has one set; an anonymous object's mark stays empty).
        self.sessions = SessionRevocations(sql, clock, self.sockets, self.turns.cancel_all)
        # Moving an anonymous client's work into a signed-in user's object.
        self.claims = ClaimsApi(
            sql,
            hub,
            mcp.store if mcp is not None else None,
            mcp.manager.reload if mcp is not None else None,
        )

    async def _cancel_thread_turn(self, thread_id: str) -> bool:
        return await self.turns.cancel_thread(thread_id)

    def _chat_turns(
        self,
        model: ModelClient,
        tools: ToolProvider,
        hub: SocketHub,
        clock: Clock,
        journal: TurnJournal,
        unsettled: UnsettledTurns,
    ) -> ChatTurns:
        """Chat over the sockets: admission, then the driver, its turns recorded as they go."""
        settings = self.settings
        events = TurnEvents(self.analytics)
        chat_limit = RateLimiter(
            settings.chat_messages_per_minute, clock, settings.rate_window_seconds
        )
        # Shared by the driver's turns (which wait) and the frame handler (which answers).
        confirmations = PendingConfirmations(settings.tool_confirm_timeout_seconds)
        driver = TurnDriver(
            store=self.store,
            outputs=self.outputs,
            settings=settings,
            model=model,
            tools=tools,
            events=events,
            journal=journal,
            confirmations=confirmations,
            unsettled=unsettled,
        )
        return ChatTurns(
            admission=Admission(self.store, settings, chat_limit),
            driver=driver,
            hub=hub,
            events=events,
            journal=journal,
            confirmations=confirmations,
            max_frame_bytes=settings.max_frame_bytes,
            unsettled=unsettled,
        )

    async def handle_http(self, request: HttpRequest, caller: Identity | None) -> Answer:
        """Answer an HTTP request routed to this client's object: `caller` is its verified
        session (None on a route that takes none); an admitted upgrade is AcceptSocket."""
        return await answer(self, request, caller)

    async def handle_frame(self, socket: ChatSocket, raw: str | bytes) -> None:
        """Handle one WebSocket frame from this client (expiry, revocation and frame budget
        first)."""
        if self.sockets.ended(socket) or self.claims.close_socket_if_gone(socket):
            return
        if not self._frames.admit(socket):
            return
        await self.turns.on_frame(socket, raw)

    def on_socket_opened(self, socket: ChatSocket | None = None) -> None:
        """A socket was just accepted: keep the client within its socket cap, and tell it
        the MCP servers' current state as its first frame (later frames carry changes)."""
        self.sockets.admit_newest()
        if socket is not None and self.mcp is not None:
            self.mcp.manager.socket_opened(socket)

    def start_background(self) -> None:
        """Begin background work of a starting object (MCP connections); never blocks."""
        if self.mcp is not None:
            self.mcp.manager.start()

    async def close(self) -> None:
        """The host is stopping: close MCP connections (turns were ended before)."""
        if self.mcp is not None:
            await self.mcp.manager.close()

    async def on_alarm(self) -> None:
        """The object's alarm rang (the MCP servers' scheduled recovery retries)."""
        if self.mcp is not None:
            await self.mcp.manager.on_alarm()
