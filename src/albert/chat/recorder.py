"""The turn recorder: streams a turn's frames and persists each piece as it completes.

Persistence order is the reliability contract: each step's assistant text and
tool calls are stored when the step ends, each tool result as it completes (its
whole output too, for read_tool_result), and an interrupted turn keeps its
partial text, marked incomplete. Every turn ends in exactly one recorded outcome,
stored on its last message and sent in the `done` frame. The turn journal
(`albert.storage.turn_journal`) holds the turn while it runs, with the text the
user has seen of the current step, so a restart that cuts the turn off can still
end it (`albert.chat.interrupted_turns`). A call the user was asked about keeps the answer
(`meta.confirmation`) with its tool message.

The turn's last step is stored with the turn's outcome in one commit, and `done` is sent
only after it: a `done` frame always names an outcome that is stored. When storage fails
(`StorageError`, e.g. a full disk) the turn stops there: nothing more is sent that is not
stored, its end is stored if storage takes it (an `error` frame, then `done`), and if not,
the browser gets only the `error` frame (`storage_unavailable`: not kept) while the end
waits in `UnsettledTurns` until storage works again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from albert.ai.model import ChatToolCall
from albert.ai.tool_loop import PartialTurn, TurnResult
from albert.analytics.chat_events import TurnEvents
from albert.chat.interrupted_turns import (
    ENDED_BY_STORAGE,
    UnsettledTurns,
    end_message_id,
    step_message_id,
)
from albert.chat.live import LiveTurn
from albert.protocol.frames import (
    DoneFrame,
    ErrorCode,
    ErrorFrame,
    FinishReason,
    TextDeltaFrame,
    ToolCallFrame,
    ToolDecision,
    ToolProgressFrame,
    ToolResultFrame,
    Usage,
)
from albert.protocol.http import MessageStatus, ToolCallRecord
from albert.storage.ports import StorageError
from albert.storage.threads import ThreadStore, ToolOutputs
from albert.storage.turn_journal import TurnJournal
from albert.tools.base import ToolResult

log = logging.getLogger(__name__)

TOOL_PREVIEW_CHARS = 4_000
# At most one progress frame per call this often.
PROGRESS_INTERVAL_SECONDS = 0.25
# Each piece sent is one WebSocket frame and one journal write; 20 ms of text is still
# far below what a reader notices, and a fast stream fills fewer, larger frames.
DELTA_FLUSH_CHARS = 256
DELTA_FLUSH_SECONDS = 0.02


class TurnEnding(NamedTuple):
    """How an interrupted turn ends: its outcome, and the error frame the browser gets."""

    finish_reason: FinishReason
    status: MessageStatus
    code: ErrorCode | None = None
    message: str = ""
    retryable: bool = False
    detail: str | None = None
    retry_after: float | None = None


def ending_error(ending: TurnEnding) -> dict[str, object]:
    """The error of an ending as stored in its message's `meta.error` (the error frame's
    fields)."""
    error: dict[str, object] = {
        "code": ending.code,
        "message": ending.message,
        "retryable": ending.retryable,
    }
    if ending.detail:
        error["detail"] = ending.detail
    return error


CANCELLED = TurnEnding(finish_reason="cancelled", status="cancelled")
# Storage failed mid-turn, and then took the turn's end with its partial text.
STORAGE_FAILED = TurnEnding(
    "error",
    "incomplete",
    code="storage_unavailable",
    message="Storage failed while your answer was being saved (storage unavailable), so it "
    "was stopped; what was written so far is kept. Try again later.",
    retryable=True,
)
# Storage did not take the turn's end either: the browser is told, and no `done` follows.
NOT_KEPT_MESSAGE = (
    "Your answer could not be saved (storage unavailable), so it was stopped; the part shown "
    "may not be kept. Your question is saved: try again later."
)


class TurnRecorder:
    """The tool loop's observer for one turn: frames to the browser, rows to the store."""

    def __init__(
        self,
        store: ThreadStore,
        outputs: ToolOutputs,
        journal: TurnJournal,
        events: TurnEvents,
        live: LiveTurn,
        decisions: Mapping[str, ToolDecision] | None = None,
        unsettled: UnsettledTurns | None = None,
    ) -> None:
        self._store = store
        self._outputs = outputs
        self._journal = journal
        self._events = events
        self._live = live
        # The user's answers to calls that needed one (albert.chat.confirmations), by call id.
        self._decisions: Mapping[str, ToolDecision] = decisions if decisions is not None else {}
        self._progress_sent: dict[str, float] = {}
        self._unsettled = unsettled
        self._thread_id = live.thread_id
        self._turn_id = live.turn_id
        self._step_saved = 0
        # The text of one step sent so far: what is stored of a step beyond it goes out
        # once stored (the piece held back at its end, the rest after a failed flush).
        self._sent_step = 0
        self._sent: list[str] = []
        # A storage failure in a timed flush, raised into the turn by its next event.
        self._failure: StorageError | None = None
        # A retried turn runs again under the same turn id; each run's messages
        # need ids of their own.
        self._run = secrets.token_hex(3)
        self._pending: list[str] = []
        self._pending_chars = 0
        self._pending_step = 0
        self._flush_timer: asyncio.TimerHandle | None = None

    def _message_id(self, step: int) -> str:
        return step_message_id(self._turn_id, self._run, step)

    def begin(self) -> None:
        """Enter the turn in the journal, so a restart that cuts it off can end it."""
        self._journal.begin(turn_id=self._turn_id, thread_id=self._thread_id, run=self._run)

    # --- streamed text -----------------------------------------------------------------

    async def on_text(self, step: int, delta: str) -> None:
        self._raise_failure()
        # Deltas are coalesced (up to DELTA_FLUSH_CHARS or DELTA_FLUSH_SECONDS): one frame
        # per model token costs more than the token itself, and a person cannot tell.
        if self._pending and step != self._pending_step:
            self._flush()
        self._pending.append(delta)
        self._pending_chars += len(delta)
        self._pending_step = step
        if self._pending_chars >= DELTA_FLUSH_CHARS:
            self._flush()
        elif self._flush_timer is None:
            self._flush_timer = asyncio.get_running_loop().call_later(
                DELTA_FLUSH_SECONDS, self._timed_flush
            )

    def _flush(self) -> None:
        """Send the text held back so far, if any; called before every other frame."""
        delta = self._take_pending()
        if delta:
            # Stored before it is sent: after a hard kill the stored text holds all the user saw.
            self._journal.checkpoint(self._turn_id, self._pending_step, delta)
            self._send_text(self._pending_step, delta)

    def _timed_flush(self) -> None:
        try:
            self._flush()
        except StorageError as exc:
            # Nothing raises into the turn from a timer; the turn's next event does. The
            # piece was neither stored nor sent, and no later text goes out before it.
            self._failure = exc

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _take_pending(self) -> str:
        """The text held back so far (cleared here, neither stored nor sent)."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if not self._pending:
            return ""
        delta = "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0
        return delta

    def _send_text(self, step: int, delta: str) -> None:
        if step != self._sent_step:
            self._sent_step = step
            self._sent = []
        self._sent.append(delta)
        self._live.emit(TextDeltaFrame, step=step, delta=delta)

    def _send_rest(self, step: int, text: str) -> None:
        """Send what the user has not seen of `step`'s text `text`, once it is stored."""
        seen = "".join(self._sent) if step == self._sent_step else ""
        if len(text) > len(seen) and text.startswith(seen):
            self._send_text(step, text[len(seen) :])

    # --- steps and tools ---------------------------------------------------------------

    async def on_step_end(
        self, step: int, text: str, calls: list[ChatToolCall], finish_reason: str
    ) -> None:
        self._raise_failure()
        # The step's message holds its whole text, so the piece still held back needs no
        # journal checkpoint of its own: it is sent once the message is stored.
        self._take_pending()
        if not calls:
            # The turn's last step: `finish` stores it with the turn's outcome.
            return
        message_id = self._message_id(step)
        # The message and its thread's bump: one commit (stored before any tool call of
        # the step is sent, since the calls go out as soon as the tools start).
        self._store.transaction(
            lambda: self._store.add_message(
                message_id=message_id,
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                role="assistant",
                content=text,
                tool_calls=[
                    ToolCallRecord(id=c.id, name=c.name, arguments=c.arguments) for c in calls
                ],
                finish_reason="tool_calls",
            )
        )
        self._step_saved = step
        self._send_rest(step, text)

    async def on_tool_call(
        self, step: int, call: ChatToolCall, arguments: dict[str, Any], source: str
    ) -> None:
        self._raise_failure()
        self._flush()
        self._live.emit(
            ToolCallFrame,
            step=step,
            call_id=call.id,
            name=call.name,
            arguments=arguments,
            server=_server_of(source),
        )

    def on_tool_progress(
        self,
        step: int,
        call: ChatToolCall,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        # A server may report as often as it likes; the browser needs a few a second.
        now = time.monotonic()
        if now - self._progress_sent.get(call.id, float("-inf")) < PROGRESS_INTERVAL_SECONDS:
            return
        self._progress_sent[call.id] = now
        self._live.emit(
            ToolProgressFrame,
            step=step,
            call_id=call.id,
            progress=progress,
            total=total,
            message=None if message is None else message[:200],
        )

    async def on_tool_result(
        self, step: int, call: ChatToolCall, outcome: ToolResult, source: str
    ) -> None:
        self._raise_failure()
        decision = self._decisions.get(call.id)
        self._events.tool_invoked(call.name, source, outcome, decision)
        # What the model was shown of the tool's text, with our preface; our other notes
        # are kept in the meta, and the whole output in `outputs` (read_tool_result).
        text = outcome.preface + outcome.shown_text()
        structured = outcome.presentable()

        def store() -> None:
            # The whole output, the result the model gets and the thread's bump land
            # together or not at all, before the result frame is sent.
            self._outputs.save(
                call_id=call.id,
                thread_id=self._thread_id,
                name=call.name,
                content=outcome.preface + outcome.joined_text(),
            )
            self._store.add_message(
                message_id=f"{self._turn_id}:{self._run}:t{step}:{call.id}",
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                role="tool",
                content=text,
                tool_call_id=call.id,
                name=call.name,
                status="error" if outcome.is_error else "complete",
                meta=result_meta(call, outcome, source, decision, structured),
            )

        self._store.transaction(store)
        self._live.emit(
            ToolResultFrame,
            step=step,
            call_id=call.id,
            name=call.name,
            server=_server_of(source),
            ok=not outcome.is_error,
            duration_ms=round(outcome.duration_ms, 1),
            truncated=outcome.truncated,
            content=text[:TOOL_PREVIEW_CHARS],
            structured=structured,
        )

    # --- the ending --------------------------------------------------------------------

    def end(self, partial: PartialTurn, ending: TurnEnding) -> None:
        """End an interrupted turn: keep the partial text, say why, send done (or, when
        storage refuses the end, say the answer was not kept)."""
        self._take_pending()
        # When the interrupted step was already saved (e.g. cancelled while tools ran),
        # a closing marker records the outcome so the turn reads as ended.
        saved = partial.step == 0 or partial.step <= self._step_saved

        def store() -> None:
            # The ending and the journal entry's removal: a restart finds one or the other.
            self._store.add_message(
                message_id=end_message_id(self._turn_id, self._run)
                if saved
                else self._message_id(partial.step),
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                role="assistant",
                content="" if saved else partial.text,
                status=ending.status,
                finish_reason=ending.finish_reason,
                # What the browser was told, so a reloaded thread says the same.
                meta=None if ending.code is None else {"error": ending_error(ending)},
            )
            self._journal.end(self._turn_id)

        if not self._commit(store):
            return
        if not saved:
            self._send_rest(partial.step, partial.text)
        if ending.code is not None:
            self._live.emit(
                ErrorFrame,
                code=ending.code,
                message=ending.message,
                detail=ending.detail,
                retryable=ending.retryable,
                retry_after_seconds=ending.retry_after,
            )
        self._done(ending.finish_reason, partial.step, Usage())

    def finish(self, result: TurnResult) -> None:
        """Store the turn's last step with its outcome, then tell the browser (`done`).

        Raises StorageError when storage refuses it: nothing of it is stored or sent (the
        driver then ends the turn with `end`)."""
        self._raise_failure()
        self._take_pending()
        step = result.steps

        def store() -> None:
            # The answer, its outcome and the journal entry's removal: one commit, so a
            # restart finds the answer whole and ended, or the turn still to end.
            self._store.add_message(
                message_id=self._message_id(step),
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                role="assistant",
                content=result.text,
                finish_reason=result.finish_reason,
                meta={"steps": result.steps, "usage": result.usage.model_dump()},
            )
            self._journal.end(self._turn_id)

        self._store.transaction(store)
        self._send_rest(step, result.text)
        self._done(result.finish_reason, result.steps, result.usage)

    def _commit(self, work: Callable[[], None]) -> bool:
        """Run the turn's end `work` as one transaction; False when storage refused it (the
        browser is told the answer was not kept, and the end is left to be stored later)."""
        try:
            self._store.transaction(work)
        except StorageError as exc:
            log.warning("turn %s: its end could not be stored: %s", self._turn_id, exc)
        else:
            return True
        try:
            # Needs no new page, so it may land where the end did not fit; a restart then
            # knows storage ended this turn (else it reads as cut off by the restart).
            self._journal.mark_unsaved(self._turn_id, self._run)
        except StorageError:
            pass
        if self._unsettled is not None:
            self._unsettled.add(self._turn_id, self._run, ENDED_BY_STORAGE)
        self._live.emit(
            ErrorFrame, code="storage_unavailable", message=NOT_KEPT_MESSAGE, retryable=True
        )
        return False

    def _done(self, finish_reason: FinishReason, steps: int, usage: Usage) -> None:
        self._live.emit(DoneFrame, finish_reason=finish_reason, steps=steps, usage=usage)


def _server_of(source: str) -> str | None:
    """The MCP server a tool came from, as frames name it (None: built in)."""
    return None if source in ("local", "unknown") else source


def result_meta(
    call: ChatToolCall,
    outcome: ToolResult,
    source: str,
    decision: ToolDecision | None,
    structured: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What is stored with a tool result besides its text (albert.chat.history reads it),
    and the structured content the chat draws its card from (`ToolResult.presentable`)."""
    meta = {
        "duration_ms": round(outcome.duration_ms, 1),
        "truncated": outcome.truncated,
        "source": source,
        "arguments": _parsed_or_empty(call.arguments),
    }
    if decision is not None:
        meta["confirmation"] = decision
    # Our notes, for the model's view of this result when the history is read back
    # (albert.chat.history): the same fence, preface and cut note as in this turn.
    if outcome.own_words:
        meta["own_words"] = True
    if outcome.cut is not None:
        meta["total_chars"] = outcome.cut.total
    if outcome.preface:
        meta["preface_chars"] = len(outcome.preface)
    if outcome.fence_label is not None:
        meta["fence_label"] = outcome.fence_label
    # What the chat draws the result's card from, so a reloaded thread shows the same.
    if structured is not None:
        meta["structured"] = structured
    return meta


def _parsed_or_empty(text: str) -> Any:
    """The arguments' JSON value (parsed once), or {} when they are not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return {}
