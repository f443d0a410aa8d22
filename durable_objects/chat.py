"""ChatDurableObject: one per client; storage, sockets and turns live here.

Thin glue: it adapts the platform's ctx/env to the core's ports and hands every
request and WebSocket event to albert.chat.service.ChatService.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
from workers import DurableObject

from albert.agent import build_chat_service
from albert.chat.service import ChatService
from albert.cloudflare.alarms import WorkersAlarm, env_secret_lookup
from albert.cloudflare.env import env_mapping
from albert.cloudflare.http import is_websocket_upgrade, to_core_request, to_response
from albert.cloudflare.sockets import (
    WorkersSocket,
    WorkersSocketHub,
    accept_websocket,
    message_payload,
)
from albert.cloudflare.sql import WorkersSql

log = logging.getLogger(__name__)


class ChatDurableObject(DurableObject):
    """The chat object of one client."""

    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self.ctx = ctx
        self.env = env
        self._service: ChatService | None = None
        self._http: httpx.AsyncClient | None = None

    def _chat(self) -> ChatService:
        # Built on first use, not in the constructor: a woken object that only
        # answers one request should not pay for what it does not touch.
        if self._service is None:
            self._http = httpx.AsyncClient()
            self._service = build_chat_service(
                sql=WorkersSql(self.ctx.storage.sql),
                hub=WorkersSocketHub(self.ctx),
                env=env_mapping(self.env),
                http=self._http,
                alarms=WorkersAlarm(self.ctx.storage),
                secrets=env_secret_lookup(self.env),
            )
            self._service.start_background()
        return self._service

    async def fetch(self, request: Any) -> Any:
        service = self._chat()
        if is_websocket_upgrade(request):
            return accept_websocket(self.ctx)
        response = await service.handle_http(await to_core_request(request))
        return to_response(response)

    async def webSocketMessage(self, ws: Any, message: Any) -> None:
        await self._chat().handle_frame(WorkersSocket(ws), message_payload(message))

    async def alarm(self, *_info: Any) -> None:
        await self._chat().on_alarm()

    async def webSocketClose(self, ws: Any, code: int, reason: str, was_clean: bool) -> None:
        # Complete the closing handshake; turns in flight finish and are stored anyway.
        WorkersSocket(ws).close(1000 if code in (1005, 1006) else code, "closing")

    async def webSocketError(self, ws: Any, error: Any) -> None:
        log.warning("websocket error: %s", error)
