"""Asking the user before a remote tool its server marks destructive runs.

The turn sends a `confirm_tool` frame (a numbered turn frame, so a resuming browser gets
it again) and waits, up to TOOL_CONFIRM_TIMEOUT_SECONDS, for a `confirm` frame naming the
call. That frame may come from any socket of the client: the waiting calls are kept per
object (`PendingConfirmations`), not per socket. While the turn waits its own time bound
is held (`TurnConfirmer.hold`): a user who is thinking is not a stalled turn. The
decision is sent as a `tool_decision` frame and kept for the call's stored tool message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import unicodedata
from collections.abc import Iterator
from typing import Any

from albert.ai.model import ChatToolCall
from albert.chat.live import LiveTurn
from albert.protocol.frames import ConfirmFrame, ConfirmToolFrame, ToolDecision, ToolDecisionFrame

# What a confirm_tool frame shows of the arguments; the card says when they were cut.
CONFIRM_ARGUMENTS_CHARS = 2_000
_ESCAPED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
_MAX_COMBINING_RUN = 3
_MAX_SPACE_RUN = 2


class PendingConfirmations:
    """The tool calls of this client's turns that wait for the user's yes or no."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._waiting: dict[tuple[str, str, str], list[asyncio.Future[bool]]] = {}

    def answer(self, frame: ConfirmFrame) -> bool:
        """Settle the call the frame names; False when no such call is waiting."""
        futures = self._waiting.pop((frame.thread_id, frame.turn_id, frame.call_id), None)
        if not futures:
            return False
        for future in futures:
            if not future.done():
                future.set_result(frame.approved)
        return True

    async def wait(self, thread_id: str, turn_id: str, call_id: str) -> ToolDecision:
        """The user's decision on one call, or "timeout" when none came in time.

        A cancelled turn stops waiting at once; the call is forgotten either way.
        """
        key = (thread_id, turn_id, call_id)
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        # Call ids are unique within a turn (the tool loop renames a model's repeats), so
        # a key has one waiter; a list keeps a second one from orphaning the first.
        self._waiting.setdefault(key, []).append(future)
        try:
            async with asyncio.timeout(self.timeout_seconds):
                approved = await future
        except TimeoutError:
            return "timeout"
        finally:
            self._forget(key, future)
        return "approved" if approved else "declined"

    def _forget(self, key: tuple[str, str, str], future: asyncio.Future[bool]) -> None:
        futures = self._waiting.get(key)
        if futures is None:
            return
        if future in futures:
            futures.remove(future)
        if not futures:
            del self._waiting[key]


class TurnConfirmer:
    """One turn's side of the confirmations: the frames, the wait, the held time bound.

    Implements the tool loop's ToolConfirmer; `decisions` (by call id) is what the
    recorder stores with each call's tool message.
    """

    def __init__(self, live: LiveTurn, pending: PendingConfirmations) -> None:
        self._live = live
        self._pending = pending
        self.decisions: dict[str, ToolDecision] = {}
        self._deadline: asyncio.Timeout | None = None
        self._holds = 0
        self._left = 0.0

    @property
    def timeout_seconds(self) -> float:
        return self._pending.timeout_seconds

    def hold(self, deadline: asyncio.Timeout) -> None:
        """The turn's time bound, to stop while the user is asked."""
        self._deadline = deadline

    async def confirm(
        self, step: int, call: ChatToolCall, server: str, arguments: dict[str, Any]
    ) -> ToolDecision:
        """Ask the browser, wait for its answer, and tell every socket the outcome."""
        shown, cut = display_arguments(arguments, CONFIRM_ARGUMENTS_CHARS)
        self._live.emit(
            ConfirmToolFrame,
            step=step,
            call_id=call.id,
            server=server,
            tool=call.name,
            arguments=shown,
            arguments_cut=cut,
            timeout_seconds=self._pending.timeout_seconds,
        )
        with self._held():
            decision = await self._pending.wait(self._live.thread_id, self._live.turn_id, call.id)
        self.decisions[call.id] = decision
        self._live.emit(ToolDecisionFrame, step=step, call_id=call.id, decision=decision)
        return decision

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        # Calls of one step are asked side by side: the bound stops at the first question
        # and goes on, with the time it had left, once the last one is answered.
        deadline = self._deadline
        loop = asyncio.get_running_loop()
        if deadline is not None and self._holds == 0:
            when = deadline.when()
            if when is not None:
                self._left = max(0.0, when - loop.time())
                deadline.reschedule(None)
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if deadline is not None and self._holds == 0:
                deadline.reschedule(loop.time() + self._left)


def display_arguments(arguments: dict[str, Any], limit: int) -> tuple[str, bool]:
    """The arguments as JSON text a person can trust, at most `limit` characters (+ a note).

    Nothing is dropped: control, format (bidi overrides, zero-width, the tag block),
    private-use and surrogate characters, line separators, spaces other than U+0020,
    spaces after the second in a row inside a string and long runs of combining marks
    are written as JSON escapes, so what the user approves shows every character
    that would be sent. True when the text was cut.
    """
    text = json.dumps(arguments, ensure_ascii=False, indent=2)
    out: list[str] = []
    combining = spaces = 0
    in_string = after_backslash = False
    for char in text:
        category = unicodedata.category(char)
        stacked = category.startswith("M") and combining >= _MAX_COMBINING_RUN
        combining = combining + 1 if category.startswith("M") else 0
        # Inside a string (json.dumps escapes every quote and backslash there), a long
        # run of spaces would push the rest of a value out of the card's sight.
        spaces = spaces + 1 if char == " " and in_string else 0
        padding = spaces > _MAX_SPACE_RUN
        if in_string and after_backslash:
            after_backslash = False
        elif char == "\\" and in_string:
            after_backslash = True
        elif char == '"':
            in_string = not in_string
        # A bare newline is the indentation's: one inside a string is escaped already.
        hidden = category in _ESCAPED_CATEGORIES or (category == "Zs" and char != " ")
        if char != "\n" and (hidden or stacked or padding or _is_noncharacter(char)):
            out.append(_escape(char))
        else:
            out.append(char)
    shown = "".join(out)
    if len(shown) <= limit:
        return shown, False
    return f"{shown[:limit]}\n… ({len(shown) - limit:,} more characters not shown)", True


def _escape(char: str) -> str:
    """The JSON escape of one character (a surrogate pair above the BMP)."""
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _is_noncharacter(char: str) -> bool:
    code = ord(char)
    return 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE
