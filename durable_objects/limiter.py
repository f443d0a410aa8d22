"""LimiterDurableObject: one per rate-limit key; holds that key's token bucket.

Thin glue around albert.limits.key_bucket.KeyBucket (why an object per key:
albert.cloudflare.shared_limiter).
"""

from __future__ import annotations

from typing import Any

from workers import DurableObject

from albert.clock import SystemClock
from albert.cloudflare.http import to_core_request, to_response
from albert.cloudflare.sql import WorkersSql
from albert.limits.key_bucket import KeyBucket
from albert.web import BadRequest, HttpResponse


class LimiterDurableObject(DurableObject):
    """The bucket of one key (`session-ip:…`, `model:<tenant>`)."""

    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self.ctx = ctx
        self._core: KeyBucket | None = None

    async def fetch(self, request: Any) -> Any:
        if self._core is None:
            sql = WorkersSql(self.ctx.storage.sql, self.ctx.storage)
            self._core = KeyBucket(sql, SystemClock())
        try:
            request_value = await to_core_request(request)
        except BadRequest as exc:
            return to_response(HttpResponse.error(exc.status, exc.error, exc.detail))
        return to_response(self._core.handle(request_value))
