"""Finding a client's threads by their title and by what was asked and answered in them.

Questions and answers are in an FTS5 index (`messages_fts`, kept by triggers: the threads
migrations); titles are matched as substrings. A query is read as words, each matched as
a whole word (the last also as a prefix, for search as you type); nothing of it reaches
FTS5's query syntax, so no query can be an error or reach another table.
"""

from __future__ import annotations

import re

from albert.protocol.http import Thread, ThreadHit
from albert.storage.ports import SqlStorage

MAX_WORDS = 8
_WORD = re.compile(r"\w+", re.UNICODE)

_SEARCH_SQL = """
SELECT t.id, t.title, t.created_at, t.updated_at, t.pinned,
  (SELECT snippet(messages_fts, 0, '', '', '…', 12) FROM messages_fts
     JOIN messages AS m ON m.seq = messages_fts.rowid
     WHERE messages_fts MATCH ?1 AND m.thread_id = t.id ORDER BY m.seq DESC LIMIT 1) AS snippet
FROM threads AS t
WHERE t.title LIKE ?2 ESCAPE '\\'
   OR t.id IN (SELECT m.thread_id FROM messages_fts
                 JOIN messages AS m ON m.seq = messages_fts.rowid
                 WHERE messages_fts MATCH ?1)
ORDER BY t.pinned DESC, t.updated_at DESC, t.id DESC
LIMIT ?3
"""


def match_expression(query: str) -> str | None:
    """The FTS5 expression for a query: its words quoted, all required, the last a prefix."""
    words = _WORD.findall(query)[:MAX_WORDS]
    if not words:
        return None
    quoted = [f'"{w}"' for w in words]
    quoted[-1] += "*"
    return " ".join(quoted)


def _like(query: str) -> str:
    escaped = re.sub(r"([\\%_])", r"\\\1", " ".join(query.split()))
    return f"%{escaped}%"


def search_threads(sql: SqlStorage, query: str, limit: int) -> list[ThreadHit]:
    """Threads whose title holds the query or whose messages hold its words; pinned first,
    then the most recently updated."""
    expression = match_expression(query)
    if expression is None:
        return []
    rows = sql.execute(_SEARCH_SQL, expression, _like(query), limit)
    return [
        ThreadHit(
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
