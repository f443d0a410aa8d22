"""The worker's entry: the router in front of the per-client Durable Objects."""

from __future__ import annotations

import time
from typing import Any

import httpx
from workers import WorkerEntrypoint

from albert.auth.gateway import route_request
from albert.auth.identify import Authenticator
from albert.auth.session_api import MAX_SESSION_BODY
from albert.cloudflare.env import env_mapping, env_secret_lookup
from albert.cloudflare.fetch import outbound_client
from albert.cloudflare.http import forward, to_core_request, to_response
from albert.cloudflare.objects import NamespaceChatObjects
from albert.cloudflare.shared_limiter import shared_limiter
from albert.limits.new_sessions import admit_new_session
from albert.router import Forward, ForwardToObject
from albert.settings import Settings
from albert.web import BadRequest, HttpResponse
from durable_objects.chat import ChatDurableObject
from durable_objects.limiter import LimiterDurableObject

__all__ = ["ChatDurableObject", "Default", "LimiterDurableObject"]


class Default(WorkerEntrypoint):
    """Routes each request: health and sessions here, everything else to the client's object."""

    _settings: Settings | None = None
    _auth: Authenticator | None = None
    _http: httpx.AsyncClient | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings.from_env(env_mapping(self.env))
        return self._settings

    def authenticator(self) -> Authenticator:
        """Verifies bearer tokens; host-JWT keys are fetched with the platform's fetch."""
        if self._auth is None:
            self._auth = Authenticator(
                self.settings(),
                self._outbound,
                secrets=env_secret_lookup(self.env, "AUTH_JWT_SECRET"),
            )
        return self._auth

    def _outbound(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = outbound_client()
        return self._http

    async def fetch(self, request: Any) -> Any:
        try:
            return await self._fetch(request)
        except BadRequest as exc:
            # A body framed twice or over its bound (albert.request_bodies): refused by its
            # head before the router reads it or an object is touched, or as it is read.
            return to_response(HttpResponse.error(exc.status, exc.error, exc.detail))

    async def _fetch(self, request: Any) -> Any:
        head = await to_core_request(request, read_body=False)
        now = int(time.time())
        if head.path == "/embed":  # albert.embed.EMBED_PATH
            # Imported on first use: most requests are not the embed, and cold start counts.
            from albert.cloudflare.assets import asset_with_headers
            from albert.embed import PAGE_PATH, EmbedPage, embed_page

            page = embed_page(head, self.settings())
            if not isinstance(page, EmbedPage):
                return to_response(page)
            return await asset_with_headers(
                self.env.ASSETS,
                str(request.url),
                PAGE_PATH,
                page.headers,
                head=head.method == "HEAD",
            )
        if head.path == "/api/session":
            # The only body the router reads; forwarded requests keep theirs unread.
            head = await to_core_request(request, max_body=MAX_SESSION_BODY)
            refused = await admit_new_session(head, self.settings(), now, shared_limiter(self.env))
            if refused is not None:
                return to_response(refused)
        objects = NamespaceChatObjects(self.env.CHAT)
        decision = await route_request(head, now, self.authenticator(), objects)
        namespace = self.env.CHAT
        if isinstance(decision, ForwardToObject):
            return await forward(namespace.get(namespace.idFromString(decision.object_id)), request)
        if not isinstance(decision, Forward):
            return to_response(decision)
        stub = namespace.get(namespace.idFromName(decision.object_name))
        return await forward(stub, request)
