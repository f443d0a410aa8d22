"""The bucket one limiter object keeps: one token bucket per Durable Object, in its SQLite.

One object per key (`session-ip:203.0.113.7`, `model:acme`), so every request for a
key meets the same bucket, strongly consistent and in one place the world over;
the object handles its requests one at a time, so a take is never lost to a race.
The bucket is stored, so the count survives the object being evicted.

Wire: POST with a TakeRequest body; the answer is a TakeResult.
"""

from __future__ import annotations

from albert.clock import Clock
from albert.limits.shared import TakeRequest, TakeResult
from albert.limits.token_bucket import TokenBucket
from albert.storage.ports import SqlStorage
from albert.web import BadRequest, HttpRequest, HttpResponse, parse_body


class KeyBucket:
    """The bucket of this object's key, and the takes it answers."""

    def __init__(self, sql: SqlStorage, clock: Clock) -> None:
        self._sql = sql
        self._clock = clock
        sql.execute(
            "CREATE TABLE IF NOT EXISTS bucket "
            "(id INTEGER PRIMARY KEY CHECK (id = 1), tokens REAL NOT NULL, updated_ms INTEGER)"
        )

    def take(self, request: TakeRequest) -> TakeResult:
        """Spend one token of this key's bucket."""
        now = self._clock.now_ms()
        rows = self._sql.execute("SELECT tokens, updated_ms FROM bucket WHERE id = 1")
        bucket = (
            TokenBucket(tokens=float(rows[0]["tokens"]), updated_ms=int(rows[0]["updated_ms"]))
            if rows
            else TokenBucket.full(request.allowed, now)
        )
        wait = bucket.take(request.allowed, request.window_seconds, now)
        self._sql.execute(
            "INSERT INTO bucket (id, tokens, updated_ms) VALUES (1, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET tokens = excluded.tokens, "
            "updated_ms = excluded.updated_ms",
            bucket.tokens,
            bucket.updated_ms,
        )
        return TakeResult(wait_seconds=wait)

    def handle(self, request: HttpRequest) -> HttpResponse:
        """POST a TakeRequest; anything else is refused."""
        if request.method != "POST":
            return HttpResponse.error(405, "method_not_allowed", "use POST")
        try:
            body = parse_body(request, TakeRequest, 1_000)
        except BadRequest as exc:
            return HttpResponse.error(exc.status, exc.error, exc.detail)
        return HttpResponse.json(self.take(body))
