"""ChatDurableObject: one per client; storage, sockets and turns live here.

Thin glue: it adapts the platform's ctx/env to the core's ports, converts each request,
verifies its session token where its route takes one, accepts the sockets the core
admits, and hands everything else to albert.chat.service.ChatService (every route the
object answers: albert.chat.routes).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx
from workers import DurableObject

from albert.auth.errors import JwksUnavailable
from albert.auth.identify import Authenticator, refusal
from albert.auth.tenants import DEFAULT_TENANT
from albert.auth.tokens import TokenError
from albert.chat.routes import AcceptSocket, body_cap, takes_session
from albert.chat.service import ChatService
from albert.cloudflare.ai import platform_model
from albert.cloudflare.context import WaitUntil
from albert.cloudflare.env import env_mapping, env_secret_lookup
from albert.cloudflare.fetch import outbound_client
from albert.cloudflare.http import to_core_request, to_response
from albert.cloudflare.shared_limiter import shared_limiter
from albert.cloudflare.sockets import (
    WorkersSocket,
    WorkersSocketHub,
    accept_websocket_pair,
    message_payload,
)
from albert.cloudflare.sql import WorkersSql
from albert.cloudflare.storage_alarm import WorkersAlarm
from albert.composition import build_chat_service
from albert.settings import Settings
from albert.storage.meta import TENANT, ObjectMeta
from albert.web import BadRequest, HttpResponse

log = logging.getLogger(__name__)


class ChatDurableObject(DurableObject):
    """The chat object of one client."""

    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self.ctx = ctx
        self.env = env
        self._service: ChatService | None = None
        self._http: httpx.AsyncClient | None = None
        self._settings: Settings | None = None
        self._auth: Authenticator | None = None

    def settings(self) -> Settings:
        """The worker's settings, read once per instance."""
        if self._settings is None:
            self._settings = Settings.from_env(env_mapping(self.env))
        return self._settings

    def _chat(self, tenant: str | None = None) -> ChatService:
        # Built on first use, not in the constructor: a woken object that only
        # answers one request should not pay for what it does not touch.
        if self._service is None:
            sql = WorkersSql(self.ctx.storage.sql, self.ctx.storage)
            meta = ObjectMeta(sql)
            if tenant is not None and meta.get(TENANT) is None:
                meta.set(TENANT, tenant)
            self._service = build_chat_service(
                sql=sql,
                tenant=meta.get(TENANT) or DEFAULT_TENANT,
                hub=WorkersSocketHub(self.ctx),
                env=env_mapping(self.env),
                http=self._outbound(),
                alarms=WorkersAlarm(self.ctx.storage),
                secrets=env_secret_lookup(self.env, "MCP_SECRET_"),
                defer=WaitUntil(self.ctx),
                model=platform_model(self.env),
                limiter=shared_limiter(self.env),
                object_id=self.ctx.id.toString(),
            )
            self._service.start_background()
        return self._service

    def _outbound(self) -> httpx.AsyncClient:
        # On Cloudflare the platform's fetch carries httpx (albert.cloudflare.fetch).
        if self._http is None:
            self._http = outbound_client()
        return self._http

    def _authenticator(self) -> Authenticator:
        if self._auth is None:
            self._auth = Authenticator(
                self.settings(),
                self._outbound,
                secrets=env_secret_lookup(self.env, "AUTH_JWT_SECRET"),
            )
        return self._auth

    async def fetch(self, request: Any) -> Any:
        try:
            core = await to_core_request(request, max_body=body_cap)
        except BadRequest as exc:
            # Framed twice or over its bound: refused before (or as soon as) the body
            # passes it, never read whole (albert.request_bodies).
            return to_response(HttpResponse.error(exc.status, exc.error, exc.detail))
        caller = None
        if takes_session(core):
            # The router verified the token already; checking again here means the object
            # never trusts a caller for its tenant, and learns it from the token alone.
            try:
                caller = await self._authenticator().identify(core, int(time.time()))
            except (TokenError, JwksUnavailable) as exc:
                return to_response(refusal(exc))
        service = self._chat(caller.tenant if caller is not None else None)
        answer = await service.handle_http(core, caller)
        if isinstance(answer, AcceptSocket):
            response, socket = accept_websocket_pair(self.ctx, attachment=answer.attachment)
            service.on_socket_opened(socket)
            return response
        return to_response(answer)

    async def webSocketMessage(self, ws: Any, message: Any) -> None:
        await self._chat().handle_frame(WorkersSocket(ws), message_payload(message))

    async def alarm(self, *_info: Any) -> None:
        await self._chat().on_alarm()

    async def webSocketClose(self, ws: Any, code: int, reason: str, was_clean: bool) -> None:
        # Complete the closing handshake; turns in flight finish and are stored anyway.
        WorkersSocket(ws).close(1000 if code in (1005, 1006) else code, "closing")

    async def webSocketError(self, ws: Any, error: Any) -> None:
        log.warning("websocket error: %s", error)

    async def shutdown(self) -> None:
        """The local runtime is stopping (workerd has no such event): close connections.

        Running turns were cancelled (and recorded) before this is called.
        """
        if self._service is not None:
            await self._service.close()
        if self._http is not None:
            await self._http.aclose()
