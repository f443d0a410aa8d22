"""Sign-in with the host product's JWT, end to end on both runtimes: a real JWKS endpoint on
loopback, the scripted model, claims and revocation between the router and the objects.

On workerd offline the host's tokens are HS256 (a shared secret): RS256 and ES256 need
`cryptography`, which has no Pyodide build there (docs/workerd.md). The local runtime
signs in with RS256 and ES256 from the JWKS, as a host usually does.

A browser chats anonymously, then its user signs in: the thread and MCP server typed
before are in the user's account, once, and a second device signed in as the same user
sees the same threads. The anonymous session is left empty, pointing at the account.
The host revokes the user's sessions before their JWT's `exp`: both devices are out
(401, sockets closed), a sign-in afterwards works, an anonymous session is untouched.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.support.asgi_server import AsgiServer
from tests.support.chat_client import ChatClient, answer_text
from tests.support.identity_provider import SHARED_SECRET, IdentityProvider, new_key
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer

ANOTHER_SECRET = "not-the-hosts-secret-but-just-as-long-0123456789"


@dataclass
class Host:
    """The host product's tokens for one runtime: genuine ones, and forged ones."""

    idp: IdentityProvider
    hs256: bool

    def sign(self, sub: str, **claims: Any) -> str:
        """A genuine token of the host for `sub` (claims override, None drops one)."""
        if self.hs256:
            values = {"iat": int(time.time()), **claims}
            return self.idp.hs256_token(sub, **{k: v for k, v in values.items() if v is not None})
        return self.idp.token(sub, **claims)

    def sign_for_socket(self, sub: str) -> str:
        """A genuine token signed with the host's other key (ES256 where there are keys)."""
        if self.hs256:
            return self.sign(sub)
        return self.idp.token(sub, key=self.idp.keys["ec-1"])

    def forge(self, sub: str) -> str:
        """A token of the right shape signed with a key the host never had."""
        if self.hs256:
            return self.idp.hs256_token(sub, secret=ANOTHER_SECRET, iat=int(time.time()))
        return self.idp.token(sub, key=new_key("RS256", "rsa-1"))


@pytest.fixture(scope="module")
def host(runtime_kind: str) -> Iterator[Host]:
    with IdentityProvider(new_key("RS256", "rsa-1"), new_key("ES256", "ec-1")) as provider:
        yield Host(provider, hs256=runtime_kind == "workerd")


@pytest.fixture(scope="module")
def identity_runtime(
    tmp_path_factory: pytest.TempPathFactory,
    runtime_kind: str,
    model: ScriptedModelServer,
    platform: AsgiServer,
    host: Host,
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp(f"identity-runtime-{runtime_kind}")
    # On workerd the host signs HS256: the tenant opts in with a secret of its own.
    hs256 = {"jwt_hs256_secret": "AUTH_JWT_SECRET"} if host.hs256 else {}
    tenants = {"acme": host.idp.tenant(**hs256)}
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "PLATFORM_API_URL": platform.url,
        "TENANTS": json.dumps(tenants),
        "MCP_CONNECT_WAIT_SECONDS": "0",
    }
    if host.hs256:
        variables["AUTH_JWT_SECRET"] = SHARED_SECRET
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


async def sign_in(runtime: RuntimeProcess, jwt: str, claim_token: str | None) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=runtime.url, timeout=20) as http:
        body = {"claim_token": claim_token} if claim_token else {}
        response = await http.post(
            "/api/session", json=body, headers={"authorization": f"Bearer {jwt}"}
        )
    assert response.status_code == 201, response.text
    return dict(response.json())


async def thread_ids(client: ChatClient) -> list[str]:
    response = await client.http.get("/api/threads")
    assert response.status_code == 200, response.text
    return [t["id"] for t in response.json()["threads"]]


