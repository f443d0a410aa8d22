"""The object's thread HTTP API: list, search, create, load, rename, pin, export, delete, and
feedback on an answer."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Awaitable, Callable

from albert.analytics.service import AnalyticsService
from albert.chat.export import export_json, export_markdown
from albert.clock import Clock, SystemClock
from albert.protocol.display_text import clean_label, has_visible_text
from albert.protocol.http import (
    Feedback,
    FeedbackBody,
    FeedbackStored,
    ThreadCreate,
    ThreadSearchResults,
    ThreadUpdate,
)
from albert.settings import Settings
from albert.storage.threads import InvalidCursor, NotFound, ThreadStore
from albert.web import BadRequest, HttpRequest, HttpResponse, int_param, parse_body

_THREAD_PATH = re.compile(r"^/api/threads/(?P<id>[A-Za-z0-9_-]{1,64})$")
_EXPORT_PATH = re.compile(r"^/api/threads/(?P<id>[A-Za-z0-9_-]{1,64})/export$")
_FEEDBACK_PATH = re.compile(
    r"^/api/threads/(?P<id>[A-Za-z0-9_-]{1,64})/turns/(?P<turn>[A-Za-z0-9_-]{1,64})/feedback$"
)
MAX_SEARCH_CHARS = 200
MAX_BODY_BYTES = 16_000


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
        clock: Clock | None = None,
    ) -> None:
        self._clock = clock or SystemClock()
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
        match = _THREAD_PATH.match(request.path)
        if match:
            return self._thread(request, match["id"])
        match = _EXPORT_PATH.match(request.path)
        if match:
            return self._export(request, match["id"])
        match = _FEEDBACK_PATH.match(request.path)
        if match:
            return self._feedback(request, match["id"], match["turn"])
        return HttpResponse.error(404, "not_found", "no such route")

    def _export(self, request: HttpRequest, thread_id: str) -> HttpResponse:
        """/api/threads/{id}/export?format=markdown|json: the whole thread, as a download."""
        if request.method != "GET":
            return HttpResponse.error(405, "method_not_allowed", "use GET")
        kind = request.query.get("format", "markdown")
        if kind not in ("markdown", "json"):
            raise BadRequest("format is markdown or json", status=400, error="invalid_query")
        thread = self._store.get_thread(thread_id)
        messages = self._store.all_messages(thread_id)
        now = self._clock.now_ms()
        name = f"albert-{thread_id}.{'md' if kind == 'markdown' else 'json'}"
        download = {"content-disposition": f'attachment; filename="{name}"'}
        if kind == "json":
            return HttpResponse.json(export_json(thread, messages, now), headers=download)
        return HttpResponse(
            body=export_markdown(thread, messages, now).encode(),
            headers={"content-type": "text/markdown; charset=utf-8", **download},
        )

    def _feedback(self, request: HttpRequest, thread_id: str, turn_id: str) -> HttpResponse:
        """PUT /api/threads/{id}/turns/{turn}/feedback: thumbs up or down on the turn's
        answer, with an optional comment, stored with its last message."""
        if request.method != "PUT":
            return HttpResponse.error(405, "method_not_allowed", "use PUT")
        body = parse_body(request, FeedbackBody, MAX_BODY_BYTES)
        comment = (body.comment or "").strip() or None
        feedback = (
            Feedback(rating=body.rating, comment=comment, at=self._clock.now_ms())
            if body.rating is not None
            else None
        )
        self._store.get_thread(thread_id)
        message = self._store.transaction(
            lambda: self._store.set_feedback(thread_id, turn_id, feedback)
        )
        if self._analytics.enabled:
            from albert.analytics.event_catalog import AnswerFeedbackStored

            self._analytics.track(
                AnswerFeedbackStored(
                    thread_id=thread_id,
                    rating=body.rating,
                    comment_chars=len(comment or ""),
                )
            )
        return HttpResponse.json(FeedbackStored(message_id=message.id, feedback=feedback))

    def _threads(self, request: HttpRequest) -> HttpResponse:
        """/api/threads: a page of threads, or a new one."""
        if request.method == "GET" and "q" in request.query:
            text = request.query["q"]
            if len(text) > MAX_SEARCH_CHARS:
                raise BadRequest(
                    f"q longer than {MAX_SEARCH_CHARS} characters", error="invalid_query"
                )
            limit = int_param(request, "limit", 50, low=1, high=self._settings.max_page_size)
            return HttpResponse.json(
                ThreadSearchResults(query=text, results=self._store.search(text, limit))
            )
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
                raise BadRequest("send a title, pinned, or both", status=422, error="invalid_body")
            title = self._title(body.title) if body.title is not None else None
            thread = self._store.get_thread(thread_id)
            if title is not None:
                thread = self._store.rename_thread(thread_id, title)
            if body.pinned is not None:
                thread = self._store.set_pinned(thread_id, body.pinned)
            return HttpResponse.json(thread)
        return HttpResponse.error(405, "method_not_allowed", "use GET, PATCH or DELETE")

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
