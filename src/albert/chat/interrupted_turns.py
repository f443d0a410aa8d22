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
"""

from __future__ import annotations

import logging

from albert.storage.threads import ThreadStore
from albert.storage.turn_journal import JournalEntry, TurnJournal

log = logging.getLogger(__name__)

ENDED_BY_RESTART = "restart"
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


def recover_interrupted_turns(store: ThreadStore, journal: TurnJournal) -> list[JournalEntry]:
    """Store the end of every turn the journal still shows running; the turns ended."""
    ended: list[JournalEntry] = []
    for entry in journal.running():
        if not store.has_thread(entry.thread_id):
            journal.end(entry.turn_id)
            continue
        if _answer_was_stored(store, entry):
            journal.end(entry.turn_id)
            continue
        step_id = step_message_id(entry.turn_id, entry.run, entry.step)
        # The step in progress was stored when it ended (e.g. the cut came while its tools
        # ran): then only a closing marker says how the turn ended.
        step_saved = entry.step == 0 or store.message_thread(step_id) is not None
        store.add_message(
            message_id=end_message_id(entry.turn_id, entry.run) if step_saved else step_id,
            thread_id=entry.thread_id,
            turn_id=entry.turn_id,
            role="assistant",
            content="" if step_saved else entry.partial,
            status="incomplete",
            finish_reason="error",
            meta={"ended_by": ENDED_BY_RESTART, "step": entry.step},
        )
        journal.mark_interrupted(entry.turn_id)
        log.warning("turn %s was cut off by a restart; its partial answer is kept", entry.turn_id)
        ended.append(entry)
    return ended


def _answer_was_stored(store: ThreadStore, entry: JournalEntry) -> bool:
    prefix = f"{entry.turn_id}:{entry.run}:"
    return any(
        m.id.startswith(prefix) and m.role == "assistant" and m.finish_reason in _ANSWERED
        for m in store.turn_messages(entry.thread_id, entry.turn_id)
    )
