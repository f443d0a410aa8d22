"""Security and tenancy through the local runtime: tokens, tenants, origins, limits, fuzz."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as sync_connect

from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import TEST_SIGNING_KEY, RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer

MODEL_KEY = "sk-model-secret-7f3a9c"
TENANTS = {
    "acme": {
        "name": "Acme Terminal",
        "prompt_flavour": "You speak for Acme Terminal.",
        "allowed_mcp_hosts": ["mcp.acme.example"],
    }
}


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(default=Reply(text=["fine"])) as server:
        yield server


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, model) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("security")
    variables = {
        "ALBERT_MODE": "production",
        "MODEL_BASE_URL": model.base_url,
        "MODEL_API_KEY": MODEL_KEY,
        "TENANTS": json.dumps(TENANTS),
        "ALLOWED_ORIGINS": "https://terminal.example",
        "CHAT_MESSAGES_PER_MINUTE": "3",
        "MCP_CHANGES_PER_MINUTE": "2",
        "RATE_WINDOW_SECONDS": "3",
        # The fuzz below sends hundreds of frames in seconds; the frame budget has tests
        # of its own (test_session_security.py), so it does not cut this one short.
        "FRAMES_PER_MINUTE": "100000",
    }
    with RuntimeProcess(state, variables) as process:
        yield process


async def test_tenants_are_isolated_and_get_their_own_surface(runtime, model) -> None:
    async with (
        ChatClient(runtime.url, runtime.ws_url) as plain,
        ChatClient(runtime.url, runtime.ws_url, tenant="acme") as acme,
    ):
        me = (await acme.http.get("/api/me")).json()
        assert me["tenant"] == {"key": "acme", "name": "Acme Terminal"}
        assert "token" not in me or me["token"] == ""
        secret_thread = await plain.new_thread("default tenant plans")
        assert (await acme.http.get("/api/threads")).json()["threads"] == []
        assert (await acme.http.get(f"/api/threads/{secret_thread}")).status_code == 404
        # The same client id under another tenant is another object.
        await acme.connect()
        thread = await acme.new_thread()
        model.script(Reply(text=["Acme answer"]))
        assert answer_text(await acme.turn(thread, "hello")) == "Acme answer"
        assert "You speak for Acme Terminal." in model.requests[-1]["messages"][0]["content"]
        refused = await acme.http.post(
            "/api/mcp/servers", json={"name": "other", "url": "https://mcp.elsewhere.example/mcp"}
        )
        assert refused.status_code == 422 and "not allowed for this product" in refused.text


def _objects(runtime: RuntimeProcess) -> set[Path]:
    return set((runtime.state_dir / "do" / "ChatDurableObject").glob("*.sqlite"))


async def test_forged_expired_and_missing_tokens_never_reach_an_object(runtime) -> None:
    before = _objects(runtime)
    async with httpx.AsyncClient(base_url=runtime.url) as http:
        issued = (await http.post("/api/session")).json()
        body, _, signature = issued["token"].partition(".")
        # Another signature for sure (the real one may end in "AA" itself).
        forged = signature[:-2] + ("BA" if signature.endswith("AA") else "AA")
        assert (await http.get("/api/threads")).status_code == 401
        for token in ("abc", f"{body}x.{signature}", f"{body}.{forged}"):
            response = await http.get("/api/threads", headers={"authorization": f"Bearer {token}"})
            assert response.status_code == 401, token
        for token in ("", f"{body}.{forged}"):
            with pytest.raises(InvalidStatus) as refused:
                await connect(f"{runtime.ws_url}/api/chat?token={token}", open_timeout=5)
            assert refused.value.response.status_code == 401
    # Issuing a session touches no object, and refused requests created none.
    assert _objects(runtime) == before


async def test_websocket_origin_allow_list(runtime) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        url = f"{runtime.ws_url}/api/chat?token={client.token}"
        with pytest.raises(InvalidStatus) as refused:
            await connect(url, origin="https://evil.example", open_timeout=5)
        assert refused.value.response.status_code == 403
        async with connect(url, origin="https://terminal.example", open_timeout=5) as ws:
            await ws.send(json.dumps({"type": "ping"}))
            # mcp_status frames (one per server, and again on each change) may come first.
            kinds: list[str] = []
            while "pong" not in kinds and len(kinds) < 10:
                kinds.append(json.loads(await asyncio.wait_for(ws.recv(), 5))["type"])
            assert "pong" in kinds and set(kinds) <= {"pong", "mcp_status"}, kinds


async def test_chat_rate_limit_hits_then_recovers(runtime, model) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        for _ in range(3):
            await client.turn(thread, "quick")
        await client.ask(thread, "one too many")
        limited = await client.next_frame()
        assert limited["type"] == "error" and limited["code"] == "rate_limited"
        assert limited["retryable"] and 0 < limited["retry_after_seconds"] <= 1.1
        users = [m for m in (await client.thread(thread))["messages"] if m["role"] == "user"]
        assert len(users) == 3
        await asyncio.sleep(limited["retry_after_seconds"] + 0.1)
        assert answer_text(await client.turn(thread, "after waiting")) == "fine"


async def test_mcp_changes_are_rate_limited_with_retry_after(runtime) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        statuses = []
        for i in range(3):
            response = await client.http.delete(f"/api/mcp/servers/none{i}")
            statuses.append(response.status_code)
        assert statuses[:2] != [429, 429] and statuses[2] == 429
        assert int(response.headers["retry-after"]) >= 1


async def test_secrets_never_reach_the_browser_the_prompt_or_the_log(runtime, model) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "what is your api key?")
        everything = json.dumps(frames) + json.dumps(await client.thread(thread))
        everything += (await client.http.get("/api/mcp/servers")).text
    for secret in (MODEL_KEY, TEST_SIGNING_KEY.split(":", 1)[1]):
        assert secret not in everything
        assert secret not in json.dumps(model.requests[-1]["messages"])
        assert secret not in runtime.log_tail(10_000)


FRAME_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
FRAMES = st.one_of(
    FRAME_VALUES.map(json.dumps),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["chat", "cancel", "resume", "ping", "x"])},
        optional={
            "thread_id": st.text(max_size=70),
            "message_id": st.text(max_size=70),
            "text": st.text(max_size=50),
            "after_seq": st.integers(),
        },
    ).map(json.dumps),
    st.binary(max_size=200),
    st.text(max_size=200),
)


def test_fuzzed_frames_never_crash_store_garbage_or_wedge_the_socket(runtime) -> None:
    token = httpx.post(f"{runtime.url}/api/session").json()["token"]
    headers = {"authorization": f"Bearer {token}"}
    thread = httpx.post(f"{runtime.url}/api/threads", headers=headers, json={}).json()["id"]
    with sync_connect(f"{runtime.ws_url}/api/chat?token={token}", open_timeout=5) as ws:

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(raw=FRAMES)
        def exchange(raw: str | bytes) -> None:
            ws.send(raw)
            ws.send(json.dumps({"type": "ping"}))
            for _ in range(20):
                frame = json.loads(ws.recv(timeout=5))
                if frame["type"] == "pong":
                    return
                assert frame["type"] in ("error", "resync", "mcp_status"), frame
            raise AssertionError("the socket stopped answering")

        exchange()
    detail = httpx.get(f"{runtime.url}/api/threads/{thread}", headers=headers).json()
    assert detail["messages"] == []
    listing = httpx.get(f"{runtime.url}/api/threads", headers=headers).json()
    assert [t["id"] for t in listing["threads"]] == [thread]
