"""Chat over the socket: each frame to its handler, and the turns running in each thread.

Admission (`albert.chat.frame_admission`) decides whether a message starts a turn and
stores it first: the user's message is kept before the model is called. The
driver (`albert.chat.driver`) runs the turn; the recorder (`albert.chat.recorder`)
streams and persists it, keeping the turn journal that lets a restart end a turn it cut
off (`albert.chat.interrupted_turns`). Every frame of a running turn is numbered and kept
(`LiveTurn`) so a reconnecting browser can resume. A `confirm` frame answers a tool call
that waits for the user (`albert.chat.confirmations`), whichever socket sends it. Turns
that storage failures ended before their end could be stored are settled first, with the
next frame that finds storage working (`albert.chat.interrupted_turns.UnsettledTurns`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from albert.analytics.chat_events import TurnEvents
from albert.chat.confirmations import PendingConfirmations
from albert.chat.driver import TurnDriver
from albert.chat.frame_admission import Admission, Admitted, ack, read_frame, refusal
from albert.chat.interrupted_turns import RESTART_MESSAGE, UnsettledTurns
from albert.chat.live import LiveTurn
from albert.ports import ChatSocket, SocketHub
from albert.protocol.frames import (
    CancelFrame,
    ChatFrame,
    ConfirmFrame,
    ErrorFrame,
    PingFrame,
    PongFrame,
    RegenerateFrame,
    ResumeFrame,
    ResyncFrame,
    TurnInterruptedFrame,
)
from albert.storage.turn_journal import TurnJournal


class ChatTurns:
    """Handles socket frames for one client and keeps track of its running turns."""

    def __init__(
        self,
        *,
        admission: Admission,
        driver: TurnDriver,
        hub: SocketHub,
        events: TurnEvents,
        journal: TurnJournal,
        confirmations: PendingConfirmations,
        max_frame_bytes: int,
        unsettled: UnsettledTurns | None = None,
    ) -> None:
        self.journal = journal
        self.unsettled = unsettled
        self._confirmations = confirmations
        self._admission = admission
        self._driver = driver
        self._hub = hub
        self.events = events
        self._max_frame_bytes = max_frame_bytes
        self._running: dict[str, asyncio.Task[Any]] = {}
        self._live: dict[str, LiveTurn] = {}

    async def on_frame(self, socket: ChatSocket, raw: str | bytes) -> None:
        """Validate one incoming frame and act on it; bad input gets an error frame."""
        if self.unsettled:
            # Before the frame: a new turn's messages come after an earlier turn's end.
            self.unsettled.settle()
        frame = read_frame(raw, self._max_frame_bytes)
        if isinstance(frame, ErrorFrame):
            _send(socket, frame)
        elif isinstance(frame, PingFrame):
            _send(socket, PongFrame())
        elif isinstance(frame, CancelFrame):
            self._cancel(socket, frame)
        elif isinstance(frame, ResumeFrame):
            self._resume(socket, frame)
        elif isinstance(frame, ConfirmFrame):
            self._confirm(socket, frame)
        elif isinstance(frame, RegenerateFrame):
            await self._regenerate(socket, frame)
        else:
            await self._chat(socket, frame)

    async def cancel_all(self, wait_seconds: float = 5.0) -> int:
        """Cancel every running turn (as a user's cancel does) and wait, within a bound,
        until each has stored its `cancelled` ending; how many were cancelled."""
        tasks = [t for t in self._running.values() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=wait_seconds)
        return len(tasks)

    async def cancel_thread(self, thread_id: str, wait_seconds: float = 5.0) -> bool:
        """Cancel the turn running in a thread, if any, and wait (within a bound) until it
        has stored its `cancelled` ending and sent its `done`; True if one ran."""
        task = self._running.get(thread_id)
        if task is None or task is asyncio.current_task():
            return False
        task.cancel()
        await asyncio.wait([task], timeout=wait_seconds)
        return True

    def _send_all(self, frame: BaseModel, text: str) -> None:
        self.events.on_frame(frame)
        for socket in self._hub.sockets():
            socket.send(text)

    def _cancel(self, socket: ChatSocket, frame: CancelFrame) -> None:
        task = self._running.get(frame.thread_id)
        if task is not None:
            task.cancel()
        elif not self._admission.known_thread(frame.thread_id):
            _send(socket, _unknown_thread(frame.thread_id))
        else:
            _send(
                socket,
                refusal(
                    "nothing_running",
                    "nothing to cancel: no turn is running in this thread",
                    thread_id=frame.thread_id,
                ),
            )

    def _confirm(self, socket: ChatSocket, frame: ConfirmFrame) -> None:
        # Any socket of the client may answer: the one that was asked may be gone.
        if self._confirmations.answer(frame):
            return
        if frame.thread_id not in self._running and not self._admission.known_thread(
            frame.thread_id
        ):
            _send(socket, _unknown_thread(frame.thread_id))
            return
        _send(
            socket,
            refusal(
                "nothing_to_confirm",
                f"nothing to confirm: no call {frame.call_id!r} of turn {frame.turn_id} is "
                "waiting for an answer (already answered, timed out, or the turn ended)",
                thread_id=frame.thread_id,
            ),
        )

    def _resume(self, socket: ChatSocket, frame: ResumeFrame) -> None:
        live = self._live.get(frame.thread_id)
        if live is None and not self._admission.known_thread(frame.thread_id):
            # Deleted, or never this client's: there is nothing to resume or reload.
            _send(socket, _unknown_thread(frame.thread_id))
            return
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

    async def _chat(self, socket: ChatSocket, frame: ChatFrame) -> None:
        verdict = self._admission.admit(frame, busy=frame.thread_id in self._running)
        if not isinstance(verdict, Admitted):
            _send(socket, verdict)
            return
        self.events.message_sent(frame, retry=verdict.retry)
        _send(socket, ack(frame, duplicate=False))
        task = asyncio.current_task()
        if task is not None:
            self._running[frame.thread_id] = task
        try:
            await self._run_turn(frame.thread_id, frame.message_id)
        finally:
            self._running.pop(frame.thread_id, None)

    async def _regenerate(self, socket: ChatSocket, frame: RegenerateFrame) -> None:
        # No ack: the turn's start frame (or an error frame) answers it.
        verdict = self._admission.regenerate(frame, busy=frame.thread_id in self._running)
        if not isinstance(verdict, Admitted):
            _send(socket, verdict)
            return
        self.events.answer_regenerated(frame, verdict.version)
        task = asyncio.current_task()
        if task is not None:
            self._running[frame.thread_id] = task
        try:
            await self._run_turn(frame.thread_id, frame.turn_id)
        finally:
            self._running.pop(frame.thread_id, None)

    async def _run_turn(self, thread_id: str, turn_id: str) -> None:
        live = LiveTurn(thread_id, turn_id, self._send_all)
        self._live[thread_id] = live
        try:
            await self._driver.run(live)
        finally:
            self._live.pop(thread_id, None)


def _unknown_thread(thread_id: str) -> ErrorFrame:
    return refusal("unknown_thread", "no such thread", thread_id=thread_id)


def _send(socket: ChatSocket, frame: BaseModel) -> None:
    socket.send(frame.model_dump_json())
