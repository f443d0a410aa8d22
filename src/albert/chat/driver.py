"""The turn driver: runs one admitted turn from its first frame to its one recorded ending.

It gathers the turn's tools, the system prompt and the thread's history (read
once), runs the tool loop under the turn's time bound with the recorder as its
observer (and the turn's confirmer to ask the user before a destructive remote tool;
the bound is held while it waits), and turns whatever stops the loop (cancel, timeout,
model error, a storage failure, a bug) into exactly one ending.
"""

from __future__ import annotations

import asyncio
import logging

from albert.ai.model import ChatMessage, ModelClient, ModelError
from albert.ai.plain_errors import explain_model_error
from albert.ai.prompt import build_system_prompt
from albert.ai.tool_loop import StallBounds, ToolLoop
from albert.analytics.chat_events import TurnEvents
from albert.chat.confirmations import PendingConfirmations, TurnConfirmer
from albert.chat.history import HISTORY_MESSAGES, history_for_model
from albert.chat.interrupted_turns import UnsettledTurns
from albert.chat.live import LiveTurn
from albert.chat.recorder import CANCELLED, STORAGE_FAILED, TurnEnding, TurnRecorder
from albert.ports import ToolProvider
from albert.protocol.frames import ErrorCode, StartFrame
from albert.settings import Settings
from albert.storage.ports import StorageError
from albert.storage.threads import ThreadStore, ToolOutputs
from albert.storage.turn_journal import TurnJournal
from albert.tools.base import Tool
from albert.tools.guard import ToolGuard
from albert.tools.read_tool_result import read_tool_result_tool
from albert.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
# The read_tool_result tools kept per driver (one per recent thread): building one each
# turn also built its spec and measured it again (~30 µs of a turn).
KEPT_THREAD_TOOLS = 8
# How much of a gateway's own error body the failed turn's log line carries (redacted).
MAX_LOGGED_SAID = 500


class TurnDriver:
    """Runs turns against the model and the tool layer; one instance per client."""

    def __init__(
        self,
        *,
        store: ThreadStore,
        outputs: ToolOutputs,
        settings: Settings,
        model: ModelClient,
        tools: ToolProvider,
        events: TurnEvents,
        journal: TurnJournal,
        confirmations: PendingConfirmations,
        unsettled: UnsettledTurns | None = None,
    ) -> None:
        self._store = store
        self._outputs = outputs
        self._settings = settings
        self._model = model
        self._tools = tools
        self._events = events
        self._journal = journal
        self._confirmations = confirmations
        self._unsettled = unsettled
        self._guard = ToolGuard(
            timeout_seconds=settings.tool_timeout_seconds,
            max_chars=settings.tool_result_max_chars,
        )
        self._thread_tools: dict[str, Tool] = {}

    async def run(self, live: LiveTurn) -> None:
        """Run the turn; whatever happens, it ends with exactly one outcome, stored before
        `done` is sent (storage refusing it: an error frame, and stored once it works)."""
        live.emit(StartFrame, model=self._model.model_name)
        confirmer = TurnConfirmer(live, self._confirmations)
        recorder = TurnRecorder(
            self._store,
            self._outputs,
            self._journal,
            self._events,
            live,
            confirmer.decisions,
            self._unsettled,
        )
        loop = self._new_loop()
        try:
            recorder.begin()
            async with asyncio.timeout(self._settings.turn_timeout_seconds) as deadline:
                confirmer.hold(deadline)
                messages, registry = await self._prepare(live.thread_id)
                result = await loop.run(messages, registry, recorder, confirmer)
            # The commit point: the answer and its outcome are stored, then `done` is sent.
            recorder.finish(result)
        except asyncio.CancelledError:
            recorder.end(loop.partial(), CANCELLED)
        except Exception as exc:
            recorder.end(loop.partial(), self._ending(exc, live.turn_id))

    def _new_loop(self) -> ToolLoop:
        settings = self._settings
        return ToolLoop(
            self._model,
            self._guard,
            max_steps=settings.max_model_steps,
            stall=StallBounds(
                first_chunk_seconds=settings.model_first_chunk_timeout_seconds,
                chunk_seconds=settings.model_chunk_timeout_seconds,
            ),
            context_tokens=settings.model_context_tokens,
            max_calls_per_step=settings.max_tool_calls_per_step,
        )

    async def _prepare(self, thread_id: str) -> tuple[list[ChatMessage], ToolRegistry]:
        """The model's opening messages (system prompt, then history) and the turn's tools."""
        turn_tools = await self._tools.tools_for_turn()
        registry = turn_tools.registry.extended([self._read_tool(thread_id)], "local")
        system = build_system_prompt(
            registry,
            server_notes=turn_tools.server_notes,
            vault_data_available=turn_tools.vault_data_available,
            flavour=self._settings.prompt_flavour,
        )
        history = history_for_model(self._store.model_history(thread_id, HISTORY_MESSAGES))
        return [ChatMessage(role="system", content=system), *history], registry

    def _read_tool(self, thread_id: str) -> Tool:
        """The thread's read_tool_result tool, built once while the thread stays recent."""
        kept = self._thread_tools
        tool = kept.pop(thread_id, None)
        if tool is None:
            tool = read_tool_result_tool(self._outputs, thread_id)
            if len(kept) >= KEPT_THREAD_TOOLS:
                del kept[next(iter(kept))]  # the least recently used
        kept[thread_id] = tool
        return tool

    def _ending(self, exc: Exception, turn_id: str) -> TurnEnding:
        """The ending of a turn the loop could not finish (called in the except block)."""
        if isinstance(exc, TimeoutError):
            return TurnEnding(
                "timeout",
                "incomplete",
                code="timeout",
                message=f"the answer took longer than {self._settings.turn_timeout_seconds:g} s "
                "and was stopped; what was written so far is kept",
                retryable=True,
            )
        if isinstance(exc, StorageError):
            log.warning("turn %s: storage failed: %s", turn_id, exc)
            return STORAGE_FAILED
        if isinstance(exc, ModelError):
            return self._model_failed(exc, turn_id)
        log.exception("turn %s failed", turn_id)
        return TurnEnding(
            "error",
            "error",
            code="internal",
            message="something went wrong on our side; your message is saved, try again",
            retryable=True,
        )

    def _model_failed(self, exc: ModelError, turn_id: str) -> TurnEnding:
        """The ending of a turn the model failed: plain words and what to do for the user,
        the technical detail folded under them, and one warning line in the log."""
        settings = self._settings
        plain = explain_model_error(
            exc,
            base_url=settings.model_base_url,
            model_name=self._model.model_name,
            secrets=(settings.model_api_key.get_secret_value(),),
        )
        said = " ".join(exc.gateway_said.split())[:MAX_LOGGED_SAID]
        log.warning(
            "turn %s: the model failed (%s)%s",
            turn_id,
            plain.detail,
            f"; the gateway said: {said}" if said else "",
        )
        code: ErrorCode = {"rate_limited": "rate_limited", "timeout": "timeout"}.get(
            exc.kind, "model_error"
        )  # type: ignore[assignment]
        return TurnEnding(
            "error",
            "incomplete",
            code=code,
            message=plain.message,
            retryable=exc.retryable,
            detail=plain.detail,
            retry_after=exc.retry_after,
        )
