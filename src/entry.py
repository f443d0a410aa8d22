"""The worker's entry: the router in front of the per-client Durable Objects."""

from __future__ import annotations

from typing import Any

from workers import WorkerEntrypoint

from albert.cloudflare.http import forward, to_core_request, to_response
from albert.router import Forward, route
from durable_objects.chat import ChatDurableObject

__all__ = ["ChatDurableObject", "Default"]


class Default(WorkerEntrypoint):
    """Routes each request: health and sessions here, everything else to the client's object."""

    async def fetch(self, request: Any) -> Any:
        decision = route(await to_core_request(request, read_body=False))
        if not isinstance(decision, Forward):
            return to_response(decision)
        namespace = self.env.CHAT
        stub = namespace.get(namespace.idFromName(decision.client_id))
        return await forward(stub, request)
