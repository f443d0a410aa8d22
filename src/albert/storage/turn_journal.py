"""The journal of running turns: what a restart needs to end a turn it interrupted.

A turn is entered when it starts and removed once its outcome is stored. While it runs,
the text of its current step is checkpointed before each piece reaches the browser, so
the stored partial answer always holds at least what the user saw. An entry still marked
`running` when an object starts belongs to a turn that a restart (a crash, `kill -9`, a
deploy) cut off; recovery stores its partial answer and marks the entry `interrupted`, so
a browser resuming that turn is told it ended. An entry marked `unsaved` belongs to a turn
that a storage failure ended before its end could be stored (the browser was told); its
end is stored once storage works again, from the same checkpointed text.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from albert.clock import Clock
from albert.storage.ports import SqlStorage

JournalState = Literal["running", "interrupted", "unsaved"]


class JournalEntry(NamedTuple):
    """One turn in the journal (a named tuple: cheaper to make at import than a pydantic
    model or a dataclass)."""

    turn_id: str
    thread_id: str
    run: str
    state: JournalState
    step: int
    partial: str
    started_at: int
    ended_at: int | None = None


class TurnJournal:
    """Running and interrupted turns of one client, on the object's SQLite."""

    def __init__(self, sql: SqlStorage, clock: Clock) -> None:
        self._sql = sql
        self._clock = clock

    def begin(self, *, turn_id: str, thread_id: str, run: str) -> None:
        """A turn (or a retry of it) starts."""
        self._sql.execute(
            "INSERT OR REPLACE INTO turn_journal "
            "(turn_id, thread_id, run, state, step, partial, started_at, ended_at) "
            "VALUES (?, ?, ?, 'running', 0, '', ?, NULL)",
            turn_id,
            thread_id,
            run,
            self._clock.now_ms(),
        )

    def checkpoint(self, turn_id: str, step: int, delta: str) -> None:
        """Append text of `step` (a new step starts its text afresh)."""
        self._sql.execute(
            "UPDATE turn_journal SET partial = CASE WHEN step = ? THEN partial || ? ELSE ? END, "
            "step = ? WHERE turn_id = ? AND state = 'running'",
            step,
            delta,
            delta,
            step,
            turn_id,
        )

    def end(self, turn_id: str) -> None:
        """The turn's outcome is stored: nothing to recover."""
        self._sql.execute("DELETE FROM turn_journal WHERE turn_id = ?", turn_id)

    def running(self) -> list[JournalEntry]:
        """Turns entered and never ended, oldest first."""
        rows = self._sql.execute(
            "SELECT * FROM turn_journal WHERE state = 'running' ORDER BY started_at, turn_id"
        )
        return [JournalEntry(**row) for row in rows]

    def unended(self) -> list[JournalEntry]:
        """Turns whose end is not stored: running and unsaved ones, oldest first."""
        rows = self._sql.execute(
            "SELECT * FROM turn_journal WHERE state IN ('running', 'unsaved') "
            "ORDER BY started_at, turn_id"
        )
        return [JournalEntry(**row) for row in rows]

    def entry(self, turn_id: str) -> JournalEntry | None:
        """The turn's entry, whatever its state."""
        rows = self._sql.execute("SELECT * FROM turn_journal WHERE turn_id = ?", turn_id)
        return JournalEntry(**rows[0]) if rows else None

    def mark_unsaved(self, turn_id: str, run: str) -> None:
        """Storage refused the turn's end: it ended, and its end is still to be stored.

        'unsaved' is as long as 'running', so the row keeps its size and SQLite rewrites it
        in place, in the pages it has: this can land where storage is too full for the end.
        """
        self._sql.execute(
            "UPDATE turn_journal SET state = 'unsaved' "
            "WHERE turn_id = ? AND run = ? AND state = 'running'",
            turn_id,
            run,
        )

    def mark_interrupted(self, turn_id: str) -> None:
        """Recovery stored the turn's end: remember it was a restart that ended it."""
        self._sql.execute(
            "UPDATE turn_journal SET state = 'interrupted', partial = '', ended_at = ? "
            "WHERE turn_id = ?",
            self._clock.now_ms(),
            turn_id,
        )

    def interrupted(self, thread_id: str, turn_id: str) -> JournalEntry | None:
        """The entry of a turn a restart ended, if this one was."""
        rows = self._sql.execute(
            "SELECT * FROM turn_journal WHERE turn_id = ? AND thread_id = ? "
            "AND state = 'interrupted'",
            turn_id,
            thread_id,
        )
        return JournalEntry(**rows[0]) if rows else None

    def forget_thread(self, thread_id: str) -> None:
        """The thread was deleted."""
        self._sql.execute("DELETE FROM turn_journal WHERE thread_id = ?", thread_id)