async def test_anonymous_work_follows_the_user_to_every_device(
    identity_runtime: RuntimeProcess,
    model: ScriptedModelServer,
    host: Host,
    closed_port: int,
) -> None:
    runtime = identity_runtime
    notes_url = f"http://127.0.0.1:{closed_port}/mcp"
    # Before signing in: an anonymous session of the tenant, a thread, an MCP server.
    async with ChatClient(runtime.url, runtime.ws_url, tenant="acme") as anonymous:
        await anonymous.connect()
        thread = await anonymous.new_thread("Stablecoin yields")
        model.script(Reply(text=["USDC ", "pays ", "4%."]))
        frames = await anonymous.turn(thread, "Where does USDC pay most?")
        assert answer_text(frames) == "USDC pays 4%."
        added = await anonymous.http.post(
            "/api/mcp/servers", json={"name": "notes", "url": notes_url}
        )
        assert added.status_code in (200, 201), added.text
        anonymous_token = anonymous.token
        assert anonymous_token is not None

    jwt = host.sign("auth0|trader-7")
    signed = await sign_in(runtime, jwt, anonymous_token)
    assert signed["user_id"] == "auth0|trader-7" and signed["tenant"]["key"] == "acme"
    assert signed["claim"] == {"status": "claimed", "threads": 1, "mcp_servers": 1, "detail": None}

    async with ChatClient(runtime.url, runtime.ws_url, token=signed["token"]) as user:
        assert await thread_ids(user) == [thread]
        messages = (await user.thread(thread))["messages"]
        assert [(m["role"], m["content"]) for m in messages] == [
            ("user", "Where does USDC pay most?"),
            ("assistant", "USDC pays 4%."),
        ]
        servers = (await user.http.get("/api/mcp/servers")).json()["servers"]
        assert [s["url"] for s in servers if s["name"] == "notes"] == [notes_url]
        # The conversation goes on in the account, over the socket.
        await user.connect()
        model.script(Reply(text=["Aave ", "pays ", "5%."]))
        frames = await user.turn(thread, "And on Aave?")
        assert answer_text(frames) == "Aave pays 5%."

    # The anonymous session is empty now and says where its work went.
    async with httpx.AsyncClient(base_url=runtime.url, timeout=10) as http:
        gone = await http.get(
            "/api/threads", headers={"authorization": f"Bearer {anonymous_token}"}
        )
    assert gone.status_code == 410 and gone.json()["error"] == "session_claimed"

    # Signing in again with the same claim moves nothing twice.
    again = await sign_in(runtime, host.sign("auth0|trader-7"), anonymous_token)
    assert again["claim"]["status"] == "already_claimed"

    # A second device: its own anonymous session first, then the same user's JWT.
    async with ChatClient(runtime.url, runtime.ws_url, tenant="acme") as phone:
        assert await thread_ids(phone) == []
        phone_token = phone.token
    on_phone = await sign_in(runtime, host.sign("auth0|trader-7"), phone_token)
    assert on_phone["client_id"] != signed["client_id"]
    assert on_phone["claim"]["status"] == "claimed" and on_phone["claim"]["threads"] == 0
    async with ChatClient(runtime.url, runtime.ws_url, token=on_phone["token"]) as phone:
        assert await thread_ids(phone) == [thread]
        assert len((await phone.thread(thread))["messages"]) == 4
        second = await phone.new_thread("From the phone")
    async with ChatClient(runtime.url, runtime.ws_url, token=signed["token"]) as laptop:
        assert set(await thread_ids(laptop)) == {thread, second}

    # Another user of the same host never sees them.
    other = await sign_in(runtime, host.sign("auth0|someone-else"), None)
    async with ChatClient(runtime.url, runtime.ws_url, token=other["token"]) as stranger:
        assert await thread_ids(stranger) == []


async def test_the_host_jwt_opens_the_socket_and_bad_tokens_are_refused(
    identity_runtime: RuntimeProcess, model: ScriptedModelServer, host: Host
) -> None:
    runtime = identity_runtime
    jwt = host.sign_for_socket("ws-user")
    async with ChatClient(runtime.url, runtime.ws_url, token=jwt) as client:
        thread = await client.new_thread()
        await client.connect()  # ?token=<the JWT>
        model.script(Reply(text=["hi"]))
        assert answer_text(await client.turn(thread, "hello")) == "hi"
    signed = await sign_in(runtime, host.sign("ws-user"), None)
    async with ChatClient(runtime.url, runtime.ws_url, token=signed["token"]) as same:
        assert await thread_ids(same) == [thread]

    forged = host.forge("ws-user")
    async with httpx.AsyncClient(base_url=runtime.url, timeout=10) as http:
        refused = await http.post("/api/session", headers={"authorization": f"Bearer {forged}"})
    assert refused.status_code == 401
    assert refused.json() == {"error": "unauthorized", "detail": "bad signature"}
    assert forged.split(".")[1] not in runtime.log_path.read_text()
    with pytest.raises(InvalidStatus) as caught:
        async with connect(f"{runtime.ws_url}/api/chat?token={forged}", open_timeout=10):
            pass
    assert caught.value.response.status_code == 401


async def closed_with(client: ChatClient, timeout: float = 10.0) -> tuple[int, str]:
    """The close code and reason the server sent, reading (and dropping) frames until its
    close frame arrives.

    The close frame is what is awaited, not the TCP teardown after the closing handshake:
    under wrangler dev, workerd leaves the connection open after it until the client gives
    up (websockets' close_timeout, 10 s), where the local runtime closes it at once.
    """
    assert client.ws is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        received = client.ws.protocol.close_rcvd
        if received is not None:
            return received.code, received.reason
        try:
            await asyncio.wait_for(client.ws.recv(), 0.1)
        except TimeoutError:
            continue
        except ConnectionClosed as closed:
            assert closed.rcvd is not None
            return closed.rcvd.code, closed.rcvd.reason
    raise AssertionError("no close frame arrived")


