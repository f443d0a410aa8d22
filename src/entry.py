"""The worker's entry: the router in front of the per-client Durable Objects."""

from __future__ import annotations

import time
from typing import Any

from workers import WorkerEntrypoint

from albert.admission import admit_new_session
from albert.cloudflare.env import env_mapping
from albert.cloudflare.http import forward, to_core_request, to_response
from albert.cloudflare.limiter import shared_limiter
from albert.router import Forward, route
from albert.settings import Settings
from durable_objects.chat import ChatDurableObject
from durable_objects.limiter import LimiterDurableObject

__all__ = ["ChatDurableObject", "Default", "LimiterDurableObject"]


class Default(WorkerEntrypoint):
    """Routes each request: health and sessions here, everything else to the client's object."""

    _settings: Settings | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings.from_env(env_mapping(self.env))
        return self._settings

    async def fetch(self, request: Any) -> Any:
        head = await to_core_request(request, read_body=False)
        now = int(time.time())
        if head.path == "/api/session":
            # The only body the router reads; forwarded requests keep theirs unread.
            head = await to_core_request(request)
            refused = await admit_new_session(head, self.settings(), now, shared_limiter(self.env))
            if refused is not None:
                return to_response(refused)
        decision = route(head, self.settings(), now)
        if not isinstance(decision, Forward):
            return to_response(decision)
        namespace = self.env.CHAT
        stub = namespace.get(namespace.idFromName(decision.object_name))
        return await forward(stub, request)
