"""Frame admission: what an incoming frame is, and whether a chat message starts a turn.

A chat message is checked in this order, each refusal an error frame naming the
problem, with nothing stored: too long; unknown thread; its id already used in
another thread; a turn still running in the thread (the resend of that turn's
message is acknowledged as a duplicate instead); a resend of a message already
answered (acknowledged as a duplicate); the per-client rate limit. Then the
user's message is stored, once: the resend of a failed turn's message is a retry. When
storage refuses it (e.g. full), the message is refused with `storage_unavailable`: no
turn starts, and the socket goes on.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from pydantic import ValidationError

from albert.chat.thread_titles import title_from_question
from albert.limits.client_rates import RateLimiter
from albert.protocol.frames import (
    AckFrame,
    ChatFrame,
    ClientFrames,
    ErrorCode,
    ErrorFrame,
    RegenerateFrame,
    client_frame_adapter,
)
from albert.settings import Settings
from albert.storage.ports import StorageError
from albert.storage.threads import DEFAULT_TITLE, NotFound, ThreadStore
from albert.validation import frame_error_message

log = logging.getLogger(__name__)

# Endings that answered a message: its resend is a duplicate, not a retry.
ANSWERED = ("stop", "step_limit", "length", "refusal", "cancelled")
NOT_SAVED_MESSAGE = (
    "Your message could not be saved (storage unavailable), so it was not sent; try again later."
)


class Admitted(NamedTuple):
    """The message starts a turn; `retry` when it was stored by an earlier, failed turn."""

    retry: bool
    # A regenerated answer: how many earlier answers its question has kept.
    version: int = 0


Verdict = Admitted | AckFrame | ErrorFrame


def read_frame(raw: str | bytes, max_bytes: int) -> ClientFrames | ErrorFrame:
    """The client frame in `raw`, or the error frame that says what is wrong with it."""
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > max_bytes:
        return refusal("too_large", f"frame larger than {max_bytes} bytes")
    try:
        return client_frame_adapter.validate_json(raw)
    except ValidationError as exc:
        return refusal("bad_frame", frame_error_message(exc))


def refusal(
    code: ErrorCode,
    message: str,
    *,
    thread_id: str | None = None,
    retryable: bool = False,
    retry_after: float | None = None,
) -> ErrorFrame:
    """An error frame for input the client sent (never a turn's ending)."""
    return ErrorFrame(
        code=code,
        message=message,
        thread_id=thread_id,
        retryable=retryable or retry_after is not None,
        retry_after_seconds=retry_after,
    )


def _not_saved(thread_id: str, message: str) -> ErrorFrame:
    # Retryable: the same frame works once storage does again.
    return refusal("storage_unavailable", message, thread_id=thread_id, retryable=True)


def ack(frame: ChatFrame, *, duplicate: bool) -> AckFrame:
    """The acknowledgement of a chat message."""
    return AckFrame(thread_id=frame.thread_id, message_id=frame.message_id, duplicate=duplicate)


class Admission:
    """Decides what a chat message gets, and stores it when it starts a turn."""

    def __init__(self, store: ThreadStore, settings: Settings, limit: RateLimiter) -> None:
        self._store = store
        self._settings = settings
        self._limit = limit

    def known_thread(self, thread_id: str) -> bool:
        """True when this client has the thread."""
        return self._store.has_thread(thread_id)

    def admit(self, frame: ChatFrame, *, busy: bool) -> Verdict:
        """The verdict on one chat message; `busy` when a turn runs in its thread."""
        found = self._locate(frame)
        if isinstance(found, ErrorFrame):
            return found
        title, stored_in = found
        repeated = self._repeat(frame, stored=stored_in is not None, busy=busy)
        if repeated is not None:
            return repeated
        replaces = frame.replaces if stored_in is None else None
        if replaces is not None and not self._store.is_question(frame.thread_id, replaces):
            return refusal(
                "unknown_turn",
                f"no question {replaces!r} in this thread to replace",
                thread_id=frame.thread_id,
            )
        limited = self._rate_limited(frame.thread_id)
        if limited is not None:
            return limited
        if stored_in is None:
            try:
                self._store_user_message(frame, title)
            except StorageError:
                log.warning("a message of thread %s could not be stored", frame.thread_id)
                return _not_saved(frame.thread_id, NOT_SAVED_MESSAGE)
        return Admitted(retry=stored_in is not None)

    def regenerate(self, frame: RegenerateFrame, *, busy: bool) -> Admitted | ErrorFrame:
        """Answer the thread's last question again, its current answer kept as a version."""
        if not self._store.has_thread(frame.thread_id):
            return refusal("unknown_thread", "no such thread", thread_id=frame.thread_id)
        if busy:
            return refusal(
                "busy",
                "a turn is still running in this thread; wait for it or cancel it",
                thread_id=frame.thread_id,
                retryable=True,
            )
        if self._store.last_question(frame.thread_id) != frame.turn_id:
            return refusal(
                "unknown_turn",
                "only the last question of a thread can be answered again",
                thread_id=frame.thread_id,
            )
        limited = self._rate_limited(frame.thread_id)
        if limited is not None:
            return limited
        try:
            version = self._store.transaction(
                lambda: self._store.supersede_answer(frame.thread_id, frame.turn_id)
            )
        except StorageError:
            log.warning("an answer of thread %s could not be set aside", frame.thread_id)
            return _not_saved(
                frame.thread_id,
                "The answer could not be regenerated (storage unavailable); nothing was "
                "changed. Try again later.",
            )
        return Admitted(retry=True, version=version)

    def _rate_limited(self, thread_id: str) -> ErrorFrame | None:
        wait = self._limit.take()
        if wait is None:
            return None
        return refusal(
            "rate_limited",
            f"too many messages; try again in {wait:g} s",
            thread_id=thread_id,
            retry_after=wait,
        )

    def _locate(self, frame: ChatFrame) -> tuple[str, str | None] | ErrorFrame:
        """The title of the message's thread, and where its id was stored before (if it was)."""
        if len(frame.text) > self._settings.max_message_chars:
            return refusal(
                "too_large",
                f"message longer than {self._settings.max_message_chars} characters",
                thread_id=frame.thread_id,
            )
        try:
            title, stored_in = self._store.title_and_message_thread(
                frame.thread_id, frame.message_id
            )
        except NotFound:
            return refusal("unknown_thread", "no such thread", thread_id=frame.thread_id)
        if stored_in is not None and stored_in != frame.thread_id:
            return refusal(
                "duplicate_id",
                "message_id already used in another thread",
                thread_id=frame.thread_id,
            )
        return title, stored_in

    def _repeat(self, frame: ChatFrame, *, stored: bool, busy: bool) -> Verdict | None:
        """The answer to a message that cannot start a turn now; None when it can."""
        if busy:
            if stored:
                return ack(frame, duplicate=True)
            return refusal(
                "busy",
                "a turn is still running in this thread; wait for it or cancel it",
                thread_id=frame.thread_id,
                retryable=True,
            )
        if stored and self._store.turn_ended(frame.thread_id, frame.message_id, ANSWERED):
            # A resend (e.g. after a reconnect) of a message already answered.
            return ack(frame, duplicate=True)
        return None

    def _store_user_message(self, frame: ChatFrame, title: str) -> None:
        # The message, its thread's bump and a first title: one commit.
        self._store.transaction(lambda: self._write_user_message(frame, title))

    def _write_user_message(self, frame: ChatFrame, title: str) -> None:
        if frame.replaces is not None:
            # Edit and resend: the edited question and all that followed are replaced.
            self._store.delete_from(frame.thread_id, frame.replaces)
        first = title == DEFAULT_TITLE
        self._store.add_message(
            message_id=frame.message_id,
            thread_id=frame.thread_id,
            turn_id=frame.message_id,
            role="user",
            content=frame.text,
            # The first title's update sets the thread's `updated_at` to now in the same
            # commit: the bump before it would be overwritten.
            bump=not first,
        )
        if first:
            # The first question's subject makes a better title than "New chat".
            title = title_from_question(frame.text)
            self._store.set_title(frame.thread_id, title or DEFAULT_TITLE)
