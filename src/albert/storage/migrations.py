"""Schema migrations of an object's SQLite: one runner, one migration list per part.

Each part of the object owns its tables and their migration list, its namespace:
threads and messages (`THREADS`, here), MCP server configs (`albert.mcp.configs`),
analytics (`albert.analytics.service`). The runner applies, in order, every
migration a namespace has not recorded yet, and records it in that namespace's own
table (the names the first deployments used, so nothing ever runs twice). Lists
are append-only: a deployed object has applied every earlier entry.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from albert.storage.ports import SqlStorage

Migration = Sequence[str]

_TABLE_NAME = re.compile(r"^[a-z_]{1,64}$")


class Migrations:
    """One namespace's migrations, and the table that records which were applied."""

    # A plain class: a dataclass costs several times more to make at import.
    __slots__ = ("namespace", "record_table", "steps")

    def __init__(self, namespace: str, record_table: str, steps: Sequence[Migration]) -> None:
        if not _TABLE_NAME.match(record_table):
            raise ValueError(f"not a table name: {record_table!r}")
        self.namespace = namespace
        self.record_table = record_table
        self.steps = steps


# A message's JSON as the API sends it (albert.protocol.http.Message, in its field order),
# kept in its own table when the message is written, so a page is read by joining stored
# text instead of escaping every message again on every load. The messages table itself
# is unchanged (a read of its columns costs what it did). New rows get the model's own
# serialisation (albert.storage.threads); rows written before this step get the very
# text the page statement made from their columns until then (a JSON column SQLite
# cannot parse, which failed that statement, becomes the field's default rather than
# failing the migration). This text is frozen with the step: a change to Message's
# fields needs a step that rewrites message_wire (tests/albert/storage compare the two).
MESSAGE_WIRE_BACKFILL = (
    "json_object('id', id, 'thread_id', thread_id, 'turn_id', turn_id, 'role', role, "
    "'content', content, 'tool_calls', json(CASE WHEN tool_calls IS NULL OR tool_calls = '' "
    "OR NOT json_valid(tool_calls) THEN '[]' ELSE tool_calls END), "
    "'tool_call_id', tool_call_id, 'name', name, 'status', status, "
    "'finish_reason', finish_reason, 'meta', json(CASE WHEN meta IS NULL OR meta = '' "
    "OR NOT json_valid(meta) THEN '{}' ELSE meta END), 'created_at', created_at)"
)

# Words of titles and messages for search: Unicode-aware, accents folded, English stems
# (a search for "vault" finds "vaults").
SEARCH_TOKENIZER = "porter unicode61 remove_diacritics 2"

