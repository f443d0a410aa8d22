"""Server events of the chat: derived from the turn's frames and tool outcomes.

Each event is built only when analytics is on, and the catalog imported with the first
one: a turn of an object without analytics builds no event model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel

from albert.analytics.service import AnalyticsService
from albert.protocol.frames import ChatFrame, DoneFrame, RegenerateFrame, StartFrame, ToolDecision
from albert.tools.base import ToolResult

if TYPE_CHECKING:
    from albert.analytics.event_catalog import ToolOutcome, ToolSource


class TurnEvents:
    """Turns a turn's start/done frames and tool results into catalog events."""

    def __init__(
        self, analytics: AnalyticsService, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.analytics = analytics
        self._monotonic = monotonic
        self._started: dict[str, tuple[float, str]] = {}

    def message_sent(self, frame: ChatFrame, *, retry: bool) -> None:
        """A user message was stored (or retried) and its turn is about to run."""
        if not self.analytics.enabled:
            return
        from albert.analytics.event_catalog import MessageSent

        self.analytics.track(
            MessageSent(
                thread_id=frame.thread_id,
                chars=len(frame.text),
                retry=retry,
                edited=frame.replaces is not None and not retry,
            )
        )

    def answer_regenerated(self, frame: RegenerateFrame, version: int) -> None:
        """The last question is answered again; `version` earlier answers are kept."""
        if not self.analytics.enabled:
            return
        from albert.analytics.event_catalog import AnswerRegenerated

        self.analytics.track(AnswerRegenerated(thread_id=frame.thread_id, version=version))

    def on_frame(self, frame: BaseModel) -> None:
        """Watch broadcast frames: a start opens a turn, a done closes it with its numbers."""
        if not self.analytics.enabled:
            return
        if isinstance(frame, StartFrame):
            self._started[frame.turn_id] = (self._monotonic(), frame.model)
        elif isinstance(frame, DoneFrame):
            from albert.analytics.event_catalog import AiResponseGenerated

            started, model = self._started.pop(frame.turn_id, (self._monotonic(), ""))
            self.analytics.track(
                AiResponseGenerated(
                    model=model,
                    steps=frame.steps,
                    prompt_tokens=frame.usage.prompt_tokens,
                    completion_tokens=frame.usage.completion_tokens,
                    finish_reason=frame.finish_reason,
                    latency_ms=round(max(0.0, self._monotonic() - started) * 1000, 1),
                )
            )

    def tool_invoked(
        self,
        name: str,
        source: str,
        outcome: ToolResult,
        decision: ToolDecision | None = None,
    ) -> None:
        """A tool call finished; `source` is 'local', 'unknown' or the remote server's name.

        `decision` is the user's answer when the tool had to be confirmed.
        """
        if not self.analytics.enabled:
            return
        from albert.analytics.event_catalog import ToolInvoked

        kind: ToolSource = source if source in ("local", "unknown") else "remote"  # type: ignore[assignment]
        self.analytics.track(
            ToolInvoked(
                tool=name,
                source=kind,
                server=source if kind == "remote" else None,
                duration_ms=round(outcome.duration_ms, 1),
                ok=not outcome.is_error,
                truncated=outcome.truncated,
                outcome=_tool_outcome(outcome, decision),
            )
        )


def _tool_outcome(outcome: ToolResult, decision: ToolDecision | None) -> ToolOutcome:
    if decision == "declined" or decision == "timeout":
        return decision
    return "failed" if outcome.is_error else "ok"
