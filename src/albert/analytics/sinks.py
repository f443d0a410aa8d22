"""Where tracked events go: Amplitude's HTTP API, or a JSON-lines file on a developer's machine."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

AMPLITUDE_URL = "https://api2.amplitude.com/2/httpapi"
SEND_TIMEOUT_SECONDS = 5.0


class TrackedEvent(BaseModel):
    """One event ready to leave: its catalog name, who, when, and its properties."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    event_type: str
    user_id: str | None = None
    device_id: str | None = None
    time: int = Field(description="Unix milliseconds")
    insert_id: str = Field(description="Lets the receiver drop a batch sent twice")
    side: str
    event_properties: dict[str, Any] = Field(default_factory=dict)


class Sink(Protocol):
    """Receives batches of events; must not raise for delivery failures."""

    async def send(self, events: Sequence[TrackedEvent]) -> None: ...


class AmplitudeSink:
    """Amplitude HTTP API v2 over the object's shared HTTP client."""

    def __init__(self, api_key: str, http: httpx.AsyncClient, url: str = AMPLITUDE_URL) -> None:
        self._api_key = api_key
        self._http = http
        self._url = url

    def payload(self, events: Sequence[TrackedEvent]) -> dict[str, Any]:
        """The request body Amplitude expects."""
        out: list[dict[str, Any]] = []
        for event in events:
            item: dict[str, Any] = {
                "event_type": event.event_type,
                "time": event.time,
                "insert_id": event.insert_id,
                "event_properties": event.event_properties,
            }
            if event.user_id:
                item["user_id"] = event.user_id
            if event.device_id:
                item["device_id"] = event.device_id
            out.append(item)
        return {"api_key": self._api_key, "events": out}

    async def send(self, events: Sequence[TrackedEvent]) -> None:
        """POST one batch; failures are logged, never raised (analytics must not break chat)."""
        try:
            response = await self._http.post(
                self._url, json=self.payload(events), timeout=SEND_TIMEOUT_SECONDS
            )
        except httpx.HTTPError as exc:
            log.warning("analytics: sending %d events failed: %s", len(events), exc)
            return
        if response.status_code >= 400:
            log.warning(
                "analytics: Amplitude answered %d for %d events: %s",
                response.status_code,
                len(events),
                response.text[:200],
            )


class JsonLinesSink:
    """Appends one JSON object per event to a file, so a developer can watch events locally."""

    def __init__(self, path: Path) -> None:
        self._path = path

    async def send(self, events: Sequence[TrackedEvent]) -> None:
        """Append the batch; an unwritable file is logged, not raised."""
        lines = "".join(json.dumps(e.model_dump(exclude_none=True)) + "\n" for e in events)
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with self._path.open("a", encoding="utf-8") as handle:
                handle.write(lines)
        except OSError as exc:
            log.warning("analytics: cannot write %s: %s", self._path, exc)
