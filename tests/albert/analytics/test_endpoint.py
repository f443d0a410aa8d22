"""POST /api/events: only catalog client events with the declared types are tracked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from albert.analytics.endpoint import MAX_EVENTS, EventsApi
from albert.analytics.service import AnalyticsService
from albert.web import HttpRequest
from tests.albert.analytics.test_service import CLIENT, Deferred, FixedClock


def post(body: Any, method: str = "POST") -> HttpRequest:
    return HttpRequest(
        method=method,
        path="/api/events",
        headers={"x-albert-client": CLIENT},
        body=json.dumps(body).encode(),
    )


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "events.jsonl"


@pytest.fixture
def setup(log_path: Path) -> tuple[EventsApi, Deferred]:
    deferred = Deferred()
    service = AnalyticsService(log_path=str(log_path), defer=deferred, clock=FixedClock())
    return EventsApi(service, FixedClock()), deferred


def logged(log_path: Path) -> list[dict[str, Any]]:
    if not log_path.exists():
        return []
    return [json.loads(line) for line in log_path.read_text().splitlines()]


async def test_valid_batch_is_accepted_and_tracked(
    setup: tuple[EventsApi, Deferred], log_path: Path
) -> None:
    api, deferred = setup
    response = await api.handle(
        post(
            {
                "events": [
                    {"event": "theme_toggled", "props": {"theme": "dark"}, "id": "e1"},
                    {"event": "conversation_list_toggled", "props": {"visible": False}},
                    {"event": "session_ended", "props": {"duration_ms": 4200}, "time": 1},
                ]
            }
        )
    )
    assert response.status == 202
    assert json.loads(response.body) == {"accepted": 3}
    await deferred.run_all()
    events = logged(log_path)
    assert [e["event_type"] for e in events] == [
        "theme_toggled",
        "conversation_list_toggled",
        "session_ended",
    ]
    assert events[0]["insert_id"] == "e1"
    assert events[1]["event_properties"] == {"visible": False}
    # A browser clock a day off is replaced by the server's time.
    assert events[2]["time"] == FixedClock().now_ms()


@pytest.mark.parametrize(
    ("event", "detail"),
    [
        ({"event": "nope", "props": {}}, "unknown client event 'nope'"),
        ({"event": "message_sent", "props": {"thread_id": "t", "chars": 1}}, "unknown client"),
        ({"event": "theme_toggled", "props": {"theme": "blue"}}, "theme_toggled: theme"),
        ({"event": "theme_toggled", "props": {}}, "theme_toggled: theme"),
        ({"event": "session_ended", "props": {"duration_ms": "5"}}, "duration_ms"),
        ({"event": "session_ended", "props": {"duration_ms": -1}}, "duration_ms"),
        ({"event": "conversation_list_toggled", "props": {"visible": 1}}, "visible"),
        ({"event": "theme_toggled", "props": {"theme": "dark", "x": 1}}, "x"),
    ],
)
async def test_invalid_events_reject_the_whole_batch(
    setup: tuple[EventsApi, Deferred], log_path: Path, event: dict[str, Any], detail: str
) -> None:
    api, deferred = setup
    good = {"event": "theme_toggled", "props": {"theme": "light"}}
    response = await api.handle(post({"events": [good, event]}))
    assert response.status == 422
    body = json.loads(response.body)
    assert body["error"] == "invalid_event"
    assert detail in body["detail"]
    await deferred.run_all()
    assert logged(log_path) == []


async def test_shape_limits(setup: tuple[EventsApi, Deferred]) -> None:
    api, _ = setup
    one = {"event": "theme_toggled", "props": {"theme": "light"}}
    assert (await api.handle(post({"events": []}))).status == 422
    assert (await api.handle(post({"events": [one] * (MAX_EVENTS + 1)}))).status == 422
    assert (await api.handle(post({"events": [one]}, method="GET"))).status == 405
    too_big = {"events": [{**one, "props": {"theme": "x" * 40_000}}]}
    assert (await api.handle(post(too_big))).status == 413
