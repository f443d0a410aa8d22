"""A tenant's model budget: every model call of every client of the tenant counts.

Per-client limits do not bound cost when clients are cheap to make, so model
calls are also counted per tenant in the shared limiter. Over budget, the call
fails as a rate limit (retryable, with the wait), before anything is sent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from albert.ai.model import ModelClient, ModelError, ModelEvent, ModelRequest
from albert.limits.shared import SharedLimiter

log = logging.getLogger(__name__)


class BudgetedModel:
    """A model client that spends one unit of the tenant's budget per call."""

    def __init__(
        self,
        inner: ModelClient,
        limiter: SharedLimiter,
        *,
        tenant: str,
        allowed: int,
        window_seconds: float,
    ) -> None:
        self._inner = inner
        self._limiter = limiter
        self._key = f"model:{tenant}"
        self._allowed = allowed
        self._window = window_seconds

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The inner stream, after one unit of budget is spent."""
        try:
            wait = await self._limiter.take(self._key, self._allowed, self._window)
        except Exception:
            log.exception("model budget limiter failed; the call goes ahead")
            wait = None
        if wait is not None:
            raise ModelError(
                "rate_limited",
                f"this product's model budget is used up for now; try again in {wait:g} s",
                retry_after=wait,
            )
        stream = self._inner.stream(request)
        try:
            async for event in stream:
                yield event
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
