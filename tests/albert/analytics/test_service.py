"""The analytics service: nothing without a key, one batch after the response with one."""

from __future__ import annotations

import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest

from albert.analytics.event_catalog import BY_NAME, ThemeToggled, ThreadCreated, ToolInvoked
from albert.analytics.service import MAX_BATCH, AnalyticsService
from albert.analytics.sinks import AMPLITUDE_URL
from albert.cloudflare.sql import WorkersSql
from albert.settings import Settings
from albert.storage.meta import CLIENT_ID, ObjectMeta
from miniflare import install_shims
from miniflare.storage import SqlStorage

install_shims()

CLIENT = "c_" + "a" * 24


class FixedClock:
    def now_ms(self) -> int:
        return 1_700_000_000_000

    def monotonic(self) -> float:
        return 0.0


class Deferred:
    """A `defer` that keeps the work, so a test decides when 'after the response' is."""

    def __init__(self) -> None:
        self.work: list[Coroutine[Any, Any, None]] = []

    def __call__(self, work: Coroutine[Any, Any, None]) -> None:
        self.work.append(work)

    async def run_all(self) -> None:
        while self.work:
            await self.work.pop(0)


class Recorder:
    """An httpx transport standing in for Amplitude, which cannot exist here."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[httpx.Request] = []
        self.status = status

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.status, json={"code": self.status})


def identified(service: AnalyticsService) -> AnalyticsService:
    service.identify(CLIENT)
    return service


async def test_no_key_means_no_network_and_no_work() -> None:
    recorder = Recorder()
    deferred = Deferred()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        settings = Settings.from_env({})
        service = AnalyticsService.from_settings(
            settings, http=http, defer=deferred, clock=FixedClock()
        )
        identified(service)
        for _ in range(5):
            service.track(ThreadCreated(thread_id="t_1"))
        await service.flush()
        await deferred.run_all()
    assert not service.enabled
    assert recorder.requests == []
    assert deferred.work == []
    assert service.pending == 0


async def test_events_leave_in_one_batch_only_after_the_response() -> None:
    recorder = Recorder()
    deferred = Deferred()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        service = identified(
            AnalyticsService(api_key="k-123", http=http, defer=deferred, clock=FixedClock())
        )
        service.track(ThreadCreated(thread_id="t_1"))
        service.track(
            ToolInvoked(
                tool="token_search",
                source="remote",
                server="vaults",
                duration_ms=12.5,
                ok=True,
                truncated=False,
                outcome="ok",
            )
        )
        # The handler has returned; nothing was sent on its path.
        assert recorder.requests == []
        assert len(deferred.work) == 1
        await deferred.run_all()
    assert len(recorder.requests) == 1
    request = recorder.requests[0]
    assert str(request.url) == AMPLITUDE_URL
    body = json.loads(request.content)
    assert body["api_key"] == "k-123"
    assert [e["event_type"] for e in body["events"]] == ["thread_created", "tool_invoked"]
    first, second = body["events"]
    assert first["user_id"] == CLIENT
    assert first["time"] == 1_700_000_000_000
    assert first["event_properties"] == {"thread_id": "t_1"}
    assert second["event_properties"] == {
        "tool": "token_search",
        "source": "remote",
        "server": "vaults",
        "duration_ms": 12.5,
        "ok": True,
        "truncated": False,
        "outcome": "ok",
    }
    assert first["insert_id"] != second["insert_id"]
    # Every property matches its catalog model exactly.
    for event in body["events"]:
        BY_NAME[event["event_type"]].model_validate(event["event_properties"], strict=True)


async def test_large_bursts_are_split_into_batches() -> None:
    recorder = Recorder()
    deferred = Deferred()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        service = identified(
            AnalyticsService(api_key="k", http=http, defer=deferred, clock=FixedClock())
        )
        for i in range(MAX_BATCH + 5):
            service.track(ThreadCreated(thread_id=f"t_{i}"))
        await deferred.run_all()
    sizes = [len(json.loads(r.content)["events"]) for r in recorder.requests]
    assert sizes == [MAX_BATCH, 5]


async def test_a_failing_receiver_does_not_raise(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder(status=503)
    deferred = Deferred()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        service = AnalyticsService(api_key="k", http=http, defer=deferred, clock=FixedClock())
        service.track(ThemeToggled(theme="dark"))
        await deferred.run_all()
        # A later event schedules a new flush and still goes out.
        service.track(ThemeToggled(theme="light"))
        await deferred.run_all()
    assert len(recorder.requests) == 2
    assert "Amplitude answered 503" in caplog.text
    # Not identified: Amplitude still gets a device id.
    event = json.loads(recorder.requests[0].content)["events"][0]
    assert "user_id" not in event and event["device_id"]


async def test_json_lines_file_without_key_sends_nothing(tmp_path: Path) -> None:
    recorder = Recorder()
    deferred = Deferred()
    log_path = tmp_path / "logs" / "events.jsonl"
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        settings = Settings.from_env({"ANALYTICS_LOG_PATH": str(log_path)})
        service = identified(
            AnalyticsService.from_settings(settings, http=http, defer=deferred, clock=FixedClock())
        )
        service.track(ThreadCreated(thread_id="t_9"))
        service.track(ThemeToggled(theme="dark"))
        await deferred.run_all()
    assert recorder.requests == []
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert [(e["event_type"], e["side"], e["user_id"]) for e in lines] == [
        ("thread_created", "server", CLIENT),
        ("theme_toggled", "client", CLIENT),
    ]
    assert lines[1]["event_properties"] == {"theme": "dark"}


async def test_identity_survives_a_new_object_instance(tmp_path: Path) -> None:
    sql = WorkersSql(SqlStorage(tmp_path / "object.sqlite"))
    deferred = Deferred()
    identified(AnalyticsService(log_path=str(tmp_path / "a.jsonl"), defer=deferred, sql=sql))
    # A woken object: no request seen yet, the socket's events still name the client.
    woken = AnalyticsService(log_path=str(tmp_path / "b.jsonl"), defer=deferred, sql=sql)
    assert woken.client_id == CLIENT
    # The object's identity has one home: object_meta, next to its tenant.
    assert ObjectMeta(sql).get(CLIENT_ID) == CLIENT


async def test_malformed_client_ids_are_ignored() -> None:
    service = AnalyticsService(log_path="unused.jsonl", defer=Deferred())
    service.identify("nope")
    assert service.client_id is None