# The threads namespace: threads, messages, tool outputs and the object's own facts.
MIGRATIONS: list[Migration] = [
    (
        """CREATE TABLE IF NOT EXISTS threads (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS threads_by_update ON threads (updated_at DESC, id DESC)",
        """CREATE TABLE IF NOT EXISTS messages (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            turn_id TEXT NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            tool_calls TEXT,
            tool_call_id TEXT,
            name TEXT,
            status TEXT NOT NULL,
            finish_reason TEXT,
            meta TEXT,
            created_at INTEGER NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS messages_by_thread ON messages (thread_id, seq)",
    ),
    (
        # The whole output of every tool call, before the cut the model sees; the model
        # pages through it with read_tool_result.
        # Call ids repeat across turns with some gateways ("call_0"): the newest wins a lookup.
        """CREATE TABLE IF NOT EXISTS tool_outputs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            call_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            name TEXT NOT NULL,
            content TEXT NOT NULL,
            created_at INTEGER NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS tool_outputs_by_call ON tool_outputs (thread_id, call_id)",
    ),
    (
        # Facts about the object itself (e.g. its tenant), needed before any request
        # arrives again, such as when a hibernated socket wakes it.
        "CREATE TABLE IF NOT EXISTS object_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    (
        # Turns that started and have not stored their outcome yet, with the text of the
        # running step: what a restart needs to end a turn it cut off
        # (albert.chat.interrupted_turns).
        """CREATE TABLE IF NOT EXISTS turn_journal (
            turn_id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL,
            run TEXT NOT NULL,
            state TEXT NOT NULL,
            step INTEGER NOT NULL DEFAULT 0,
            partial TEXT NOT NULL DEFAULT '',
            started_at INTEGER NOT NULL,
            ended_at INTEGER
        )""",
    ),
    (
        # Deleting a message deletes its JSON (and a read joins from messages, so JSON
        # without a message is never sent). Both statements are safe to run again.
        """CREATE TABLE IF NOT EXISTS message_wire (
            seq INTEGER PRIMARY KEY REFERENCES messages(seq) ON DELETE CASCADE,
            wire TEXT NOT NULL
        )""",
        f"INSERT INTO message_wire (seq, wire) SELECT seq, {MESSAGE_WIRE_BACKFILL} "
        "FROM messages WHERE seq NOT IN (SELECT seq FROM message_wire)",
    ),
    (
        # Pinned threads (the list shows them first), and full-text search over thread
        # titles and the words of questions and answers (not tool results): two FTS5
        # tables over the rows themselves (external content), kept by triggers, so every
        # write path (including a claim's import) indexes what it writes.
        "ALTER TABLE threads ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS thread_fts USING fts5(title, content='threads', "
        f"tokenize='{SEARCH_TOKENIZER}')",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS message_fts USING fts5(content, "
        f"content='messages', content_rowid='seq', tokenize='{SEARCH_TOKENIZER}')",
        "CREATE TRIGGER IF NOT EXISTS threads_fts_insert AFTER INSERT ON threads BEGIN "
        "INSERT INTO thread_fts (rowid, title) VALUES (new.rowid, new.title); END",
        "CREATE TRIGGER IF NOT EXISTS threads_fts_delete AFTER DELETE ON threads BEGIN "
        "INSERT INTO thread_fts (thread_fts, rowid, title) "
        "VALUES ('delete', old.rowid, old.title); "
        "END",
        "CREATE TRIGGER IF NOT EXISTS threads_fts_update AFTER UPDATE OF title ON threads BEGIN "
        "INSERT INTO thread_fts (thread_fts, rowid, title) "
        "VALUES ('delete', old.rowid, old.title); "
        "INSERT INTO thread_fts (rowid, title) VALUES (new.rowid, new.title); END",
        "CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages "
        "WHEN new.role <> 'tool' BEGIN "
        "INSERT INTO message_fts (rowid, content) VALUES (new.seq, new.content); END",
        "CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages "
        "WHEN old.role <> 'tool' BEGIN "
        "INSERT INTO message_fts (message_fts, rowid, content) "
        "VALUES ('delete', old.seq, old.content); END",
        "CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE OF content ON messages "
        "WHEN old.role <> 'tool' BEGIN "
        "INSERT INTO message_fts (message_fts, rowid, content) "
        "VALUES ('delete', old.seq, old.content); "
        "INSERT INTO message_fts (rowid, content) VALUES (new.seq, new.content); END",
        "INSERT INTO thread_fts (rowid, title) SELECT rowid, title FROM threads",
        "INSERT INTO message_fts (rowid, content) SELECT seq, content FROM messages "
        "WHERE role <> 'tool'",
    ),
    # The list is pinned threads first, then newest first: its pages walk this index.
    (
        "CREATE INDEX IF NOT EXISTS threads_by_pin_and_update "
        "ON threads (pinned DESC, updated_at DESC, id DESC)",
    ),
]

THREADS = Migrations("threads", "schema_migrations", MIGRATIONS)


def migrate(sql: SqlStorage, migrations: Migrations) -> int:
    """Apply a namespace's pending migrations; returns its schema version now in force."""
    table = migrations.record_table
    sql.execute(
        f"CREATE TABLE IF NOT EXISTS {table} "
        "(version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"
    )
    rows = sql.execute(f"SELECT MAX(version) AS v FROM {table}")
    current = int(rows[0]["v"] or 0) if rows else 0
    for version, statements in enumerate(migrations.steps, start=1):
        if version <= current:
            continue
        for statement in statements:
            sql.execute(statement)
        sql.execute(
            f"INSERT INTO {table} (version, applied_at) "
            "VALUES (?, CAST(strftime('%s','now') AS INTEGER))",
            version,
        )
        current = version
    return current
