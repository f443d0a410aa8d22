"""The analytics service: typed events in, batches out after the response.

Nothing here runs on the request path beyond appending to a list. Sinks are
built on the first event, batches leave through `defer` (the platform's
`waitUntil`), and with neither a key nor a log file the service does nothing
at all: no sink, no task, no network, and neither the catalog nor the sinks'
module is imported (callers check `enabled` before building an event).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from albert.auth.tokens import CLIENT_ID_PATTERN
from albert.clock import Clock, SystemClock
from albert.settings import Settings
from albert.storage.meta import CLIENT_ID, ObjectMeta
from albert.storage.migrations import Migrations, migrate
from albert.storage.ports import SqlStorage

if TYPE_CHECKING:
    from albert.analytics.event_catalog import CatalogEvent
    from albert.analytics.sinks import Sink, TrackedEvent

log = logging.getLogger(__name__)

Defer = Callable[[Coroutine[Any, Any, None]], Any]
MAX_BATCH = 100
MAX_BUFFER = 2_000


_CLIENT_ID = re.compile(CLIENT_ID_PATTERN)

# The analytics namespace of the object's migrations. The client id lived in a table
# of its own; it is the object's identity, so it moves to object_meta.
ANALYTICS_SCHEMA = Migrations(
    "analytics",
    "analytics_schema_migrations",
    [
        (
            "CREATE TABLE IF NOT EXISTS analytics_identity "
            "(id INTEGER PRIMARY KEY CHECK (id = 1), client_id TEXT NOT NULL)",
            f"INSERT OR IGNORE INTO object_meta (key, value) "
            f"SELECT '{CLIENT_ID}', client_id FROM analytics_identity WHERE id = 1",
            "DROP TABLE analytics_identity",
        ),
    ],
)


class BackgroundDefer:
    """`defer` for runtimes without waitUntil: a task the loop keeps a reference to."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


class AnalyticsService:
    """Tracks catalog events for one client and ships them in batches, later."""

    def __init__(
        self,
        *,
        api_key: str = "",
        log_path: str = "",
        http: httpx.AsyncClient | None = None,
        defer: Defer | None = None,
        clock: Clock | None = None,
        sql: SqlStorage | None = None,
        amplitude_url: str | None = None,
    ) -> None:
        self._api_key = api_key
        self._log_path = log_path
        self._http = http
        self._defer: Defer = defer or BackgroundDefer()
        self._clock = clock or SystemClock()
        self._sql = sql
        self._meta: ObjectMeta | None = None
        self._amplitude_url = amplitude_url
        self._sinks: list[Sink] | None = None
        self._buffer: list[TrackedEvent] = []
        self._flush_pending = False
        self._client_id: str | None = None
        self._identity_loaded = False

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        http: httpx.AsyncClient | None = None,
        defer: Defer | None = None,
        clock: Clock | None = None,
        sql: SqlStorage | None = None,
    ) -> AnalyticsService:
        """The service the settings ask for (cheap: nothing is opened until an event)."""
        return cls(
            api_key=settings.analytics_api_key.get_secret_value(),
            log_path=settings.analytics_log_path,
            http=http,
            defer=defer,
            clock=clock,
            sql=sql,
        )

    @property
    def enabled(self) -> bool:
        """True when some sink is configured."""
        return bool(self._api_key or self._log_path)

    # --- identity --------------------------------------------------------------------

    def identify(self, client_id: str) -> None:
        """Remember whose object this is (the verified client id of a request)."""
        if not self.enabled:
            return
        if not _CLIENT_ID.match(client_id) or client_id == self.client_id:
            return
        self._client_id = client_id
        meta = self._object_meta()
        if meta is not None:
            # Persisted so events of a woken object (a socket message, no request yet) keep it.
            meta.set(CLIENT_ID, client_id)

    @property
    def client_id(self) -> str | None:
        """The client this object serves, if known."""
        if self._client_id is None and not self._identity_loaded:
            self._identity_loaded = True
            meta = self._object_meta()
            self._client_id = meta.get(CLIENT_ID) if meta is not None else None
        return self._client_id

    def _object_meta(self) -> ObjectMeta | None:
        # Opened on first use: an object without analytics never touches these tables.
        if self._meta is None and self._sql is not None:
            self._meta = ObjectMeta(self._sql)
            migrate(self._sql, ANALYTICS_SCHEMA)
        return self._meta

    # --- tracking --------------------------------------------------------------------

    def track(
        self, event: CatalogEvent, *, time_ms: int | None = None, insert_id: str | None = None
    ) -> None:
        """Queue one event; it leaves after the current response, with its neighbours."""
        if not self.enabled:
            return
        from albert.analytics.sinks import TrackedEvent

        client_id = self.client_id
        self._buffer.append(
            TrackedEvent(
                event_type=event.name,
                side=event.side,
                user_id=client_id,
                # Amplitude needs a user or a device; unidentified objects share one device id.
                device_id=None if client_id else "albert-server",
                time=time_ms if time_ms is not None else self._clock.now_ms(),
                insert_id=insert_id or uuid.uuid4().hex,
                event_properties=event.model_dump(mode="json"),
            )
        )
        if len(self._buffer) > MAX_BUFFER:
            dropped = len(self._buffer) - MAX_BUFFER
            del self._buffer[:dropped]
            log.warning("analytics: buffer full, dropped %d oldest events", dropped)
        if not self._flush_pending:
            self._flush_pending = True
            self._defer(self._deferred_flush())

    async def _deferred_flush(self) -> None:
        # One turn of the loop lets the rest of the current handler join this batch.
        await asyncio.sleep(0)
        await self.flush()

    async def flush(self) -> None:
        """Send everything queued now, in batches of at most MAX_BATCH."""
        self._flush_pending = False
        sinks = self._get_sinks()
        while self._buffer:
            batch = self._buffer[:MAX_BATCH]
            del self._buffer[:MAX_BATCH]
            for sink in sinks:
                try:
                    await sink.send(batch)
                except Exception:
                    log.exception("analytics sink %s failed", type(sink).__name__)

    def _get_sinks(self) -> list[Sink]:
        if self._sinks is None:
            from albert.analytics.sinks import AMPLITUDE_URL, AmplitudeSink, JsonLinesSink

            sinks: list[Sink] = []
            if self._api_key:
                if self._http is None:
                    # Only when no shared client was given; kept for the object's lifetime.
                    self._http = httpx.AsyncClient()
                url = AMPLITUDE_URL if self._amplitude_url is None else self._amplitude_url
                sinks.append(AmplitudeSink(self._api_key, self._http, url))
            if self._log_path:
                sinks.append(JsonLinesSink(Path(self._log_path)))
            self._sinks = sinks
        return self._sinks

    @property
    def pending(self) -> int:
        """Events queued and not yet sent."""
        return len(self._buffer)
