"""The revocation mark of a user's object, on its real SQLite file: who is refused after a
revocation, which sockets close, and that the mark outlives a restart."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from albert.auth.tokens import Identity
from albert.chat.service import ChatService
from albert.chat.sessions import REVOKED_UP_TO
from albert.chat.socket_policy import CLOSE_SESSION_REVOKED, SocketMeta
from albert.composition import build_chat_service
from albert.storage.meta import ObjectMeta
from albert.web import HttpRequest
from miniflare import install_shims
from tests.support.clock import ManualClock
from tests.support.object_sql import object_sql
from tests.support.sockets import AttachedSocket, SocketList

install_shims()

ENV = {"ALBERT_MODE": "local", "MCP_CONNECT_WAIT_SECONDS": "0"}
START_MS = 1_900_000_000_000
EXPIRES = START_MS // 1000 + 3600


class Sock(AttachedSocket):
    """A socket of a session signed in at `issued_at_ms` (None: a token from before that)."""

    def __init__(self, issued_at_ms: int | None) -> None:
        super().__init__(
            SocketMeta(
                opened_at_ms=START_MS, expires_at=EXPIRES, issued_at_ms=issued_at_ms
            ).encode()
        )


def user(issued_at_ms: int | None, client: str = "c_" + "d" * 24) -> Identity:
    return Identity(
        client_id=client,
        tenant="default",
        expires_at=EXPIRES,
        user_id="auth0|7",
        issued_at_ms=issued_at_ms,
    )


def revoke_request(body: bytes = b"") -> HttpRequest:
    return HttpRequest(method="POST", path="/api/session/revoke", headers={}, body=body)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def start(path: Path, hub: SocketList, clock: ManualClock, http: httpx.AsyncClient) -> ChatService:
    return build_chat_service(sql=object_sql(path), hub=hub, env=ENV, http=http, clock=clock)


async def test_a_revocation_refuses_earlier_sessions_and_closes_their_sockets(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    clock = ManualClock(START_MS)
    laptop, phone, legacy = Sock(START_MS - 5_000), Sock(START_MS - 1), Sock(None)
    hub = SocketList([laptop, phone, legacy])
    service = start(tmp_path / "user.sqlite", hub, clock, http)
    assert service.sessions.refusal(user(START_MS - 5_000)) is None  # nothing revoked yet

    clock.ms += 10
    answer = await service.handle_http(revoke_request(), user(START_MS - 1))
    assert answer.status == 200
    assert json.loads(answer.body) == {
        "user_id": "auth0|7",
        "revoked_up_to": START_MS + 10,
        "sockets_closed": 3,
        "turns_cancelled": 0,
    }
    assert {s.closed[0] for s in (laptop, phone, legacy) if s.closed} == {CLOSE_SESSION_REVOKED}
    assert laptop.closed is not None and laptop.closed[1].startswith("session_revoked")

    for issued in (START_MS - 5_000, START_MS + 10, 0):  # 0: a token from before issue times
        refused = service.sessions.refusal(user(issued))
        assert refused is not None and refused.status == 401
        assert json.loads(refused.body)["error"] == "session_revoked"
    assert service.sessions.refusal(user(START_MS + 11)) is None  # signed in afterwards
    assert service.sessions.refusal(user(None)) is None  # the host's JWT itself

    # A socket of a session signed in afterwards stays open, and is the only one listed.
    later = Sock(START_MS + 11)
    hub.all.append(later)
    assert service.sockets.sockets() == [later] and later.closed is None

    # The mark is on the object's file: a restarted object refuses the same sessions.
    await service.close()
    again = start(tmp_path / "user.sqlite", SocketList([Sock(START_MS)]), clock, http)
    refused = again.sessions.refusal(user(START_MS - 5_000))
    assert refused is not None and refused.status == 401
    assert again.sessions.refusal(user(START_MS + 11)) is None
    assert again.sockets.sockets() == []  # the woken object's old socket is closed too
    await again.close()


async def test_revoking_again_never_moves_the_mark_back_and_keeps_one_row(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    clock = ManualClock(START_MS)
    path = tmp_path / "user.sqlite"
    service = start(path, SocketList([]), clock, http)
    first = json.loads((await service.handle_http(revoke_request(), user(1))).body)
    clock.ms -= 60_000  # a clock stepped back between two revocations
    second = json.loads((await service.handle_http(revoke_request(), user(None))).body)
    assert second["revoked_up_to"] == first["revoked_up_to"] == START_MS
    clock.ms += 120_000
    third = json.loads((await service.handle_http(revoke_request(), user(None))).body)
    assert third["revoked_up_to"] == START_MS + 60_000
    rows = object_sql(path).execute("SELECT value FROM object_meta WHERE key = ?", REVOKED_UP_TO)
    assert [r["value"] for r in rows] == [str(START_MS + 60_000)]
    await service.close()


async def test_refused_revocations_change_nothing(tmp_path: Path, http: httpx.AsyncClient) -> None:
    clock = ManualClock(START_MS)
    path = tmp_path / "user.sqlite"
    sock = Sock(START_MS - 1)
    service = start(path, SocketList([sock]), clock, http)
    cases = [
        (revoke_request(b'{"tenant": "other"}'), user(None), 403, "tenant_mismatch"),
        (revoke_request(b'{"nope": 1}'), user(None), 422, "invalid_body"),
        (
            revoke_request(),
            Identity(client_id="c_" + "e" * 24, tenant="default", expires_at=EXPIRES),
            403,
            "not_signed_in",
        ),
    ]
    for request, caller, status, error in cases:
        answer = await service.handle_http(request, caller)
        assert (answer.status, json.loads(answer.body)["error"]) == (status, error)
    get = HttpRequest(method="GET", path="/api/session/revoke", headers={}, body=b"")
    assert (await service.handle_http(get, user(None))).status == 405
    assert ObjectMeta(object_sql(path)).get(REVOKED_UP_TO) is None
    assert sock.closed is None and service.sessions.refusal(user(0)) is None
    await service.close()
