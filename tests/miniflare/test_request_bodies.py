"""The request-body bound covers every body a worker route accepts, and both runtimes
apply the one bound (albert.request_bodies)."""

from __future__ import annotations

from albert.analytics.endpoint import MAX_BODY_BYTES as EVENTS_BODY
from albert.auth.session_api import MAX_SESSION_BODY
from albert.chat.threads_api import MAX_BODY_BYTES as THREADS_BODY
from albert.mcp.api import MAX_BODY_BYTES as MCP_SERVERS_BODY
from albert.request_bodies import MAX_REQUEST_BODY_BYTES
from miniflare import runtime


def test_the_bound_is_the_largest_route_body_with_room_and_no_more() -> None:
    largest = max(EVENTS_BODY, MAX_SESSION_BODY, THREADS_BODY, MCP_SERVERS_BODY)
    assert largest <= MAX_REQUEST_BODY_BYTES <= 4 * largest


def test_the_local_runtime_applies_the_shared_bound() -> None:
    assert runtime.MAX_REQUEST_BODY_BYTES == MAX_REQUEST_BODY_BYTES
