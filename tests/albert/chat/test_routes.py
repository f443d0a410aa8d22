"""The chat object's route table: what answers each request, in which order the checks
run, and the 404 and 405 answers of paths and methods no route takes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from albert.auth.session_api import REVOKE_PATH, SESSION_CHECK_PATH
from albert.auth.tokens import Identity
from albert.chat.claims import MAX_IMPORT_BYTES
from albert.chat.routes import ROUTES, AcceptSocket, Access, body_cap, takes_session
from albert.chat.service import ChatService
from albert.chat.socket_policy import SocketMeta
from albert.composition import build_chat_service
from albert.mcp.oauth_state import CALLBACK_PATH
from albert.request_bodies import MAX_REQUEST_BODY_BYTES
from albert.web import HttpRequest, HttpResponse
from miniflare import install_shims
from tests.support.callers import FAR_FUTURE, anonymous
from tests.support.clock import ManualClock
from tests.support.object_sql import object_sql
from tests.support.sockets import SocketList

install_shims()

ENV = {"ALBERT_MODE": "local", "MCP_CONNECT_WAIT_SECONDS": "0", "MCP_CHANGES_PER_MINUTE": "3"}
NOW_MS = 1_900_000_000_000
ANON = anonymous()
USER = Identity(
    client_id="c_" + "u" * 24,
    tenant="default",
    expires_at=FAR_FUTURE,
    user_id="u1",
    issued_at_ms=NOW_MS - 1_000,
)
UPGRADE = {"upgrade": "websocket"}


@pytest.fixture
async def chat(tmp_path: Path) -> AsyncIterator[ChatService]:
    async with httpx.AsyncClient() as http:
        service = build_chat_service(
            sql=object_sql(tmp_path / "object.sqlite"),
            hub=SocketList([]),
            env=ENV,
            http=http,
            clock=ManualClock(NOW_MS),
        )
        yield service
        await service.close()


async def call(
    chat: ChatService,
    method: str,
    path: str,
    caller: Identity | None = ANON,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> HttpResponse:
    answer = await chat.handle_http(
        HttpRequest(method=method, path=path, headers=headers or {}, body=body), caller
    )
    assert isinstance(answer, HttpResponse), answer
    return answer


def error(response: HttpResponse) -> tuple[int, str, str]:
    body = json.loads(response.body)
    return response.status, body["error"], body["detail"]


def test_the_routes_the_router_sends_are_in_the_table() -> None:
    request = HttpRequest(method="GET", path=CALLBACK_PATH, query={"state": "x"})
    assert not takes_session(request)
    for path in ("/api/threads", REVOKE_PATH, SESSION_CHECK_PATH, "/internal/claim/import"):
        assert takes_session(HttpRequest(method="POST", path=path))
    assert body_cap("/internal/claim/import") == MAX_IMPORT_BYTES
    assert body_cap("/internal/claim") == MAX_REQUEST_BODY_BYTES
    assert body_cap("/api/threads") == MAX_REQUEST_BODY_BYTES
    # One path, one kind of access: which checks run never depends on the method.
    access: dict[str, Access] = {}
    for route in ROUTES:
        assert access.setdefault(route.path, route.access) == route.access, route.path


@pytest.mark.parametrize(
    ("method", "path", "detail"),
    [
        ("PUT", "/api/threads", "use GET or POST"),
        ("POST", "/api/threads/t_1", "use GET, PATCH or DELETE"),
        ("HEAD", "/api/threads/t_1/export", "use GET"),
        ("GET", "/api/threads/t_1/turns/m1/feedback", "use PUT"),
        ("GET", "/api/events", "use POST"),
        ("POST", "/api/mcp/status", "use GET"),
        ("OPTIONS", "/api/mcp/servers", "use GET, POST or DELETE"),
        ("HEAD", "/api/mcp/servers/a", "use GET or DELETE"),
        ("GET", "/api/mcp/servers/a/authorize", "use POST"),
        ("GET", "/api/mcp/servers/a/reconnect", "use POST"),
        ("POST", CALLBACK_PATH, "use GET"),
        ("GET", REVOKE_PATH, "use POST"),
        ("GET", "/internal/claim/export", "use POST"),
    ],
)
async def test_a_method_no_route_of_the_path_takes_is_405_naming_theirs(
    chat: ChatService, method: str, path: str, detail: str
) -> None:
    response = await call(chat, method, path, caller=None if path == CALLBACK_PATH else ANON)
    assert error(response) == (405, "method_not_allowed", detail)


@pytest.mark.parametrize(
    ("method", "path", "detail"),
    [
        ("GET", "/api/threads/", "no such route"),
        ("GET", "/api/threads/bad!id", "no such route"),
        ("GET", "/api/threads/" + "t" * 65, "no such route"),
        ("GET", "/api/threads/t_1/other", "no such route"),
        ("GET", "/api/mcp/", "no such route"),
        ("GET", "/api/mcp/servers/a/b/c", "no such route"),
        ("GET", "/api/threadsx", "no route for GET /api/threadsx"),
        ("DELETE", "/api/events/x", "no route for DELETE /api/events/x"),
        ("GET", "/api/mcp", "no route for GET /api/mcp"),
        # /api/me is a signed-in session's (an anonymous one's the router answers).
        ("GET", "/api/me", "no route for GET /api/me"),
        ("GET", "/", "no route for GET /"),
    ],
)
async def test_a_path_no_route_takes_is_404(
    chat: ChatService, method: str, path: str, detail: str
) -> None:
    assert error(await call(chat, method, path)) == (404, "not_found", detail)


async def test_a_revoked_session_is_refused_before_any_route(chat: ChatService) -> None:
    await chat.sessions.revoke("u1")
    for method, path, headers in [
        ("GET", "/api/me", {}),
        ("POST", SESSION_CHECK_PATH, {}),
        ("POST", "/internal/claim/import", {}),
        ("GET", "/api/threads", {}),
        ("GET", "/api/chat", UPGRADE),
        ("PUT", "/api/nothing", {}),
    ]:
        answer = await call(chat, method, path, USER, headers)
        assert error(answer)[:2] == (401, "session_revoked"), path
    # The callback takes no session: a revocation is not its business.
    callback = await call(chat, "GET", CALLBACK_PATH, caller=None)
    assert callback.status == 400 and b"Authorization failed" in callback.body


async def test_a_claimed_object_still_answers_the_sessions_own_routes(
    chat: ChatService,
) -> None:
    chat.claims.mark_claimed("default/user/u1")
    assert (await call(chat, "GET", SESSION_CHECK_PATH)).status == 200
    assert error(await call(chat, "GET", REVOKE_PATH))[0] == 405
    assert error(await call(chat, "POST", "/internal/claim/import"))[:2] == (403, "forbidden")
    export = await call(chat, "POST", "/internal/claim/export")
    assert json.loads(export.body)["claimed_by"] == "default/user/u1"
    for method, path, headers in [
        ("GET", "/api/threads", {}),
        ("GET", "/api/chat", UPGRADE),
        ("GET", "/api/nothing", {}),
        ("PUT", "/api/threads", {}),
    ]:
        answer = await call(chat, method, path, ANON, headers)
        assert error(answer)[:2] == (410, "session_claimed"), path


async def test_an_upgrade_of_any_path_is_the_chat_socket(chat: ChatService) -> None:
    for path in ("/api/chat", "/api/threads", "/api/nothing"):
        answer = await chat.handle_http(HttpRequest(method="GET", path=path, headers=UPGRADE), USER)
        assert isinstance(answer, AcceptSocket), path
        meta = SocketMeta.model_validate_json(answer.attachment)
        assert meta == SocketMeta(
            opened_at_ms=NOW_MS, expires_at=FAR_FUTURE, issued_at_ms=USER.issued_at_ms
        )
    # Opened with the host's JWT itself: a session from the moment it opens.
    host = USER.model_copy(update={"issued_at_ms": None, "host_token": True})
    answer = await chat.handle_http(
        HttpRequest(method="GET", path="/api/chat", headers=UPGRADE), host
    )
    assert isinstance(answer, AcceptSocket)
    assert SocketMeta.model_validate_json(answer.attachment).issued_at_ms == NOW_MS
    # The session's own paths are theirs, upgrade or not.
    revoke = await call(chat, "GET", REVOKE_PATH, USER, UPGRADE)
    assert error(revoke)[0] == 405
    assert json.loads((await call(chat, "GET", "/api/me", USER, UPGRADE)).body)["user_id"] == "u1"
    # /api/me is no route of an anonymous session's: its upgrade is the socket.
    answer = await chat.handle_http(
        HttpRequest(method="GET", path="/api/me", headers=UPGRADE), ANON
    )
    assert isinstance(answer, AcceptSocket)


async def test_mcp_changes_are_counted_before_they_are_routed(chat: ChatService) -> None:
    # Three a minute: a wrong method and a path no route takes cost as much as a change.
    assert error(await call(chat, "PUT", "/api/mcp/servers"))[0] == 405
    assert error(await call(chat, "POST", "/api/mcp/nothing"))[0] == 404
    assert error(await call(chat, "DELETE", "/api/mcp/servers/nothing"))[0] == 404
    # Reconnecting is a change too.
    refused = await call(chat, "POST", "/api/mcp/servers/nothing/reconnect")
    assert error(refused)[:2] == (429, "rate_limited")
    assert refused.headers["retry-after"] == "20"
    # Reading is never counted, nor is anything outside /api/mcp/.
    assert (await call(chat, "GET", "/api/mcp/servers")).status == 200
    assert (await call(chat, "POST", "/api/threads", body=b"{}")).status == 201


async def test_a_route_that_takes_a_session_is_refused_without_one(chat: ChatService) -> None:
    answer = await call(chat, "GET", "/api/threads", caller=None)
    assert error(answer) == (401, "unauthorized", "missing token")
