"""Moving one object's threads to another: export, idempotent import, retire.

Used when an anonymous client signs in (albert.chat.claims): its work moves into the
user's object. The two objects share no transaction, so each step is safe to repeat:

- export reads every thread, message and tool output, in a fixed order, with a digest
  of exactly what was read;
- import upserts by id, so importing the same export twice (or a later export of the
  same threads) leaves one copy; a message whose id the receiving object already uses
  for another thread gets an id derived from its source, the same each time;
- retire deletes what was exported, but only if the digest still matches (nothing
  changed since the export was imported) and no turn is running, in one synchronous
  step (one storage transaction on the platform).
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict

from albert.storage.ports import SqlStorage
from albert.storage.threads import message_wire_of, store_message_wire


class ThreadRow(BaseModel):
    """A thread as stored."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    title: str
    created_at: int
    updated_at: int


class MessageRow(BaseModel):
    """A message as stored (its `seq` is the receiving object's to give)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    thread_id: str
    turn_id: str
    role: str
    content: str
    tool_calls: str | None = None
    tool_call_id: str | None = None
    name: str | None = None
    status: str
    finish_reason: str | None = None
    meta: str | None = None
    created_at: int


class ToolOutputRow(BaseModel):
    """A whole tool output as stored."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    call_id: str
    thread_id: str
    name: str
    content: str
    created_at: int


class ThreadsExport(BaseModel):
    """Everything of an object's threads, oldest first."""

    model_config = ConfigDict(defer_build=True)

    threads: list[ThreadRow]
    messages: list[MessageRow]
    tool_outputs: list[ToolOutputRow]


class ImportCounts(BaseModel):
    """What an import wrote (rows already there count too: the import is a no-op then)."""

    model_config = ConfigDict(defer_build=True)

    threads: int = 0
    messages: int = 0
    tool_outputs: int = 0


def digest_of(*parts: BaseModel) -> str:
    """A digest of exported data: equal exactly when the data is."""
    text = json.dumps([p.model_dump(mode="json") for p in parts], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def export_threads(sql: SqlStorage) -> ThreadsExport:
    """Every thread, message and tool output, in a fixed order."""
    threads = sql.execute(
        "SELECT id, title, created_at, updated_at FROM threads ORDER BY created_at, id"
    )
    messages = sql.execute(
        "SELECT id, thread_id, turn_id, role, content, tool_calls, tool_call_id, name, status, "
        "finish_reason, meta, created_at FROM messages ORDER BY seq"
    )
    outputs = sql.execute(
        "SELECT call_id, thread_id, name, content, created_at FROM tool_outputs ORDER BY id"
    )
    return ThreadsExport(
        threads=[ThreadRow(**r) for r in threads],
        messages=[MessageRow(**r) for r in messages],
        tool_outputs=[ToolOutputRow(**r) for r in outputs],
    )


def import_threads(sql: SqlStorage, data: ThreadsExport, source: str) -> ImportCounts:
    """Upsert an export into this object; repeating it changes nothing.

    `source` (the exporting object's name) seeds the ids given to rows whose id is
    taken here by something else, so a repeat gives them the same ids again.
    """
    thread_ids = {t.id: _thread_id_here(sql, t, source) for t in data.threads}
    for row in data.threads:
        sql.execute(
            "INSERT INTO threads (id, title, created_at, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET title = excluded.title, "
            "updated_at = MAX(threads.updated_at, excluded.updated_at)",
            thread_ids[row.id],
            row.title,
            row.created_at,
            row.updated_at,
        )
    messages = 0
    for message in data.messages:
        thread_id = thread_ids.get(message.thread_id)
        if thread_id is None:
            continue  # a message of no exported thread: nothing to attach it to
        message_id = _message_id_here(sql, message.id, thread_id, source)
        row = {**message.model_dump(), "id": message_id, "thread_id": thread_id}
        sql.execute(
            "INSERT INTO messages (id, thread_id, turn_id, role, content, tool_calls, "
            "tool_call_id, name, status, finish_reason, meta, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET content = excluded.content, "
            "tool_calls = excluded.tool_calls, status = excluded.status, "
            "finish_reason = excluded.finish_reason, meta = excluded.meta",
            message_id,
            thread_id,
            message.turn_id,
            message.role,
            message.content,
            message.tool_calls,
            message.tool_call_id,
            message.name,
            message.status,
            message.finish_reason,
            message.meta,
            message.created_at,
        )
        # Its JSON as sent, with the ids it has here (albert.storage.threads).
        store_message_wire(sql, message_id, message_wire_of(row))
        messages += 1
    outputs = 0
    for output in data.tool_outputs:
        thread_id = thread_ids.get(output.thread_id)
        if thread_id is None:
            continue
        sql.execute(
            "INSERT INTO tool_outputs (call_id, thread_id, name, content, created_at) "
            "SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM tool_outputs "
            "WHERE thread_id = ? AND call_id = ? AND created_at = ? AND name = ?)",
            output.call_id,
            thread_id,
            output.name,
            output.content,
            output.created_at,
            thread_id,
            output.call_id,
            output.created_at,
            output.name,
        )
        outputs += 1
    return ImportCounts(threads=len(data.threads), messages=messages, tool_outputs=outputs)


def _thread_id_here(sql: SqlStorage, row: ThreadRow, source: str) -> str:
    """The thread's id in this object: its own, unless another thread holds that id."""
    found = sql.execute("SELECT created_at FROM threads WHERE id = ?", row.id)
    if not found or found[0]["created_at"] == row.created_at:
        return row.id
    return _derived_id("t_", source, row.id)


def _message_id_here(sql: SqlStorage, message_id: str, thread_id: str, source: str) -> str:
    found = sql.execute("SELECT thread_id FROM messages WHERE id = ?", message_id)
    if not found or found[0]["thread_id"] == thread_id:
        return message_id
    return _derived_id("m_", source, message_id)


def _derived_id(prefix: str, source: str, original: str) -> str:
    return prefix + hashlib.sha256(f"{source}\n{original}".encode()).hexdigest()[:30]


def running_turns(sql: SqlStorage) -> int:
    """How many turns are running right now (a move must wait for them)."""
    rows = sql.execute("SELECT COUNT(*) AS n FROM turn_journal WHERE state = 'running'")
    return int(rows[0]["n"]) if rows else 0


def delete_threads(sql: SqlStorage) -> None:
    """Remove every thread with its messages, tool outputs and journal entries."""
    for table in ("tool_outputs", "turn_journal", "message_wire", "messages", "threads"):
        sql.execute(f"DELETE FROM {table}")
