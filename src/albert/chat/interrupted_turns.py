"""Ending the turns a restart cut off, when the client's object starts again.

A hard stop (`kill -9`, a crash, a deploy that resets the object) ends a turn without
its outcome being stored. Every piece it stored is still there (each was committed as
one transaction before its frame was sent); what is missing is the end. The turn journal
(`albert.storage.turn_journal`) shows which turns were running and the text the user had
seen of the step in progress. Recovery stores that text as the turn's last message, marked
`incomplete` with finish reason `error` and `meta.ended_by = "restart"`, so the thread reads
as an answer that was cut off (and a resend of the message id retries it), and a browser
resuming the turn gets a `turn_interrupted` frame instead of waiting for frames that will
never come.

A turn that storage failures ended (a full disk or object) is ended the same way, with
`meta.ended_by = "storage"`: its browser was told at once, but its end could not be stored
then. Such ends, and any end storage refuses at start-up, wait in `UnsettledTurns` and are
stored with the next frame once storage works again (or at the next start).
"""

from __future__ import annotations

import logging

from albert.storage.ports import StorageError
from albert.storage.threads import ThreadStore
from albert.storage.turn_journal import JournalEntry, TurnJournal

log = logging.getLogger(__name__)

ENDED_BY_RESTART = "restart"
ENDED_BY_STORAGE = "storage"
RESTART_MESSAGE = (
    "This answer was cut off by a restart of the server; what was written so far is kept. "
    "Send the question again to retry."
)
# Outcomes that mean the answer itself was stored whole (only its bookkeeping was cut).
_ANSWERED = ("stop", "step_limit", "length", "refusal")


def step_message_id(turn_id: str, run: str, step: int) -> str:
    """Id of the assistant message of one model step of a turn's run."""
    return f"{turn_id}:{run}:a{step}"


def end_message_id(turn_id: str, run: str) -> str:
    """Id of the closing marker of a run whose last step was stored already."""
    return f"{turn_id}:{run}:end"


def recover_interrupted_turns(
    store: ThreadStore, journal: TurnJournal, unsettled: UnsettledTurns | None = None
) -> list[JournalEntry]:
    """Store the end of every turn the journal still shows unended; the turns ended.

    An end storage refuses now (still full) is left in the journal, and in `unsettled` to
    be stored once it works: the object starts either way.
    """
    ended: list[JournalEntry] = []
    try:
        entries = journal.unended()
    except StorageError:
        log.exception("the turn journal could not be read; cut-off turns are ended later")
        return ended
    for entry in entries:
        try:
            if end_turn(store, journal, entry):
                ended.append(entry)
        except StorageError as exc:
            log.warning("turn %s: its end could not be stored yet: %s", entry.turn_id, exc)
            if unsettled is not None:
                unsettled.add(entry.turn_id, entry.run)
    return ended


def end_turn(
    store: ThreadStore, journal: TurnJournal, entry: JournalEntry, ended_by: str | None = None
) -> bool:
    """Store the end of the journal's unended turn `entry` with the text its user saw;
    True when an end was written. `ended_by` is the entry's own (an `unsaved` entry:
    storage, a `running` one: a restart) unless given."""
    if not store.has_thread(entry.thread_id) or _answer_was_stored(store, entry):
        journal.end(entry.turn_id)
        return False
    if ended_by is None:
        ended_by = ENDED_BY_STORAGE if entry.state == "unsaved" else ENDED_BY_RESTART
    step_id = step_message_id(entry.turn_id, entry.run, entry.step)
    # The step in progress was stored when it ended (e.g. the cut came while its tools
    # ran): then only a closing marker says how the turn ended.
    step_saved = entry.step == 0 or store.message_thread(step_id) is not None

    def write() -> None:
        # The end and the entry's change land together: a second try never stores two ends.
        store.add_message(
            message_id=end_message_id(entry.turn_id, entry.run) if step_saved else step_id,
            thread_id=entry.thread_id,
            turn_id=entry.turn_id,
            role="assistant",
            content="" if step_saved else entry.partial,
            status="incomplete",
            finish_reason="error",
            meta={"ended_by": ended_by, "step": entry.step},
        )
        if ended_by == ENDED_BY_RESTART:
            # Kept, so a browser resuming the turn is told a restart ended it.
            journal.mark_interrupted(entry.turn_id)
        else:
            journal.end(entry.turn_id)  # its browser was told when it failed

    store.transaction(write)
    if ended_by == ENDED_BY_RESTART:
        log.warning("turn %s was cut off by a restart; its partial answer is kept", entry.turn_id)
    else:
        log.warning("turn %s, ended by a storage failure, is stored now", entry.turn_id)
    return True


class UnsettledTurns:
    """Turns that ended without their end stored (storage refused it): each is stored from
    the journal once storage works again (`settle`, called with every incoming frame)."""

    def __init__(self, store: ThreadStore, journal: TurnJournal) -> None:
        self._store = store
        self._journal = journal
        # turn id → (the run that ended, how it ended; None: as its journal entry says)
        self._turns: dict[str, tuple[str, str | None]] = {}

    def add(self, turn_id: str, run: str, ended_by: str | None = None) -> None:
        """Remember a turn (one run of it) whose end is still to be stored."""
        self._turns[turn_id] = (run, ended_by)

    def __len__(self) -> int:
        return len(self._turns)

    def settle(self) -> None:
        """Store the ends storage accepts now; keep the rest for the next try."""
        for turn_id, (run, ended_by) in list(self._turns.items()):
            try:
                entry = self._journal.entry(turn_id)
                # Gone (thread deleted), retried since (another run) or already ended.
                if entry is not None and entry.run == run and entry.state != "interrupted":
                    end_turn(self._store, self._journal, entry, ended_by)
            except StorageError as exc:
                log.info("turn %s: its end still cannot be stored: %s", turn_id, exc)
                return  # storage still fails: the others would too
            del self._turns[turn_id]


def _answer_was_stored(store: ThreadStore, entry: JournalEntry) -> bool:
    prefix = f"{entry.turn_id}:{entry.run}:"
    return any(
        m.id.startswith(prefix) and m.role == "assistant" and m.finish_reason in _ANSWERED
        for m in store.turn_messages(entry.thread_id, entry.turn_id)
    )