async def test_the_host_revokes_every_session_of_a_user_before_exp(
    identity_runtime: RuntimeProcess, model: ScriptedModelServer, host: Host
) -> None:
    runtime = identity_runtime
    user = "auth0|revoked-1"
    laptop_jwt = host.sign(user)
    laptop_session = await sign_in(runtime, laptop_jwt, None)
    phone_session = await sign_in(runtime, host.sign(user), None)
    async with (
        ChatClient(runtime.url, runtime.ws_url, tenant="acme") as bystander,
        ChatClient(runtime.url, runtime.ws_url, token=laptop_session["token"]) as laptop,
        ChatClient(runtime.url, runtime.ws_url, token=phone_session["token"]) as phone,
    ):
        await bystander.connect()
        await laptop.connect()
        await phone.connect()
        thread = await laptop.new_thread("Before the sign-out")
        # An answer still streaming when the host signs the user out.
        model.script(Reply(text=["Half ", "an ", "answer"], pause_after_chunks=2, pause_seconds=20))
        await laptop.ask(thread, "Take your time")
        await laptop.frames_until("text_delta")

        # Refused revocations revoke nothing: a forged JWT, another tenant named.
        forged = host.forge(user)
        async with httpx.AsyncClient(base_url=runtime.url, timeout=20) as http:
            bad = await http.post(
                "/api/session/revoke", headers={"authorization": f"Bearer {forged}"}
            )
            assert bad.status_code == 401
            assert bad.json() == {"error": "unauthorized", "detail": "bad signature"}
            elsewhere = await http.post(
                "/api/session/revoke",
                json={"tenant": "other"},
                headers={"authorization": f"Bearer {host.sign(user)}"},
            )
            assert elsewhere.status_code == 403 and elsewhere.json()["error"] == "tenant_mismatch"
            assert (await phone.http.get("/api/threads")).status_code == 200

            revoked = await http.post(
                "/api/session/revoke", headers={"authorization": f"Bearer {host.sign(user)}"}
            )
        assert revoked.status_code == 200, revoked.text
        answer = revoked.json()
        assert answer["user_id"] == user
        assert (answer["sockets_closed"], answer["turns_cancelled"]) == (2, 1)

        # Both devices: sockets closed with 4003, every request (renewal too) a 401.
        for device in (laptop, phone):
            code, reason = await closed_with(device)
            assert code == 4003 and reason.startswith("session_revoked")
            for method, path in (
                ("GET", "/api/threads"),
                ("GET", "/api/me"),
                ("POST", "/api/session"),
            ):
                refused = await device.http.request(method, path)
                assert refused.status_code == 401, (method, path, refused.text)
                assert refused.json()["error"] == "session_revoked"
        with pytest.raises(InvalidStatus) as caught:
            async with connect(f"{runtime.ws_url}/api/chat?token={laptop.token}", open_timeout=10):
                pass
        assert caught.value.response.status_code == 401

        # The anonymous session of the same tenant is untouched.
        assert (await bystander.http.get("/api/threads")).status_code == 200
        await bystander.send_raw(json.dumps({"type": "ping"}))
        assert (await bystander.next_frame())["type"] == "pong"

    # The host signs the user in again: the account is there, the cut answer stored cancelled.
    # The host's JWTs from before the revocation are refused too, at sign-in and as a
    # bearer, and so is one that does not say when it was issued.
    async with httpx.AsyncClient(base_url=runtime.url, timeout=20) as http:
        for jwt in (laptop_jwt, host.sign(user, iat=None)):
            for method, path in (("POST", "/api/session"), ("GET", "/api/threads")):
                stale = await http.request(method, path, headers={"authorization": f"Bearer {jwt}"})
                assert stale.status_code == 401, (method, path, stale.text)
                assert stale.json()["error"] == "session_revoked"
    # `iat` counts seconds: a token the host issues after the revocation's second is new.
    await asyncio.sleep(max(0.0, (answer["revoked_up_to"] // 1000 + 1) - time.time()) + 0.05)
    again = await sign_in(runtime, host.sign(user), None)
    async with ChatClient(runtime.url, runtime.ws_url, token=again["token"]) as back:
        assert await thread_ids(back) == [thread]
        last = (await back.thread(thread))["messages"][-1]
        assert (last["status"], last["content"]) == ("cancelled", "Half ")
        await back.connect()
        model.script(Reply(text=["Welcome ", "back."]))
        assert answer_text(await back.turn(thread, "Still there?")) == "Welcome back."

        # "Sign out everywhere" with the user's own session: this one ends too.
        own = await back.http.post("/api/session/revoke")
        assert own.status_code == 200 and own.json()["sockets_closed"] == 1
        assert (await closed_with(back))[0] == 4003
        after = await back.http.get("/api/threads")
        assert after.status_code == 401 and after.json()["error"] == "session_revoked"
