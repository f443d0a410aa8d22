"""The object's thread HTTP API: list, create, load, rename, delete, export."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Awaitable, Callable

from albert.analytics.service import AnalyticsService
from albert.protocol.display_text import clean_label, has_visible_text
from albert.protocol.http import ThreadCreate, ThreadUpdate
from albert.settings import Settings
from albert.storage.threads import InvalidCursor, NotFound, ThreadStore
from albert.web import BadRequest, HttpRequest, HttpResponse, int_param, parse_body

_THREAD_PATH = re.compile(r"^/api/threads/(?P<id>[A-Za-z0-9_-]{1,64})$")
_EXPORT_PATH = re.compile(r"^/api/threads/(?P<id>[A-Za-z0-9_-]{1,64})/export$")
EXPORT_FORMATS = {"markdown": ("md", "text/markdown; charset=utf-8"), "json": ("json", None)}
MAX_BODY_BYTES = 16_000
MAX_QUERY_CHARS = 200


def new_thread_id() -> str:
    """A fresh, unguessable thread id."""
    return "t_" + secrets.token_urlsafe(12)


class ThreadsApi:
    """Routes /api/threads requests to the thread store."""

    def __init__(
        self,
        store: ThreadStore,
        settings: Settings,
        analytics: AnalyticsService | None = None,
        cancel_turn: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self._store = store
        self._settings = settings
        self._analytics = analytics or AnalyticsService()
        self._cancel_turn = cancel_turn

    def handles(self, path: str) -> bool:
        """True for the paths this API owns."""
        return path == "/api/threads" or path.startswith("/api/threads/")

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Answer one request; every failure is a JSON error with a clear detail."""
        try:
            match = _THREAD_PATH.match(request.path)
            if match and request.method == "DELETE":
                return await self._delete(match["id"])
            return self._route(request)
        except BadRequest as exc:
            return HttpResponse.error(exc.status, exc.error, exc.detail)
        except NotFound:
            return HttpResponse.error(404, "not_found", "no such thread")
        except InvalidCursor:
            return HttpResponse.error(400, "invalid_cursor", "invalid cursor")

    def _route(self, request: HttpRequest) -> HttpResponse:
        if request.path == "/api/threads":
            return self._threads(request)
        if request.path == "/api/threads/search":
            return self._search(request)
        exported = _EXPORT_PATH.match(request.path)
        if exported:
            return self._export(request, exported["id"])
        match = _THREAD_PATH.match(request.path)
        if not match:
            return HttpResponse.error(404, "not_found", "no such route")
        return self._thread(request, match["id"])

    def _threads(self, request: HttpRequest) -> HttpResponse:
        """/api/threads: a page of threads, or a new one."""
        if request.method == "GET":
            limit = int_param(request, "limit", 50, low=1, high=self._settings.max_page_size)
            threads, cursor = self._store.threads_page_json(limit, request.query.get("cursor"))
            # The ThreadPage shape, its array serialised by SQLite (rows validated on write).
            return HttpResponse.json_bytes(
                b'{"threads":', threads, b',"next_cursor":', json.dumps(cursor).encode(), b"}"
            )
        if request.method == "POST":
            body = parse_body(request, ThreadCreate, MAX_BODY_BYTES)
            if self._store.count_threads() >= self._settings.max_threads_per_client:
                raise BadRequest(
                    f"at most {self._settings.max_threads_per_client} threads per client; "
                    "delete some first",
                    status=409,
                    error="too_many_threads",
                )
            title = self._title(body.title) if body.title is not None else None
            thread = self._store.create_thread(new_thread_id(), title)
            if self._analytics.enabled:
                from albert.analytics.event_catalog import ThreadCreated

                self._analytics.track(ThreadCreated(thread_id=thread.id))
            return HttpResponse.json(thread, status=201)
        return HttpResponse.error(405, "method_not_allowed", "use GET or POST")

    def _thread(self, request: HttpRequest, thread_id: str) -> HttpResponse:
        """/api/threads/{id}: load a page of its messages, rename it, delete it."""
        if request.method == "GET":
            limit = int_param(request, "limit", 100, low=1, high=self._settings.max_page_size)
            thread = self._store.get_thread(thread_id)
            messages, count, cursor = self._store.messages_page_items(
                thread_id, limit, request.query.get("cursor")
            )
            if self._analytics.enabled:
                from albert.analytics.event_catalog import ThreadLoaded

                self._analytics.track(ThreadLoaded(thread_id=thread_id, messages=count))
            # The ThreadDetail shape; its messages are the JSON each one stored when written.
            return HttpResponse.json_bytes(
                b'{"thread":',
                thread.model_dump_json().encode(),
                b',"messages":[',
                messages,
                b'],"next_cursor":',
                json.dumps(cursor).encode(),
                b"}",
            )
        if request.method == "PATCH":
            body = parse_body(request, ThreadUpdate, MAX_BODY_BYTES)
            if body.title is None and body.pinned is None:
                raise BadRequest("give a title, pinned, or both", status=422, error="invalid_body")
            if body.pinned is not None:
                self._store.pin_thread(thread_id, body.pinned)
            if body.title is not None:
                return HttpResponse.json(
                    self._store.rename_thread(thread_id, self._title(body.title))
                )
            return HttpResponse.json(self._store.get_thread(thread_id))
        return HttpResponse.error(405, "method_not_allowed", "use GET, PATCH or DELETE")

    def _search(self, request: HttpRequest) -> HttpResponse:
        """/api/threads/search?q=…: threads by title and by their questions and answers."""
        if request.method != "GET":
            return HttpResponse.error(405, "method_not_allowed", "use GET")
        query = request.query.get("q", "")
        if not 1 <= len(query) <= MAX_QUERY_CHARS:
            raise BadRequest(
                f"q must be 1 to {MAX_QUERY_CHARS} characters", status=422, error="invalid_query"
            )
        limit = int_param(request, "limit", 20, low=1, high=self._settings.max_page_size)
        from albert.protocol.http import ThreadSearchResult
        from albert.storage.thread_search import search_threads

        hits = search_threads(self._store.sql_storage, query, limit)
        return HttpResponse.json(ThreadSearchResult(threads=hits))

    def _export(self, request: HttpRequest, thread_id: str) -> HttpResponse:
        """/api/threads/{id}/export?format=markdown|json: the whole thread as a download."""
        if request.method != "GET":
            return HttpResponse.error(405, "method_not_allowed", "use GET")
        fmt = request.query.get("format", "markdown")
        if fmt not in EXPORT_FORMATS:
            raise BadRequest("format must be markdown or json", status=422, error="invalid_query")
        from albert.chat import thread_export

        thread = self._store.get_thread(thread_id)
        messages = list(thread_export.all_messages(self._store, thread_id))
        extension, kind = EXPORT_FORMATS[fmt]
        name = thread_export.filename(thread, extension)
        disposition = {"content-disposition": f'attachment; filename="{name}"'}
        if fmt == "json":
            body = thread_export.as_json(thread, messages).encode()
            return HttpResponse(
                status=200, body=body, headers={"content-type": "application/json", **disposition}
            )
        return HttpResponse(
            status=200,
            body=thread_export.as_markdown(thread, messages).encode(),
            headers={"content-type": str(kind), **disposition},
        )

    async def _delete(self, thread_id: str) -> HttpResponse:
        """Delete a thread; a turn running in it is cancelled first (stored as cancelled,
        its `done` sent), so nothing writes into the thread after it is gone."""
        if self._cancel_turn is not None:
            await self._cancel_turn(thread_id)
        self._store.delete_thread(thread_id)
        return HttpResponse(status=204)

    def _title(self, title: str) -> str:
        # Control, bidi and other invisible characters are dropped before the checks.
        title = clean_label(title)
        if not has_visible_text(title):
            raise BadRequest("title must not be blank", status=422, error="invalid_body")
        if len(title) > self._settings.max_title_chars:
            raise BadRequest(
                f"title longer than {self._settings.max_title_chars} characters",
                status=422,
                error="invalid_body",
            )
        return title
