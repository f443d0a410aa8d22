"""POST /api/events: the browser's events, validated against the catalog before tracking."""

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from albert.analytics.service import AnalyticsService
from albert.clock import Clock, SystemClock
from albert.protocol.frames import ID_PATTERN
from albert.validation import validation_message
from albert.web import BadRequest, HttpRequest, HttpResponse, parse_body

if TYPE_CHECKING:
    from albert.analytics.event_catalog import CatalogEvent

EVENTS_PATH = "/api/events"
MAX_BODY_BYTES = 32_000
MAX_EVENTS = 50
# A browser clock can be off; beyond this, the server's time is used instead.
MAX_CLOCK_SKEW_MS = 24 * 3600 * 1000


class ClientEvent(BaseModel):
    """One event as the browser sends it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    event: str = Field(max_length=64)
    props: dict[str, Any] = Field(default_factory=dict)
    time: int | None = Field(None, description="Unix milliseconds on the browser's clock")
    id: str | None = Field(None, pattern=ID_PATTERN, description="Sent again, counted once")


class ClientEventBatch(BaseModel):
    """Body of POST /api/events."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    events: list[ClientEvent] = Field(min_length=1, max_length=MAX_EVENTS)


class EventsAccepted(BaseModel):
    """Answer of POST /api/events."""

    model_config = ConfigDict(defer_build=True)

    accepted: int


def validate_client_event(item: ClientEvent) -> "CatalogEvent":
    """The catalog event for a browser event, or BadRequest naming what is wrong."""
    # The catalog loads with the first POST /api/events, not with the object.
    from albert.analytics.event_catalog import CLIENT_EVENTS

    model = CLIENT_EVENTS.get(item.event)
    if model is None:
        raise BadRequest(f"unknown client event {item.event!r}", status=422, error="invalid_event")
    try:
        return model.model_validate(item.props, strict=True)
    except ValidationError as exc:
        raise BadRequest(
            f"{item.event}: {validation_message(exc)}", status=422, error="invalid_event"
        ) from exc


class EventsApi:
    """Accepts a batch of client events; all valid or none tracked."""

    def __init__(self, analytics: AnalyticsService, clock: Clock | None = None) -> None:
        self._analytics = analytics
        self._clock = clock or SystemClock()

    def handles(self, path: str) -> bool:
        """True for the path this API owns."""
        return path == EVENTS_PATH

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Validate and track; 202 with the count, or a 4xx saying which event is wrong."""
        if request.method != "POST":
            return HttpResponse.error(405, "method_not_allowed", "use POST")
        try:
            batch = parse_body(request, ClientEventBatch, MAX_BODY_BYTES)
            events = [(item, validate_client_event(item)) for item in batch.events]
        except BadRequest as exc:
            return HttpResponse.error(exc.status, exc.error, exc.detail)
        now = self._clock.now_ms()
        for item, event in events:
            at = item.time
            if at is None or abs(at - now) > MAX_CLOCK_SKEW_MS:
                at = now
            self._analytics.track(event, time_ms=at, insert_id=item.id)
        return HttpResponse.json(EventsAccepted(accepted=len(events)), status=202)
