"""The object's thread HTTP API: list, search, create, load, rename, pin, export, delete, and
feedback on an answer (the routes to each: albert.chat.routes)."""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import ParamSpec

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

MAX_SEARCH_CHARS = 200
MAX_BODY_BYTES = 16_000
P = ParamSpec("P")


def new_thread_id() -> str:
    """A fresh, unguessable thread id."""
    return "t_" + secrets.token_urlsafe(12)


def _store_refusals(
    action: Callable[P, Awaitable[HttpResponse]],
) -> Callable[P, Awaitable[HttpResponse]]:
    """The store's refusals as the action's answer: a thread it does not have is a 404, a
    cursor it did not issue a 400 (a client's input: albert.chat.routes answers the rest)."""

    @functools.wraps(action)
    async def answer(*args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        try:
            return await action(*args, **kwargs)
        except NotFound:
            return HttpResponse.error(404, "not_found", "no such thread")
        except InvalidCursor:
            return HttpResponse.error(400, "invalid_cursor", "invalid cursor")

    return answer


class ThreadsApi:
    """The thread actions of one object, over its thread store; each raises BadRequest for
    input the client must fix."""

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

    @_store_refusals
    async def list_threads(self, request: HttpRequest) -> HttpResponse:
        """A page of the threads (`?limit=`, `?cursor=`); with `?q=`, those whose text matches."""
        if "q" in request.query:
            text = request.query["q"]
            if len(text) > MAX_SEARCH_CHARS:
                raise BadRequest(
                    f"q longer than {MAX_SEARCH_CHARS} characters", error="invalid_query"
                )
            limit = int_param(request, "limit", 50, low=1, high=self._settings.max_page_size)
            return HttpResponse.json(
                ThreadSearchResults(query=text, results=self._store.search(text, limit))
            )
        limit = int_param(request, "limit", 50, low=1, high=self._settings.max_page_size)
        threads, cursor = self._store.threads_page_json(limit, request.query.get("cursor"))
        # The ThreadPage shape, its array serialised by SQLite (rows validated on write).
        return HttpResponse.json_bytes(
            b'{"threads":', threads, b',"next_cursor":', json.dumps(cursor).encode(), b"}"
        )

    @_store_refusals
    async def create_thread(self, request: HttpRequest) -> HttpResponse:
        """A new thread (201), titled if the body says so, within the client's thread cap."""
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

    @_store_refusals
    async def load_thread(self, request: HttpRequest, thread_id: str) -> HttpResponse:
        """The thread and a page of its messages (`?limit=`, `?cursor=`)."""
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

    @_store_refusals
    async def update_thread(self, request: HttpRequest, thread_id: str) -> HttpResponse:
        """Rename the thread, pin or unpin it, or both."""
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

    @_store_refusals
    async def delete_thread(self, thread_id: str) -> HttpResponse:
        """Delete a thread; a turn running in it is cancelled first (stored as cancelled,
        its `done` sent), so nothing writes into the thread after it is gone."""
        if self._cancel_turn is not None:
            await self._cancel_turn(thread_id)
        self._store.delete_thread(thread_id)
        return HttpResponse(status=204)

    @_store_refusals
    async def export_thread(self, request: HttpRequest, thread_id: str) -> HttpResponse:
        """The whole thread as a download, `?format=markdown` (the default) or `json`."""
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

    @_store_refusals
    async def set_feedback(
        self, request: HttpRequest, thread_id: str, turn_id: str
    ) -> HttpResponse:
        """Thumbs up or down on a turn's answer, with an optional comment, stored with its
        last message (a body without a rating clears it)."""
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
