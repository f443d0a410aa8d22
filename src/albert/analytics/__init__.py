"""Product analytics: one typed event catalog, batched delivery after the response."""

from albert.analytics.catalog import BY_NAME, CLIENT_EVENTS, EVENTS, CatalogEvent
from albert.analytics.service import AnalyticsService, BackgroundDefer, Defer

__all__ = [
    "BY_NAME",
    "CLIENT_EVENTS",
    "EVENTS",
    "AnalyticsService",
    "BackgroundDefer",
    "CatalogEvent",
    "Defer",
]
