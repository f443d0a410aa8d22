"""The router's decisions: health, sessions, client ids."""

from albert.router import Forward, new_client_id, route
from albert.web import HttpRequest, HttpResponse


def _route(method: str, path: str, **kw) -> HttpResponse | Forward:
    return route(HttpRequest(method=method, path=path, **kw))


def test_health_and_sessions_touch_no_object() -> None:
    assert isinstance(_route("GET", "/healthz"), HttpResponse)
    session = _route("POST", "/api/session")
    assert isinstance(session, HttpResponse) and session.status == 201
    assert _route("GET", "/api/session").status == 405  # type: ignore[union-attr]


def test_api_requests_forward_to_the_named_client() -> None:
    client_id = new_client_id()
    assert _route("GET", "/api/threads", headers={"x-albert-client": client_id}) == Forward(
        client_id=client_id
    )
    assert _route("GET", "/api/chat", query={"client_id": client_id}) == Forward(
        client_id=client_id
    )


def test_missing_or_malformed_client_ids_are_401() -> None:
    for kw in (
        {},
        {"headers": {"x-albert-client": "c_short"}},
        {"query": {"client_id": "../../x" * 4}},
    ):
        response = _route("GET", "/api/threads", **kw)
        assert isinstance(response, HttpResponse) and response.status == 401


def test_client_ids_are_unique() -> None:
    assert len({new_client_id() for _ in range(1000)}) == 1000
