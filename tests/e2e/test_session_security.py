"""Sessions and sockets against the real runtime: key rotation, malformed tokens, where a
token may travel, token expiry on an open socket, the socket cap and the frame budget."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from albert.auth.tokens import issue_token, new_client_id, parse_key
from tests.support.runtime_process import TEST_SIGNING_KEY, RuntimeProcess

FRAMES_PER_MINUTE = 30
KEY_A = "bare-signing-key-number-one-aaaaaaaaaaaa"
KEY_B = "bare-signing-key-number-two-bbbbbbbbbbbb"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("session-security")
    variables = {
        "ALBERT_MODE": "production",
        "FRAMES_PER_MINUTE": str(FRAMES_PER_MINUTE),
        "NEW_SESSIONS_PER_IP": "0",  # every test here starts clients from one address
    }
    with RuntimeProcess(state, variables) as process:
        yield process


def _session(base_url: str, token: str | None = None) -> dict:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    response = httpx.post(f"{base_url}/api/session", headers=headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


def _auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# --- item 2: rotating a bare key logs nobody out ---------------------------------------


def test_rotating_a_bare_key_keeps_every_client_and_its_threads(tmp_path: Path) -> None:
    process = RuntimeProcess(tmp_path, {"ALBERT_MODE": "production", "AUTH_SIGNING_KEY": KEY_A})
    with process:
        before = _session(process.url)
        thread = httpx.post(
            f"{process.url}/api/threads", headers=_auth(before["token"]), json={"title": "kept"}
        ).json()["id"]
        # Rotation as the README documents it: B is current, A verifies for a grace period.
        process.variables.update(
            AUTH_SIGNING_KEY=KEY_B,
            AUTH_PREVIOUS_SIGNING_KEY=KEY_A,
            AUTH_PREVIOUS_KEY_VALID_UNTIL=str(int(time.time()) + 3600),
        )
        process.restart()
        listing = httpx.get(f"{process.url}/api/threads", headers=_auth(before["token"]))
        assert listing.status_code == 200, listing.text
        assert [t["id"] for t in listing.json()["threads"]] == [thread]
        renewed = _session(process.url, before["token"])
        assert renewed["client_id"] == before["client_id"]
        assert renewed["token"] != before["token"]
        again = httpx.get(f"{process.url}/api/threads/{thread}", headers=_auth(renewed["token"]))
        assert again.status_code == 200
        # When the grace period is over, the old token stops; the renewed one goes on.
        process.variables["AUTH_PREVIOUS_KEY_VALID_UNTIL"] = str(int(time.time()) - 1)
        process.restart()
        retired = httpx.get(f"{process.url}/api/threads", headers=_auth(before["token"]))
        assert retired.status_code == 401 and "retired" in retired.text
        assert (
            httpx.get(f"{process.url}/api/threads", headers=_auth(renewed["token"])).status_code
            == 200
        )


# --- item 3: a malformed token is a 401, never a 500 ------------------------------------

# Every way the probe (or a broken client) can spoil a real token: non-ASCII in either
# part, invalid UTF-8, padding, whitespace, a third part, a surrogate's bytes. (NUL
# cannot travel in a header at all; it is tried in the socket's query below.)
SPOILERS = [
    b"\xc3\xa9",
    b"\xe9",
    b"\xff\xfe",
    b"=",
    b" x",
    b".x",
    b"\xed\xa0\x80",
    b"\xef\xbc\xa1",  # full-width A
]


@pytest.mark.parametrize("spoiler", SPOILERS)
def test_spoiled_tokens_in_the_header_are_401(runtime: RuntimeProcess, spoiler: bytes) -> None:
    token = _session(runtime.url)["token"].encode()
    for spoiled in (token + spoiler, token[:-1] + spoiler, token.replace(b".", b"." + spoiler)):
        response = httpx.get(
            f"{runtime.url}/api/threads", headers=[(b"authorization", b"Bearer " + spoiled)]
        )
        assert response.status_code == 401, (spoiled, response.text)


@pytest.mark.parametrize("escape", ["%C3%A9", "%E9", "%FF", "%00", "%ED%A0%80", "%EF%BC%A1", "%20"])
async def test_spoiled_tokens_on_the_socket_are_401(runtime: RuntimeProcess, escape: str) -> None:
    token = _session(runtime.url)["token"]
    for spoiled in (token + escape, token[:-1] + escape, token.replace(".", "." + escape)):
        with pytest.raises(InvalidStatus) as refused:
            await connect(f"{runtime.ws_url}/api/chat?token={spoiled}", open_timeout=5)
        assert refused.value.response.status_code == 401, spoiled


def test_the_probes_request_is_401(runtime: RuntimeProcess) -> None:
    token = _session(runtime.url)["token"]
    response = httpx.get(f"{runtime.url}/api/threads?token={token}.%C3%A9")
    assert response.status_code == 401


# --- item 9: a token in the URL only opens a socket; an open socket expires -------------


def test_a_query_token_is_refused_on_every_http_route(runtime: RuntimeProcess) -> None:
    token = _session(runtime.url)["token"]
    thread = httpx.post(f"{runtime.url}/api/threads", headers=_auth(token), json={}).json()["id"]
    for method, path in [
        ("GET", "/api/threads"),
        ("POST", "/api/threads"),
        ("GET", f"/api/threads/{thread}"),
        ("PATCH", f"/api/threads/{thread}"),
        ("DELETE", f"/api/threads/{thread}"),
        ("GET", "/api/mcp/servers"),
        ("GET", "/api/mcp/status"),
        ("GET", "/api/me"),
        ("POST", "/api/events"),
        ("GET", "/api/chat"),  # without the upgrade it is plain HTTP
    ]:
        response = httpx.request(method, f"{runtime.url}{path}", params={"token": token}, json={})
        assert response.status_code == 401, (method, path, response.text)
    # The thread is untouched: the refused DELETE never reached the object.
    assert httpx.get(f"{runtime.url}/api/threads/{thread}", headers=_auth(token)).status_code == 200


async def _pong(ws: ClientConnection) -> dict:
    await ws.send(json.dumps({"type": "ping"}))
    for _ in range(20):
        frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if frame["type"] == "pong":
            return frame
    raise AssertionError("no pong")


async def test_an_open_socket_is_closed_when_its_token_expires(runtime: RuntimeProcess) -> None:
    key = parse_key(TEST_SIGNING_KEY)
    expires_at = int(time.time()) + 3
    token = issue_token(
        key,
        client_id=new_client_id(),
        tenant="default",
        expires_at=expires_at,
        issued_at_ms=int(time.time() * 1000),
    )
    async with connect(f"{runtime.ws_url}/api/chat?token={token}", open_timeout=5) as ws:
        await _pong(ws)
        await asyncio.sleep(max(0.0, expires_at - time.time()) + 0.2)
        # Any frame the object sends after expiry (a status push, say) may close it first.
        with pytest.raises(ConnectionClosed):
            await ws.send(json.dumps({"type": "ping"}))
            for _ in range(20):
                frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
                assert frame["type"] != "pong", "an expired token's socket still answers"
        assert ws.close_code == 4001


# --- item 8: sockets per client are capped, and pings count ------------------------------


async def test_a_client_keeps_at_most_eight_sockets_the_oldest_closed_with_4008(
    runtime: RuntimeProcess,
) -> None:
    token = _session(runtime.url)["token"]
    url = f"{runtime.ws_url}/api/chat?token={token}"
    sockets: list[ClientConnection] = []
    try:
        for _ in range(20):
            sockets.append(await connect(url, open_timeout=5))
        # Every socket that is still open answers; the twelve oldest were closed.
        for ws in sockets[:12]:
            with pytest.raises(ConnectionClosed):
                await _pong(ws)
            assert ws.close_code == 4008
        for ws in sockets[12:]:
            assert (await _pong(ws))["type"] == "pong"
    finally:
        await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)


async def test_a_ping_flood_is_cut_off_by_the_frame_budget(runtime: RuntimeProcess) -> None:
    token = _session(runtime.url)["token"]
    async with connect(f"{runtime.ws_url}/api/chat?token={token}", open_timeout=5) as ws:
        for _ in range(200):
            await ws.send(json.dumps({"type": "ping"}))
        frames: list[dict] = []
        try:
            for _ in range(400):
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), 2)))
        except TimeoutError:
            pass
        kinds = [f["type"] for f in frames if f["type"] != "mcp_status"]
        assert kinds.count("pong") <= FRAMES_PER_MINUTE
        limited = [f for f in frames if f["type"] == "error"]
        assert len(limited) == 1 and limited[0]["code"] == "rate_limited"
        assert limited[0]["retry_after_seconds"] > 0
        # Refused frames are dropped, not answered, and the socket stays open.
        assert ws.close_code is None
