"""What a chat socket is told: the MCP status first, and clear errors for every bad frame.

- A new socket's first frame is `mcp_status` with every server's current state
  (not only changes after it opened).
- Oversized frames get a `too_large` error frame and the socket stays usable, up to
  the transport's ceiling (16 MiB locally; no permessage-deflate) far above
  MAX_FRAME_BYTES; only beyond it is the socket closed with 1009.
- Resume of an unknown thread is `unknown_thread`, cancel with nothing running is
  `nothing_running`, and malformed frames are worded as frame errors.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from miniflare.server import WS_MAX_MESSAGE_BYTES
from tests.support.chat_client import ChatClient
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.runtime_process import RuntimeProcess

MAX_FRAME_BYTES = 64_000  # the default


@pytest.fixture(scope="module")
def vaults() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("vaults") as server:
        yield server


@pytest.fixture(scope="module")
def mcp_runtime(
    tmp_path_factory: pytest.TempPathFactory, vaults: InProcessMcpServer
) -> Iterator[RuntimeProcess]:
    variables = {
        "ALBERT_MODE": "local",
        "MCP_DEFAULT_SERVER_URL": vaults.url,
        "MCP_RETRY_BASE_SECONDS": "0.2",
        "MCP_RETRY_MAX_SECONDS": "0.4",
        "MCP_RETRY_ATTEMPTS": "2",
        "MCP_HALF_OPEN_COOLDOWN_SECONDS": "600",
    }
    with RuntimeProcess(tmp_path_factory.mktemp("frames"), variables) as process:
        yield process


async def first_frame(client: ChatClient) -> dict[str, Any]:
    await client.connect()
    assert client.ws is not None
    return dict(json.loads(await asyncio.wait_for(client.ws.recv(), 10)))


async def status_until(client: ChatClient, wanted: dict[str, str]) -> None:
    for _ in range(200):
        servers = (await client.http.get("/api/mcp/status")).json()["servers"]
        if {s["name"]: s["state"] for s in servers} == wanted:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never {wanted}: {servers}")


async def test_a_new_socket_is_told_every_servers_state_first(
    mcp_runtime: RuntimeProcess, closed_port: int
) -> None:
    async with ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as client:
        closed = f"http://127.0.0.1:{closed_port}/mcp"
        added = await client.http.post("/api/mcp/servers", json={"name": "gone", "url": closed})
        assert added.status_code in (200, 201), added.text
        await status_until(client, {"vaults": "ready", "gone": "failed"})

        frame = await first_frame(client)
        assert frame["type"] == "mcp_status", frame
        servers = {s["name"]: s for s in frame["servers"]}
        assert servers["vaults"]["state"] == "ready" and servers["vaults"]["tools"] > 0
        assert servers["vaults"]["kind"] == "vaults"
        gone = servers["gone"]
        assert gone["state"] == "failed" and gone["attempts"] == 2 and gone["last_error"]
        # Its half-open try is planned now that a socket is open (cool-down 600 s).
        assert 0 < gone["next_retry_in_seconds"] <= 600


async def test_the_first_frame_of_a_freshly_woken_object_says_connecting(
    runtime: RuntimeProcess,
) -> None:
    # wrangler.toml's default server (nothing listens there in this test): the object
    # wakes with the socket, and the socket hears at once that the server is connecting.
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        frame = await first_frame(client)
        assert frame["type"] == "mcp_status"
        [server] = frame["servers"]
        assert server["name"] == "vaults" and server["state"] == "connecting"


async def ping_pong(client: ChatClient) -> None:
    await client.send_raw(json.dumps({"type": "ping"}))
    assert (await client.next_frame())["type"] == "pong"


async def test_frames_up_to_the_transport_ceiling_get_too_large_and_the_socket_lives(
    runtime: RuntimeProcess,
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        big_chat = json.dumps(
            {"type": "chat", "thread_id": thread, "message_id": "m1", "text": "x" * 2_000_000}
        )
        for raw in (
            "x" * (MAX_FRAME_BYTES + 1),
            big_chat,  # the probe's 2 MB frame
            b"\x00" * 2_000_000,
            "y" * (WS_MAX_MESSAGE_BYTES - 1024),
        ):
            await client.send_raw(raw)
            frame = await client.next_frame(timeout=30)
            assert frame["type"] == "error" and frame["code"] == "too_large", frame
            assert f"{MAX_FRAME_BYTES} bytes" in frame["message"]
            await ping_pong(client)
        assert (await client.thread(thread))["messages"] == []


async def test_beyond_the_transport_ceiling_the_socket_is_closed_with_1009(
    runtime: RuntimeProcess,
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        async with connect(
            f"{runtime.ws_url}/api/chat?token={client.token}", max_size=None, open_timeout=10
        ) as ws:
            with pytest.raises(ConnectionClosed) as closed:
                # No compression: the server may close while the message is still going out.
                await ws.send("z" * (WS_MAX_MESSAGE_BYTES + 1))
                for _ in range(10):
                    await asyncio.wait_for(ws.recv(), 30)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_resume_and_cancel_say_what_is_wrong(runtime: RuntimeProcess) -> None:
    async with (
        ChatClient(runtime.url, runtime.ws_url) as client,
        ChatClient(runtime.url, runtime.ws_url) as other,
    ):
        await client.connect()
        thread = await client.new_thread()
        not_mine = await other.new_thread()
        cases = [
            ({"type": "resume", "thread_id": "t_never_made", "after_seq": 3}, "unknown_thread"),
            ({"type": "resume", "thread_id": "t_never_made", "turn_id": "m1"}, "unknown_thread"),
            ({"type": "resume", "thread_id": not_mine}, "unknown_thread"),
            ({"type": "cancel", "thread_id": "t_never_made"}, "unknown_thread"),
            ({"type": "cancel", "thread_id": not_mine}, "unknown_thread"),
            ({"type": "cancel", "thread_id": thread}, "nothing_running"),
        ]
        for sent, code in cases:
            await client.send_raw(json.dumps(sent))
            frame = await client.next_frame()
            assert (frame["type"], frame["code"]) == ("error", code), (sent, frame)
            assert frame["thread_id"] == sent["thread_id"] and not frame["retryable"]
            await ping_pong(client)
        await client.send_raw(json.dumps({"type": "cancel", "thread_id": thread}))
        told = await client.next_frame()
        assert told["message"] == "nothing to cancel: no turn is running in this thread"
        # A known thread with nothing running still resumes as before: nothing to replay.
        await client.send_raw(json.dumps({"type": "resume", "thread_id": thread}))
        resync = await client.next_frame()
        assert resync["type"] == "resync" and resync["running"] is False


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "frame is not valid JSON (key must be a string at line 1 column 2)"),
        (b"\xff\xfe", "frame is not valid JSON (expected value at line 1 column 1)"),
        ("[1, 2]", "frame: Input should be an object"),
        ("{}", "frame has no 'type' field"),
        (
            '{"type": "launch"}',
            "unknown frame type 'launch'; expected one of 'chat', 'cancel', 'ping', 'resume', "
            "'confirm', 'regenerate'",
        ),
        ('{"type": "ping", "x": 1}', "ping frame: x: Extra inputs are not permitted"),
        (
            '{"type": "resume", "thread_id": "t", "after_seq": -1}',
            "resume frame: after_seq: Input should be greater than or equal to 0",
        ),
        (
            '{"type": "confirm", "thread_id": "t", "turn_id": "m", "call_id": "c"}',
            "confirm frame: approved: Field required",
        ),
    ],
)
async def test_malformed_frames_are_worded_as_frame_errors(
    runtime: RuntimeProcess, raw: str | bytes, message: str
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        await client.send_raw(raw)
        frame = await client.next_frame()
        assert (frame["type"], frame["code"]) == ("error", "bad_frame"), frame
        assert frame["message"] == message
        assert "arguments" not in frame["message"]
        await ping_pong(client)


def test_the_ceiling_is_far_above_the_frame_limit(tmp_path: Path) -> None:
    assert WS_MAX_MESSAGE_BYTES >= 4 * MAX_FRAME_BYTES
