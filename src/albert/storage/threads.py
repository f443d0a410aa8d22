"""Threads and messages of one client, on the object's SQLite."""

import base64
import binascii
import json
import re
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from albert.clock import Clock
from albert.protocol.display_text import clean_label, has_visible_text
from albert.protocol.frames import ID_PATTERN
from albert.protocol.http import (
    Feedback,
    Message,
    MessageStatus,
    Thread,
    ThreadSearchHit,
    ToolCallRecord,
)
from albert.storage.ports import Row, SqlStorage

DEFAULT_TITLE = "New chat"
MAX_CURSOR_CHARS = 256
MAX_SQL_INT = 2**63 - 1
_CURSOR_SHAPE = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_CURSOR_CHARS}}}")


class NotFound(LookupError):
    """The thread (or message) does not exist for this client."""


class InvalidCursor(ValueError):
    """A cursor this store did not make; the message is the same for every kind of wrong."""

    def __init__(self) -> None:
        super().__init__("invalid cursor")


C = TypeVar("C", bound="_Cursor")
T = TypeVar("T")


class _Cursor(BaseModel):
    """A cursor's fields, sent as a base64url JSON array in field order."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", defer_build=True)

    @classmethod
    def from_array(cls: type[C], value: Any) -> C:
        """The cursor from its decoded JSON; ValueError unless an array of the right length."""
        names = list(cls.model_fields)
        if not isinstance(value, list) or len(value) != len(names):
            raise ValueError("wrong shape")
        return cls.model_validate(dict(zip(names, value, strict=True)))

    def encode(self) -> str:
        """The opaque text handed to the browser."""
        parts = [getattr(self, name) for name in type(self).model_fields]
        return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")


class ThreadCursor(_Cursor):
    """Where a thread listing continues: after this (pinned, updated_at, id), pinned first,
    then newest first. A cursor from before pins were listed first reads as unpinned."""

    updated_at: int = Field(ge=0, le=MAX_SQL_INT)
    thread_id: str = Field(pattern=ID_PATTERN)
    pinned: bool = False

    def bounds(self) -> tuple[int, int, str]:
        """The row value a page continues after."""
        return (int(self.pinned), self.updated_at, self.thread_id)


class MessageCursor(_Cursor):
    """Where a message listing continues: after this seq."""

    seq: int = Field(ge=0, le=MAX_SQL_INT)


def decode_cursor(cursor: str, model: type[C]) -> C:
    """The cursor's fields, or InvalidCursor for anything this store did not make."""
    if not _CURSOR_SHAPE.fullmatch(cursor):
        raise InvalidCursor()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return model.from_array(json.loads(raw))
    except (binascii.Error, ValueError, ValidationError, RecursionError):
        raise InvalidCursor() from None


def clean_title(title: str | None) -> str:
    """A title safe to show: see albert.protocol.display_text; blank means the default."""
    cleaned = clean_label(title or "")
    return cleaned if has_visible_text(cleaned) else DEFAULT_TITLE


class StoredCall(NamedTuple):
    """A tool call of a stored assistant message, as the model's context reads it."""

    id: str
    name: str
    arguments: str


class HistoryEntry(NamedTuple):
    """A stored message as the model's context reads it: only the fields it needs.

    Rows were validated (as `Message`) when written; building a model per message
    again cost ~30 µs each on every turn, more than reading the rows.
    """

    role: str
    content: str
    status: str
    tool_calls: list[StoredCall]
    tool_call_id: str | None
    name: str | None
    # What the model's view of a tool result needs of its meta (albert.chat.history):
    # source, truncated, own_words, total_chars, preface_chars, fence_label; empty for
    # other messages.
    meta: dict[str, Any]


