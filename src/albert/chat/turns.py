"""Chat over the socket: frame validation, idempotent messages, and running turns.

Persistence order is the reliability contract: the user's message is stored
before the model is called; each step's assistant text and tool calls are
stored when the step ends; each tool result as it completes; a cut stream
keeps its partial text, marked incomplete.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from typing import Any

from pydantic import BaseModel, ValidationError

from albert.ai.model import ChatMessage, ChatToolCall, ModelClient, ModelError
from albert.ai.prompt import build_system_prompt
from albert.ai.tool_loop import StallBounds, ToolLoop, TurnResult
from albert.analytics.chat_events import TurnEvents
from albert.analytics.service import AnalyticsService
from albert.chat.live import LiveTurn
from albert.chat.recovery import RESTART_MESSAGE, end_message_id, step_message_id
from albert.clock import Clock
from albert.limits import RateLimiter
from albert.ports import ChatSocket, SocketHub, ToolProvider
from albert.protocol.frames import (
    AckFrame,
    CancelFrame,
    ChatFrame,
    DoneFrame,
    ErrorCode,
    ErrorFrame,
    FinishReason,
    PingFrame,
    PongFrame,
    ResumeFrame,
    ResyncFrame,
    StartFrame,
    TextDeltaFrame,
    ToolCallFrame,
    ToolResultFrame,
    TurnInterruptedFrame,
    Usage,
    client_frame_adapter,
)
from albert.protocol.http import Message, MessageStatus, ToolCallRecord
from albert.settings import Settings
from albert.storage.threads import DEFAULT_TITLE, ThreadStore, ToolOutputs
from albert.storage.turn_journal import TurnJournal
from albert.tools.base import validation_message
from albert.tools.guard import GuardedResult, ToolGuard
from albert.tools.read_tool_result import read_tool_result_tool

log = logging.getLogger(__name__)

ANSWERED = ("stop", "step_limit", "length", "cancelled")
TOOL_PREVIEW_CHARS = 4_000
DELTA_FLUSH_CHARS = 64
DELTA_FLUSH_SECONDS = 0.02
HISTORY_MESSAGES = 200


def history_for_model(messages: list[Message]) -> list[ChatMessage]:
    """Stored messages in the model's shape.

    Incomplete answers are left out (the model should not continue a cut text),
    and a tool call whose result was never stored gets a stand-in result, since
    model APIs reject a call without one.
    """
    out: list[ChatMessage] = []
    answered_calls = {m.tool_call_id for m in messages if m.role == "tool"}
    for m in messages:
        if m.role == "assistant":
            if m.status != "complete" and not m.tool_calls:
                continue
            calls = [
                ChatToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in m.tool_calls
            ]
            out.append(ChatMessage(role="assistant", content=m.content, tool_calls=calls))
            out.extend(
                ChatMessage(
                    role="tool",
                    content="No result: the turn was interrupted before this tool finished.",
                    tool_call_id=c.id,
                    name=c.name,
                )
                for c in calls
                if c.id not in answered_calls
            )
        elif m.role == "tool":
            out.append(
                ChatMessage(
                    role="tool", content=m.content, tool_call_id=m.tool_call_id, name=m.name
                )
            )
        else:
            out.append(ChatMessage(role="user", content=m.content))
    return out


class ChatTurns:
    """Handles socket frames for one client and runs their turns."""

    def __init__(
        self,
        *,
        store: ThreadStore,
        outputs: ToolOutputs,
        settings: Settings,
        model: ModelClient,
        tools: ToolProvider,
        hub: SocketHub,
        clock: Clock,
        journal: TurnJournal,
        analytics: AnalyticsService | None = None,
    ) -> None:
        self._store = store
        self.journal = journal
        self.outputs = outputs
        self._settings = settings
        self._model = model
        self._tools = tools
        self._hub = hub
        self.events = TurnEvents(analytics or AnalyticsService())
        self._guard = ToolGuard(
            timeout_seconds=settings.tool_timeout_seconds,
            max_chars=settings.tool_result_max_chars,
        )
        self._running: dict[str, asyncio.Task[Any]] = {}
        self._chat_limit = RateLimiter(
            settings.chat_messages_per_minute, clock, settings.rate_window_seconds
        )
        self._live: dict[str, LiveTurn] = {}

    # --- frames ----------------------------------------------------------------------

    async def on_frame(self, socket: ChatSocket, raw: str | bytes) -> None:
        """Validate one incoming frame and act on it; bad input gets an error frame."""
        size = len(raw.encode() if isinstance(raw, str) else raw)
        if size > self._settings.max_frame_bytes:
            self._reply(
                socket, "too_large", f"frame larger than {self._settings.max_frame_bytes} bytes"
            )
            return
        try:
            frame = client_frame_adapter.validate_json(raw)
        except ValidationError as exc:
            self._reply(socket, "bad_frame", validation_message(exc))
            return
        if isinstance(frame, PingFrame):
            _send(socket, PongFrame())
        elif isinstance(frame, CancelFrame):
            self._cancel(socket, frame)
        elif isinstance(frame, ResumeFrame):
            self._resume(socket, frame)
        else:
            await self._chat(socket, frame)

    def _reply(
        self,
        socket: ChatSocket,
        code: ErrorCode,
        message: str,
        *,
        thread_id: str | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        _send(
            socket,
            ErrorFrame(
                code=code,
                message=message,
                thread_id=thread_id,
                retryable=retryable or retry_after is not None,
                retry_after_seconds=retry_after,
            ),
        )

    def _cancel(self, socket: ChatSocket, frame: CancelFrame) -> None:
        task = self._running.get(frame.thread_id)
        if task is None:
            self._reply(
                socket, "bad_frame", "no turn is running in this thread", thread_id=frame.thread_id
            )
            return
        task.cancel()

    async def _chat(self, socket: ChatSocket, frame: ChatFrame) -> None:
        if len(frame.text) > self._settings.max_message_chars:
            self._reply(
                socket,
                "too_large",
                f"message longer than {self._settings.max_message_chars} characters",
                thread_id=frame.thread_id,
            )
            return
        if not self._store.has_thread(frame.thread_id):
            self._reply(socket, "unknown_thread", "no such thread", thread_id=frame.thread_id)
            return
        stored_in = self._store.message_thread(frame.message_id)
        if stored_in is not None and stored_in != frame.thread_id:
            self._reply(
                socket,
                "duplicate_id",
                "message_id already used in another thread",
                thread_id=frame.thread_id,
            )
            return
        if frame.thread_id in self._running:
            if stored_in is not None:
                _send(socket, _ack(frame, duplicate=True))
                return
            self._reply(
                socket,
                "busy",
                "a turn is still running in this thread; wait for it or cancel it",
                thread_id=frame.thread_id,
                retryable=True,
            )
            return
        if stored_in is not None and self._answered(frame.thread_id, frame.message_id):
            # A resend (e.g. after a reconnect) of a message already answered.
            _send(socket, _ack(frame, duplicate=True))
            return
        wait = self._chat_limit.take()
        if wait is not None:
            self._reply(
                socket,
                "rate_limited",
                f"too many messages; try again in {wait:g} s",
                thread_id=frame.thread_id,
                retry_after=wait,
            )
            return
        if stored_in is None:
            self._store_user_message(frame)
        # else: the same message after a failed turn is a retry, and is not stored twice.
        self.events.message_sent(frame, retry=stored_in is not None)
        _send(socket, _ack(frame, duplicate=False))
        task = asyncio.current_task()
        if task is not None:
            self._running[frame.thread_id] = task
        try:
            await self._run_turn(frame.thread_id, frame.message_id)
        finally:
            self._running.pop(frame.thread_id, None)

    def _answered(self, thread_id: str, turn_id: str) -> bool:
        messages = self._store.history(thread_id, HISTORY_MESSAGES)
        return any(
            m.turn_id == turn_id and m.role == "assistant" and m.finish_reason in ANSWERED
            for m in messages
        )

    def _store_user_message(self, frame: ChatFrame) -> None:
        thread = self._store.get_thread(frame.thread_id)
        self._store.add_message(
            message_id=frame.message_id,
            thread_id=frame.thread_id,
            turn_id=frame.message_id,
            role="user",
            content=frame.text,
        )
        if thread.title == DEFAULT_TITLE:
            # First words of the first question make a better title than "New chat".
            title = " ".join(frame.text.split())[:60]
            self._store.rename_thread(frame.thread_id, title or DEFAULT_TITLE)

    # --- turns -----------------------------------------------------------------------

    def broadcast(self, frame: BaseModel) -> None:
        """Send a frame to every socket of this client (all tabs see the turn)."""
        self._send_all(frame, frame.model_dump_json())

    def _send_all(self, frame: BaseModel, text: str) -> None:
        self.events.on_frame(frame)
        for socket in self._hub.sockets():
            socket.send(text)

    def _resume(self, socket: ChatSocket, frame: ResumeFrame) -> None:
        live = self._live.get(frame.thread_id)
        if live is None or (frame.turn_id is not None and frame.turn_id != live.turn_id):
            if frame.turn_id is not None and self.journal.interrupted(
                frame.thread_id, frame.turn_id
            ):
                # Cut off by a restart: no frame of it will come again.
                _send(
                    socket,
                    TurnInterruptedFrame(
                        thread_id=frame.thread_id, turn_id=frame.turn_id, message=RESTART_MESSAGE
                    ),
                )
            # The turn ended while the browser was away: it loads the thread instead.
            _send(
                socket,
                ResyncFrame(thread_id=frame.thread_id, turn_id=None, running=False, replayed=0),
            )
            return
        missed = live.frames_after(frame.after_seq if frame.turn_id is not None else 0)
        for text in missed:
            socket.send(text)
        _send(
            socket,
            ResyncFrame(
                thread_id=frame.thread_id, turn_id=live.turn_id, running=True, replayed=len(missed)
            ),
        )

    async def _run_turn(self, thread_id: str, turn_id: str) -> None:
        live = LiveTurn(thread_id, turn_id, self._send_all)
        self._live[thread_id] = live
        try:
            await self._drive(live)
        finally:
            self._live.pop(thread_id, None)

    async def _drive(self, live: LiveTurn) -> None:
        """Run the turn; whatever happens, it ends with exactly one recorded outcome."""
        settings = self._settings
        live.emit(
            StartFrame(thread_id=live.thread_id, turn_id=live.turn_id, model=self._model.model_name)
        )
        recorder = _TurnRecorder(self, live)
        recorder.begin()
        loop = ToolLoop(
            self._model,
            self._guard,
            max_steps=settings.max_model_steps,
            stall=StallBounds(
                first_chunk_seconds=settings.model_first_chunk_timeout_seconds,
                chunk_seconds=settings.model_chunk_timeout_seconds,
            ),
            context_tokens=settings.model_context_tokens,
        )
        try:
            async with asyncio.timeout(settings.turn_timeout_seconds):
                turn_tools = await self._tools.tools_for_turn()
                registry = turn_tools.registry.extended(
                    [read_tool_result_tool(self.outputs, live.thread_id)], "local"
                )
                system = build_system_prompt(
                    registry,
                    server_notes=turn_tools.server_notes,
                    vault_data_available=turn_tools.vault_data_available,
                    flavour=settings.prompt_flavour,
                )
                history = history_for_model(self._store.history(live.thread_id, HISTORY_MESSAGES))
                messages = [ChatMessage(role="system", content=system), *history]
                result = await loop.run(messages, registry, recorder)
        except asyncio.CancelledError:
            recorder.end(loop, "cancelled", status="cancelled")
            return
        except TimeoutError:
            recorder.end(
                loop,
                "timeout",
                status="incomplete",
                code="timeout",
                message=f"the answer took longer than {settings.turn_timeout_seconds:g} s and "
                "was stopped; what was written so far is kept",
                retryable=True,
            )
            return
        except ModelError as exc:
            code: ErrorCode = {"rate_limited": "rate_limited", "timeout": "timeout"}.get(
                exc.kind, "model_error"
            )  # type: ignore[assignment]
            recorder.end(
                loop,
                "error",
                status="incomplete",
                code=code,
                message=str(exc),
                retryable=exc.retryable,
            )
            return
        except Exception:
            log.exception("turn %s failed", live.turn_id)
            recorder.end(
                loop,
                "error",
                status="error",
                code="internal",
                message="something went wrong on our side; your message is saved, try again",
                retryable=True,
            )
            return
        recorder.finish(result)


class _TurnRecorder:
    """The tool loop's observer: streams frames and persists each piece as it completes."""

    def __init__(self, turns: ChatTurns, live: LiveTurn) -> None:
        self._turns = turns
        self._store = turns._store
        self._live = live
        self._thread_id = live.thread_id
        self._turn_id = live.turn_id
        self._last_answer_id: str | None = None
        self._step_saved = 0
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
        self._turns.journal.begin(turn_id=self._turn_id, thread_id=self._thread_id, run=self._run)

    async def on_text(self, step: int, delta: str) -> None:
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
                DELTA_FLUSH_SECONDS, self._flush
            )

    def _flush(self) -> None:
        """Send the text held back so far, if any; called before every other frame."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if not self._pending:
            return
        delta = "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0
        # Stored before it is sent: after a hard kill the stored text holds all the user saw.
        self._turns.journal.checkpoint(self._turn_id, self._pending_step, delta)
        self._live.emit(
            TextDeltaFrame(
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                step=self._pending_step,
                delta=delta,
            )
        )

    async def on_step_end(
        self, step: int, text: str, calls: list[ChatToolCall], finish_reason: str
    ) -> None:
        self._flush()
        message_id = self._message_id(step)
        self._store.add_message(
            message_id=message_id,
            thread_id=self._thread_id,
            turn_id=self._turn_id,
            role="assistant",
            content=text,
            tool_calls=[ToolCallRecord(id=c.id, name=c.name, arguments=c.arguments) for c in calls],
            finish_reason="tool_calls" if calls else finish_reason,
        )
        self._last_answer_id = message_id
        self._step_saved = step

    async def on_tool_call(self, step: int, call: ChatToolCall, arguments: dict[str, Any]) -> None:
        self._flush()
        self._live.emit(
            ToolCallFrame(
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                step=step,
                call_id=call.id,
                name=call.name,
                arguments=arguments,
            )
        )

    async def on_tool_result(
        self, step: int, call: ChatToolCall, outcome: GuardedResult, source: str
    ) -> None:
        self._turns.events.tool_invoked(call.name, source, outcome)
        self._turns.outputs.save(
            call_id=call.id, thread_id=self._thread_id, name=call.name, content=outcome.full_text
        )
        text = outcome.result.joined_text()
        self._store.add_message(
            message_id=f"{self._turn_id}:{self._run}:t{step}:{call.id}",
            thread_id=self._thread_id,
            turn_id=self._turn_id,
            role="tool",
            content=text,
            tool_call_id=call.id,
            name=call.name,
            status="error" if outcome.result.is_error else "complete",
            meta={
                "duration_ms": round(outcome.duration_ms, 1),
                "truncated": outcome.truncated,
                "source": source,
                "arguments": json.loads(call.arguments) if _is_json(call.arguments) else {},
            },
        )
        self._live.emit(
            ToolResultFrame(
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                step=step,
                call_id=call.id,
                name=call.name,
                ok=not outcome.result.is_error,
                duration_ms=round(outcome.duration_ms, 1),
                truncated=outcome.truncated,
                content=text[:TOOL_PREVIEW_CHARS],
            )
        )

    def end(
        self,
        loop: ToolLoop,
        finish_reason: FinishReason,
        *,
        status: MessageStatus,
        code: ErrorCode | None = None,
        message: str = "",
        retryable: bool = False,
    ) -> None:
        """End an interrupted turn: keep the partial text, say why, send done."""
        self._flush()
        step = loop.state.step
        # When the interrupted step was already saved (e.g. cancelled while tools ran),
        # a closing marker records the outcome so the turn reads as ended.
        saved = step == 0 or step <= self._step_saved
        end_id = end_message_id(self._turn_id, self._run)
        self._store.add_message(
            message_id=end_id if saved else self._message_id(step),
            thread_id=self._thread_id,
            turn_id=self._turn_id,
            role="assistant",
            content="" if saved else loop.state.partial_text,
            status=status,
            finish_reason=finish_reason,
        )
        self._turns.journal.end(self._turn_id)
        if code is not None:
            self._live.emit(
                ErrorFrame(
                    code=code,
                    message=message,
                    thread_id=self._thread_id,
                    turn_id=self._turn_id,
                    retryable=retryable,
                )
            )
        self._live.emit(
            DoneFrame(
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                finish_reason=finish_reason,
                steps=step,
                usage=Usage(),
            )
        )

    def finish(self, result: TurnResult) -> None:
        """Record the turn's outcome on its final message and tell the browser."""
        self._flush()
        if self._last_answer_id is not None:
            self._store.update_message(
                self._last_answer_id,
                content=result.text,
                status="complete",
                finish_reason=result.finish_reason,
                meta={"steps": result.steps, "usage": result.usage.model_dump()},
            )
        self._turns.journal.end(self._turn_id)
        self._live.emit(
            DoneFrame(
                thread_id=self._thread_id,
                turn_id=self._turn_id,
                finish_reason=result.finish_reason,
                steps=result.steps,
                usage=result.usage,
            )
        )


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _ack(frame: ChatFrame, *, duplicate: bool) -> AckFrame:
    return AckFrame(thread_id=frame.thread_id, message_id=frame.message_id, duplicate=duplicate)


def _send(socket: ChatSocket, frame: BaseModel) -> None:
    socket.send(frame.model_dump_json())
