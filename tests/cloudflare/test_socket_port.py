"""The socket port (albert.ports.ChatSocket / SocketHub) on both runtimes.

Contract (src/albert/cloudflare/sockets.py): accept gives a 101 with the client
end; sends after close are dropped; reserved close codes become 1000; the hub
lists open sockets, across hibernation; messages are str or bytes.
"""

from __future__ import annotations

import pytest

from albert.cloudflare.sockets import (
    WorkersSocket,
    WorkersSocketHub,
    accept_websocket,
    accept_websocket_pair,
    message_payload,
)
from tests.cloudflare.platform import Platform


def _accept(platform: Platform) -> tuple[object, WorkersSocket]:
    response = accept_websocket(platform.ctx)
    assert response.status == 101
    assert response.web_socket is not None
    [socket] = WorkersSocketHub(platform.ctx).sockets()
    return response.web_socket, socket


async def test_accept_returns_the_client_end_and_the_hub_holds_the_server_end(
    platform: Platform,
) -> None:
    client, socket = _accept(platform)
    assert socket.raw is not client
    assert len(WorkersSocketHub(platform.ctx).sockets()) == 1
    accept_websocket(platform.ctx)
    assert len(WorkersSocketHub(platform.ctx).sockets()) == 2


async def test_the_accepted_end_can_send_before_the_response_is_returned(
    platform: Platform,
) -> None:
    # How a new socket gets the MCP status as its first frame.
    response, socket = accept_websocket_pair(platform.ctx, attachment="meta")
    socket.send('{"type": "mcp_status", "servers": []}')
    assert response.status == 101 and response.web_socket is not socket.raw
    [listed] = WorkersSocketHub(platform.ctx).sockets()
    assert listed.raw is socket.raw and socket.attachment() == "meta"
    listed.send('{"type": "pong"}')
    assert platform.frames(socket.raw) == [
        ("text", '{"type": "mcp_status", "servers": []}'),
        ("text", '{"type": "pong"}'),
    ]


async def test_text_frames_go_out_in_order(platform: Platform) -> None:
    _, socket = _accept(platform)
    for n in range(3):
        socket.send(f'{{"n": {n}}}')
    assert platform.frames(socket.raw) == [("text", f'{{"n": {n}}}') for n in range(3)]


@pytest.mark.parametrize(
    ("asked", "sent"),
    [
        (1000, 1000),
        (4001, 4001),
        (1011, 1011),
        (1005, 1000),
        (1006, 1000),
        (1015, 1000),
        (999, 1000),
    ],
)
async def test_close_codes_the_wire_cannot_carry_become_1000(
    platform: Platform, asked: int, sent: int
) -> None:
    _, socket = _accept(platform)
    socket.close(asked, "bye")
    assert platform.frames(socket.raw)[-1] == ("close", (sent, "bye"))


async def test_close_reason_is_cut_to_123_bytes_on_a_character_boundary(
    platform: Platform,
) -> None:
    _, socket = _accept(platform)
    socket.close(1000, "é" * 100)
    kind, (code, reason) = platform.frames(socket.raw)[-1]
    assert kind == "close" and code == 1000
    assert len(reason.encode()) <= 123 and reason == "é" * 61


async def test_after_close_sends_are_dropped_and_a_second_close_is_harmless(
    platform: Platform,
) -> None:
    _, socket = _accept(platform)
    socket.send("before")
    socket.close(1000, "done")
    socket.send("after")
    socket.close(1000, "again")
    assert platform.frames(socket.raw) == [("text", "before"), ("close", (1000, "done"))]
    assert WorkersSocketHub(platform.ctx).sockets() == []


def _survives_hibernation(platform: Platform) -> None:
    _, socket = _accept(platform)
    ctx = platform.wake()
    [again] = WorkersSocketHub(ctx).sockets()
    assert again.raw is socket.raw
    again.send("after waking")
    assert platform.frames(socket.raw) == [("text", "after waking")]


async def test_sockets_survive_hibernation(platform: Platform) -> None:
    _survives_hibernation(platform)


async def test_messages_arrive_as_str_or_bytes(platform: Platform) -> None:
    assert message_payload("héllo") == "héllo"
    payload = message_payload(platform.binary_message(b"\x00\x01\xfe"))
    assert payload == b"\x00\x01\xfe" and type(payload) is bytes