class ThreadStore:
    """CRUD for threads and messages; all ordering decisions live here."""

    def __init__(self, sql: SqlStorage, clock: Clock) -> None:
        self._sql = sql
        self._clock = clock

    def transaction(self, work: Callable[[], T]) -> T:
        """Run `work` (writes of this store and of others on the same storage) atomically."""
        return self._sql.transaction(work)

    # --- threads -------------------------------------------------------------------

    def create_thread(self, thread_id: str, title: str | None) -> Thread:
        """Create a thread; the id is made by the caller."""
        now = self._clock.now_ms()
        title = clean_title(title)
        self._sql.execute(
            "INSERT INTO threads (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
            thread_id,
            title,
            now,
            now,
        )
        return Thread(id=thread_id, title=title, created_at=now, updated_at=now, pinned=False)

    def get_thread(self, thread_id: str) -> Thread:
        """One thread, or NotFound."""
        rows = self._sql.execute(
            "SELECT id, title, created_at, updated_at, pinned FROM threads WHERE id = ?", thread_id
        )
        if not rows:
            raise NotFound(thread_id)
        return Thread(**rows[0])

    def has_thread(self, thread_id: str) -> bool:
        """True when the thread exists."""
        return bool(self._sql.execute("SELECT 1 AS x FROM threads WHERE id = ?", thread_id))

    def list_threads(
        self, limit: int, cursor: str | None = None
    ) -> tuple[list[Thread], str | None]:
        """Pinned first, then newest first (by last update); keyset pagination so pages
        never shift."""
        if cursor:
            after = decode_cursor(cursor, ThreadCursor)
            rows = self._sql.execute(
                f"SELECT id, title, created_at, updated_at, pinned FROM threads "
                f"WHERE {_THREADS_AFTER} ORDER BY {_THREADS_ORDER} LIMIT ?",
                *after.bounds(),
                limit + 1,
            )
        else:
            rows = self._sql.execute(
                f"SELECT id, title, created_at, updated_at, pinned FROM threads "
                f"ORDER BY {_THREADS_ORDER} LIMIT ?",
                limit + 1,
            )
        threads = [Thread(**r) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = threads[-1]
            next_cursor = ThreadCursor(
                updated_at=last.updated_at, thread_id=last.id, pinned=last.pinned
            ).encode()
        return threads, next_cursor

    def title_and_message_thread(self, thread_id: str, message_id: str) -> tuple[str, str | None]:
        """The thread's title, and the thread `message_id` was stored in (None if it was
        not); NotFound when there is no such thread. One statement: every chat message
        asks both."""
        rows = self._sql.execute(_TITLE_AND_MESSAGE_THREAD_SQL, message_id, thread_id)
        if not rows:
            raise NotFound(thread_id)
        return rows[0]["title"], rows[0]["stored_in"]

    def set_title(self, thread_id: str, title: str) -> None:
        """Like `rename_thread` for a thread known to exist, without reading it back."""
        self._sql.execute(
            "UPDATE threads SET title = ?, updated_at = ? WHERE id = ?",
            clean_title(title),
            self._clock.now_ms(),
            thread_id,
        )

    def rename_thread(self, thread_id: str, title: str) -> Thread:
        """Change a thread's title (cleaned as on create)."""
        self.get_thread(thread_id)
        self.set_title(thread_id, title)
        return self.get_thread(thread_id)

    def set_pinned(self, thread_id: str, pinned: bool) -> Thread:
        """Pin a thread (listed first) or unpin it; its `updated_at` stays."""
        self.get_thread(thread_id)
        self._sql.execute("UPDATE threads SET pinned = ? WHERE id = ?", int(pinned), thread_id)
        return self.get_thread(thread_id)

    def search(self, text: str, limit: int = 50) -> list[ThreadSearchHit]:
        """Threads whose title or messages (questions and answers) have every word of
        `text` (the last one as a prefix), pinned first, then newest first; each with a
        snippet of its best matching message."""
        query = fts_query(text)
        if query is None:
            return []
        rows = self._sql.execute(_SEARCH_SQL, query, query, limit)
        return [
            ThreadSearchHit(
                thread=Thread(
                    id=r["id"],
                    title=r["title"],
                    created_at=r["created_at"],
                    updated_at=r["updated_at"],
                    pinned=bool(r["pinned"]),
                ),
                snippet=r["snippet"],
            )
            for r in rows
        ]

    def all_messages(self, thread_id: str) -> list[Message]:
        """Every message of a thread, oldest first (for an export)."""
        self.get_thread(thread_id)
        rows = self._sql.execute(
            "SELECT * FROM messages WHERE thread_id = ? ORDER BY seq", thread_id
        )
        return [_message_from_row(r) for r in rows]

    def set_feedback(self, thread_id: str, turn_id: str, feedback: Feedback | None) -> Message:
        """Store feedback on a turn's answer (None takes it back), in `meta.feedback` of the
        answer's last message; NotFound unless the turn has an answer in this thread."""
        rows = self._sql.execute(
            "SELECT * FROM messages WHERE thread_id = ? AND turn_id = ? AND role = 'assistant' "
            "AND json_extract(nullif(meta, ''), '$.version') IS NULL ORDER BY seq DESC LIMIT 1",
            thread_id,
            turn_id,
        )
        if not rows:
            raise NotFound(turn_id)
        message = _message_from_row(rows[0])
        meta = {k: v for k, v in message.meta.items() if k != "feedback"}
        if feedback is not None:
            meta["feedback"] = feedback.model_dump(exclude_none=True)
        self._set_meta(message, meta)
        return message.model_copy(update={"meta": meta})

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread, its messages and its tool outputs."""
        self.get_thread(thread_id)
        self._sql.execute("DELETE FROM tool_outputs WHERE thread_id = ?", thread_id)
        self._sql.execute("DELETE FROM turn_journal WHERE thread_id = ?", thread_id)
        self._sql.execute(
            "DELETE FROM message_wire WHERE seq IN (SELECT seq FROM messages WHERE thread_id = ?)",
            thread_id,
        )
        self._sql.execute("DELETE FROM messages WHERE thread_id = ?", thread_id)
        self._sql.execute("DELETE FROM threads WHERE id = ?", thread_id)

    def touch(self, thread_id: str) -> None:
        """Mark a thread as just updated, so it sorts first."""
        self._sql.execute(
            "UPDATE threads SET updated_at = MAX(updated_at + 1, ?) WHERE id = ?",
            self._clock.now_ms(),
            thread_id,
        )

    def count_threads(self) -> int:
        """How many threads this client has."""
        return int(self._sql.execute("SELECT COUNT(*) AS n FROM threads")[0]["n"])

    # --- messages ------------------------------------------------------------------

    def message_thread(self, message_id: str) -> str | None:
        """The thread a message id belongs to, if it was stored."""
        rows = self._sql.execute("SELECT thread_id FROM messages WHERE id = ?", message_id)
        return rows[0]["thread_id"] if rows else None

    def turn_ended(self, thread_id: str, turn_id: str, reasons: Sequence[str]) -> bool:
        """True when an assistant message of the turn recorded one of these endings."""
        marks = ", ".join("?" * len(reasons))
        rows = self._sql.execute(
            "SELECT 1 AS x FROM messages WHERE thread_id = ? AND turn_id = ? "
            f"AND role = 'assistant' AND finish_reason IN ({marks}) LIMIT 1",
            thread_id,
            turn_id,
            *reasons,
        )
        return bool(rows)

    def add_message(
        self,
        *,
        message_id: str,
        thread_id: str,
        turn_id: str,
        role: str,
        content: str,
        tool_calls: list[ToolCallRecord] | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
        status: MessageStatus = "complete",
        finish_reason: str | None = None,
        meta: dict[str, Any] | None = None,
        bump: bool = True,
    ) -> Message:
        """Store one message and bump its thread (`bump=False` when the caller sets the
        thread's `updated_at` itself right after, as `set_title` does)."""
        message = Message(
            id=message_id,
            thread_id=thread_id,
            turn_id=turn_id,
            role=role,  # type: ignore[arg-type]
            content=content,
            tool_calls=tool_calls or [],
            tool_call_id=tool_call_id,
            name=name,
            status=status,
            finish_reason=finish_reason,
            meta=meta or {},
            created_at=self._clock.now_ms(),
        )
        calls_json = json.dumps([c.model_dump() for c in tool_calls]) if tool_calls else None
        self._sql.execute(
            "INSERT INTO messages (id, thread_id, turn_id, role, content, tool_calls, "
            "tool_call_id, name, status, finish_reason, meta, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            message_id,
            thread_id,
            turn_id,
            role,
            content,
            calls_json,
            tool_call_id,
            name,
            status,
            finish_reason,
            json.dumps(meta) if meta else None,
            message.created_at,
        )
        store_message_wire(self._sql, message_id, message.model_dump_json())
        if bump:
            self.touch(thread_id)
        return message

    def update_message(
        self,
        message_id: str,
        *,
        content: str,
        status: MessageStatus,
        finish_reason: str | None = None,
        tool_calls: list[ToolCallRecord] | None = None,
        meta: dict[str, Any] | None = None,
        written: Message | None = None,
    ) -> None:
        """Rewrite an assistant message as its stream progresses or ends.

        `written` is the message as `add_message` returned it, when the caller has it: its
        identity (the columns this never changes) is then not read back. A message that is
        gone by now (its thread deleted) stays gone either way: the statements then match
        no row.
        """
        seq: int | None = None
        if written is not None and written.id == message_id:
            identity: Any = written
        else:
            rows = self._sql.execute(_MESSAGE_IDENTITY_SQL, message_id)
            if not rows:
                return
            identity = SimpleNamespace(**rows[0])
            seq = identity.seq
        # The whole message is validated with its new fields before anything is written,
        # and its stored JSON rewritten from it (albert.storage.migrations: message_wire).
        message = Message(
            id=identity.id,
            thread_id=identity.thread_id,
            turn_id=identity.turn_id,
            role=identity.role,
            content=content,
            tool_calls=tool_calls or [],
            tool_call_id=identity.tool_call_id,
            name=identity.name,
            status=status,
            finish_reason=finish_reason,
            meta=meta or {},
            created_at=identity.created_at,
        )
        calls_json = json.dumps([c.model_dump() for c in tool_calls]) if tool_calls else None
        self._sql.execute(
            "UPDATE messages SET content = ?, status = ?, finish_reason = ?, tool_calls = ?, "
            "meta = ? WHERE id = ?",
            content,
            status,
            finish_reason,
            calls_json,
            json.dumps(meta) if meta else None,
            message_id,
        )
        wire = message.model_dump_json()
        if seq is None:
            store_message_wire(self._sql, message_id, wire)
        else:
            self._sql.execute(_STORE_WIRE_BY_SEQ_SQL, seq, wire)

    def last_question(self, thread_id: str) -> str | None:
        """The turn id (the message id) of the thread's last user message, if any."""
        rows = self._sql.execute(
            "SELECT id FROM messages WHERE thread_id = ? AND role = 'user' "
            "ORDER BY seq DESC LIMIT 1",
            thread_id,
        )
        return rows[0]["id"] if rows else None

    def is_question(self, thread_id: str, message_id: str) -> bool:
        """True when `message_id` is a user message of this thread."""
        rows = self._sql.execute(
            "SELECT 1 AS x FROM messages WHERE thread_id = ? AND id = ? AND role = 'user'",
            thread_id,
            message_id,
        )
        return bool(rows)

    def supersede_answer(self, thread_id: str, turn_id: str) -> int:
        """Keep the turn's current answer (its assistant and tool messages) as a previous
        version: each gets `meta.version`, the version's number (1, 2, …), which leaves it
        out of the model's context. Returns that number (0: there was no answer)."""
        rows = self._sql.execute(
            "SELECT * FROM messages WHERE thread_id = ? AND turn_id = ? AND role <> 'user' "
            "ORDER BY seq",
            thread_id,
            turn_id,
        )
        messages = [_message_from_row(r) for r in rows]
        current = [m for m in messages if "version" not in m.meta]
        if not current:
            return 0
        version = 1 + max((int(m.meta["version"]) for m in messages if m not in current), default=0)
        for m in current:
            self._set_meta(m, {**m.meta, "version": version})
        return version

    def _set_meta(self, message: Message, meta: dict[str, Any]) -> None:
        """Rewrite a stored message with new meta, every other field as it is."""
        self.update_message(
            message.id,
            content=message.content,
            status=message.status,
            finish_reason=message.finish_reason,
            tool_calls=list(message.tool_calls),
            meta=meta,
        )

    def delete_from(self, thread_id: str, message_id: str) -> int:
        """Delete a message and every later message of its thread (an edited question and
        what followed it), with their tool outputs and journal entries; how many went."""
        rows = self._sql.execute(
            "SELECT seq FROM messages WHERE thread_id = ? AND id = ?", thread_id, message_id
        )
        if not rows:
            raise NotFound(message_id)
        seq = rows[0]["seq"]
        later = "SELECT {col} FROM messages WHERE thread_id = ? AND seq >= ?"
        self._sql.execute(
            "DELETE FROM tool_outputs WHERE thread_id = ? AND call_id IN ("
            + later.format(col="tool_call_id")
            + " AND role = 'tool')",
            thread_id,
            thread_id,
            seq,
        )
        self._sql.execute(
            "DELETE FROM turn_journal WHERE thread_id = ? AND turn_id IN ("
            + later.format(col="turn_id")
            + ")",
            thread_id,
            thread_id,
            seq,
        )
        self._sql.execute(
            "DELETE FROM message_wire WHERE seq IN (" + later.format(col="seq") + ")",
            thread_id,
            seq,
        )
        count = self._sql.execute(
            "SELECT count(*) AS n FROM messages WHERE thread_id = ? AND seq >= ?", thread_id, seq
        )[0]["n"]
        self._sql.execute("DELETE FROM messages WHERE thread_id = ? AND seq >= ?", thread_id, seq)
        return int(count)

    def list_messages(
        self, thread_id: str, limit: int, cursor: str | None = None
    ) -> tuple[list[Message], str | None]:
        """Oldest first; the cursor continues after the last message returned."""
        self.get_thread(thread_id)
        after = decode_cursor(cursor, MessageCursor).seq if cursor else 0
        rows = self._sql.execute(
            "SELECT * FROM messages WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            thread_id,
            after,
            limit + 1,
        )
        messages = [_message_from_row(r) for r in rows[:limit]]
        next_cursor = (
            MessageCursor(seq=rows[limit - 1]["seq"]).encode() if len(rows) > limit else None
        )
        return messages, next_cursor

    def messages_page_items(
        self, thread_id: str, limit: int, cursor: str | None = None
    ) -> tuple[bytes, int, str | None]:
        """Like `list_messages`, as the JSON the API sends, made by SQLite itself.

        Each message's JSON was made by its model when it was written (message_wire),
        so a page is those texts joined by one statement, in order: nothing is
        validated or escaped again on a read. Returns (the messages' JSON objects
        joined by commas, as UTF-8 bytes: the inside of the array, whose brackets the
        caller adds where it assembles the body, so the page is not copied once more
        for them; how many messages; next cursor).
        """
        after = decode_cursor(cursor, MessageCursor).seq if cursor else 0
        row = self._sql.execute(
            _MESSAGES_PAGE_SQL, thread_id, after, limit + 1, thread_id, after, limit
        )[0]
        next_cursor = (
            MessageCursor(seq=int(row["last_seq"])).encode() if row["available"] > limit else None
        )
        return bytes(row["items"] or b""), int(row["n"]), next_cursor

    def threads_page_json(self, limit: int, cursor: str | None = None) -> tuple[bytes, str | None]:
        """Like `list_threads`, as the JSON array the API sends (see `messages_page_items`)."""
        if cursor:
            after = decode_cursor(cursor, ThreadCursor)
            bounds: tuple[Any, ...] = after.bounds()
            sql = _THREADS_AFTER_PAGE_SQL
        else:
            bounds = ()
            sql = _THREADS_PAGE_SQL
        row = self._sql.execute(sql, *bounds, limit + 1, *bounds, limit)[0]
        page = bytes(row["page"])
        next_cursor = None
        if row["available"] > limit:
            # The page's last thread, read from its tail: inside a JSON string a quote is
            # escaped, so `{"id":` only ever starts an object of the array.
            last = json.loads(page[page.rindex(b'{"id":') : -1])
            next_cursor = ThreadCursor(
                updated_at=int(last["updated_at"]),
                thread_id=str(last["id"]),
                pinned=bool(last["pinned"]),
            ).encode()
        return page, next_cursor

    def turn_messages(self, thread_id: str, turn_id: str) -> list[Message]:
        """The messages of one turn (every run of it), in order."""
        rows = self._sql.execute(
            "SELECT * FROM messages WHERE thread_id = ? AND turn_id = ? ORDER BY seq",
            thread_id,
            turn_id,
        )
        return [_message_from_row(r) for r in rows]

    def history(self, thread_id: str, max_messages: int = 200) -> list[Message]:
        """The newest messages of a thread in order, for the model's context."""
        rows = self._sql.execute(_HISTORY_SQL, thread_id, max_messages)
        return [_message_from_row(r) for r in rows]

    def model_history(self, thread_id: str, max_messages: int = 200) -> list[HistoryEntry]:
        """Like `history`, with only what the model's context reads of each message."""
        rows = self._sql.execute(_MODEL_HISTORY_SQL, thread_id, max_messages)
        return [
            HistoryEntry(
                r["role"],
                r["content"],
                r["status"],
                [StoredCall(c["id"], c["name"], c["arguments"]) for c in json.loads(calls)]
                if (calls := r["tool_calls"])
                else [],
                r["tool_call_id"],
                r["name"],
                {key: r[key] for key in _RESULT_NOTES if r[key] is not None}
                if r["role"] == "tool"
                else {},
            )
            for r in rows
        ]


def _newest_messages_sql(columns: str) -> str:
    # The newest messages of a thread (bound: thread id, how many), oldest first; previous
    # versions of a regenerated answer (meta.version) are not part of the conversation.
    return (
        f"SELECT {columns} FROM "
        "(SELECT * FROM messages WHERE thread_id = ? "
        "AND json_extract(nullif(meta, ''), '$.version') IS NULL "
        "ORDER BY seq DESC LIMIT ?) ORDER BY seq"
    )


_HISTORY_SQL = _newest_messages_sql("*")
# A tool result's meta is read only for the keys the model's view of it needs (not its
# arguments): who wrote it, and our notes (albert.tools.base.ToolResult).
_RESULT_NOTES = ("source", "truncated", "own_words", "total_chars", "preface_chars", "fence_label")
_MODEL_HISTORY_SQL = _newest_messages_sql(
    "role, content, status, tool_calls, tool_call_id, name, "
    + ", ".join(
        f"CASE WHEN role = 'tool' AND meta <> '' THEN json_extract(meta, '$.{key}') END AS {key}"
        for key in _RESULT_NOTES
    )
)


# What is kept of one tool output: a Durable Object's SQLite refuses a value over 2 MB, and
# a character may take 4 bytes; a longer output keeps its head and says so at the end.
MAX_STORED_OUTPUT_CHARS = 400_000


def kept_output(content: str, limit: int = MAX_STORED_OUTPUT_CHARS) -> str:
    """The part of an output that is stored: all of it, or its head and a closing note."""
    if len(content) <= limit:
        return content
    return (
        content[:limit]
        + f"\n[the output was {len(content):,} characters; only the first {limit:,} were kept]"
    )


class ToolOutputs:
    """Tool outputs of one client as the pager reads them (`kept_output`), by call id."""

    def __init__(self, sql: SqlStorage, clock: Clock) -> None:
        self._sql = sql
        self._clock = clock

    def save(self, *, call_id: str, thread_id: str, name: str, content: str) -> None:
        """Keep a call's output (its head and a note when it is over the limit)."""
        self._sql.execute(
            "INSERT INTO tool_outputs (call_id, thread_id, name, content, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            call_id,
            thread_id,
            name,
            kept_output(content),
            self._clock.now_ms(),
        )

    def read(
        self, thread_id: str, call_id: str, offset: int, length: int
    ) -> tuple[str, int] | None:
        """A slice of a stored output and its total length; None if there is no such call."""
        rows = self._sql.execute(
            "SELECT substr(content, ?, ?) AS part, length(content) AS total FROM tool_outputs "
            "WHERE thread_id = ? AND call_id = ? ORDER BY id DESC LIMIT 1",
            offset + 1,
            length,
            thread_id,
            call_id,
        )
        if not rows:
            return None
        return str(rows[0]["part"]), int(rows[0]["total"])


# --- JSON straight from SQLite -------------------------------------------------------
# One json_object per row, its keys in the model's field order; columns that hold JSON
# text are embedded as JSON, empty ones as the model's default. A field added to the
# model without a column here fails the statement (and tests/albert/storage).
_JSON_COLUMNS = {
    "pinned": "json(CASE WHEN {t}pinned THEN 'true' ELSE 'false' END)",
    "tool_calls": "json(CASE WHEN {t}tool_calls IS NULL OR {t}tool_calls = '' THEN '[]' "
    "ELSE {t}tool_calls END)",
    "meta": "json(CASE WHEN {t}meta IS NULL OR {t}meta = '' THEN '{{}}' ELSE {t}meta END)",
}


def _json_object_sql(model: type[BaseModel], table: str = "") -> str:
    parts = [
        f"'{name}', {_JSON_COLUMNS.get(name, '{t}' + name).format(t=table)}"
        for name in model.model_fields
    ]
    return f"json_object({', '.join(parts)})"


# The aggregate keeps the order of the sub-select it reads (ORDER BY ... LIMIT there);
# `available` counts up to limit + 1 rows to tell whether a next page exists. The page
# comes out as a BLOB: its UTF-8 bytes go to the response as they are, never decoded
# into a string and encoded again (on Cloudflare, a string would also cross into Python
# as UTF-16); nothing is concatenated to it here (`'[' || ... || ']'` copied the whole
# page twice more). The page is driven by the messages index, so only stored JSON of a
# message that exists is sent; a message without it (none is: every write and the
# migration store it) would still be sent, made from its columns.
_MESSAGES_PAGE_SQL = (
    "SELECT CAST(group_concat(wire, ',') AS BLOB) AS items, "
    "count(*) AS n, max(seq) AS last_seq, "
    "(SELECT count(*) FROM (SELECT 1 FROM messages WHERE thread_id = ? AND seq > ? "
    "LIMIT ?)) AS available "
    "FROM (SELECT m.seq AS seq, coalesce(w.wire, "
    + _json_object_sql(Message, "m.")
    + ") AS wire FROM messages AS m LEFT JOIN message_wire AS w ON w.seq = m.seq "
    "WHERE m.thread_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?)"
)
# A message's JSON, made by its model, kept (or replaced) for the message with this id.
_STORE_WIRE_SQL = (
    "INSERT INTO message_wire (seq, wire) SELECT seq, ? FROM messages WHERE id = ? "
    "ON CONFLICT (seq) DO UPDATE SET wire = excluded.wire"
)


_TITLE_AND_MESSAGE_THREAD_SQL = (
    "SELECT title, (SELECT thread_id FROM messages WHERE id = ?) AS stored_in "
    "FROM threads WHERE id = ?"
)
# What an update keeps of a message: it is rebuilt from these and the new fields.
_MESSAGE_IDENTITY_SQL = (
    "SELECT seq, id, thread_id, turn_id, role, tool_call_id, name, created_at "
    "FROM messages WHERE id = ?"
)
_STORE_WIRE_BY_SEQ_SQL = (
    "INSERT INTO message_wire (seq, wire) VALUES (?, ?) "
    "ON CONFLICT (seq) DO UPDATE SET wire = excluded.wire"
)


# The thread list's order, and where a page after a cursor starts (index
# threads_by_pin_and_update).
_THREADS_ORDER = "pinned DESC, updated_at DESC, id DESC"
_THREADS_AFTER = "(pinned, updated_at, id) < (?, ?, ?)"


def _threads_page_sql(where: str) -> str:
    return (
        "SELECT CAST(coalesce(json_group_array("
        + _json_object_sql(Thread)
        + "), '[]') AS BLOB) AS page, "
        f"(SELECT count(*) FROM (SELECT 1 FROM threads {where} LIMIT ?)) AS available "
        f"FROM (SELECT * FROM threads {where} ORDER BY {_THREADS_ORDER} LIMIT ?)"
    )


_THREADS_PAGE_SQL = _threads_page_sql("")
_THREADS_AFTER_PAGE_SQL = _threads_page_sql(f"WHERE {_THREADS_AFTER}")


# Matching threads by title or message, each with its best message snippet (bound: the
# FTS query twice, the limit). bm25 ranks the message hits; a title-only hit has no snippet.
_SEARCH_SQL = (
    "WITH hits AS ("
    "SELECT m.thread_id AS thread_id, "
    "snippet(message_fts, 0, '[', ']', '…', 12) AS snippet, bm25(message_fts) AS rank "
    "FROM message_fts JOIN messages AS m ON m.seq = message_fts.rowid "
    "WHERE message_fts MATCH ? "
    "AND json_extract(nullif(m.meta, ''), '$.version') IS NULL "
    "UNION ALL "
    "SELECT t.id, NULL, -1e9 FROM thread_fts JOIN threads AS t ON t.rowid = thread_fts.rowid "
    "WHERE thread_fts MATCH ?), "
    "best AS (SELECT thread_id, snippet, min(rank) AS rank, "
    "(SELECT h2.snippet FROM hits AS h2 WHERE h2.thread_id = hits.thread_id "
    "AND h2.snippet IS NOT NULL ORDER BY h2.rank LIMIT 1) AS best_snippet "
    "FROM hits GROUP BY thread_id) "
    "SELECT t.id, t.title, t.created_at, t.updated_at, t.pinned, best.best_snippet AS snippet "
    "FROM best JOIN threads AS t ON t.id = best.thread_id "
    "ORDER BY t.pinned DESC, t.updated_at DESC, t.id DESC LIMIT ?"
)
_FTS_WORD = re.compile(r"\w+", re.UNICODE)
MAX_SEARCH_WORDS = 12


def fts_query(text: str) -> str | None:
    """A user's search as an FTS5 query: every word must match, the last as a prefix (so
    results come while typing); each word quoted, so no FTS syntax gets through. None when
    the text has no word."""
    words = _FTS_WORD.findall(text)[:MAX_SEARCH_WORDS]
    if not words:
        return None
    quoted = [f'"{w}"' for w in words]
    quoted[-1] += "*"
    return " ".join(quoted)


def store_message_wire(sql: SqlStorage, message_id: str, wire: str) -> None:
    """Keep (or replace) the JSON of the stored message with this id."""
    sql.execute(_STORE_WIRE_SQL, wire, message_id)


def message_wire_of(row: Row) -> str:
    """The wire JSON of a message row written before (its columns were validated then)."""
    return _message_from_row(row).model_dump_json()


def _message_from_row(row: Row) -> Message:
    # Rows were validated when written (add_message builds the model): not again on read.
    calls = json.loads(row["tool_calls"]) if row.get("tool_calls") else []
    return Message.model_construct(
        id=row["id"],
        thread_id=row["thread_id"],
        turn_id=row["turn_id"],
        role=row["role"],
        content=row["content"],
        tool_calls=[ToolCallRecord.model_construct(**c) for c in calls],
        tool_call_id=row.get("tool_call_id"),
        name=row.get("name"),
        status=row["status"],
        finish_reason=row.get("finish_reason"),
        meta=json.loads(row["meta"]) if row.get("meta") else {},
        created_at=row["created_at"],
    )
