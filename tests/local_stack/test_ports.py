"""Ports given on the command line are used or refused, never silently moved."""

from __future__ import annotations

import asyncio
import socket

import pytest

from child_processes import PortTaken, port_is_free, reserve_port
from local_stack.stack import reserve_data_port
from tests.support.time_wait import in_time_wait, lingering_port


def test_a_port_left_in_time_wait_by_a_quick_restart_is_free() -> None:
    port = lingering_port()
    assert in_time_wait(port)  # the case under test, really there
    assert port_is_free(port)
    with reserve_data_port(port) as sock:  # --data-port is honoured
        assert sock.getsockname()[1] == port


def test_a_port_someone_listens_on_is_refused_with_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert not port_is_free(port)
        with pytest.raises(PortTaken) as taken:
            reserve_data_port(port)
        message = str(taken.value)
        assert message.startswith(f"--data-port {port}: address already in use")
        assert "without --data-port any free one is taken" in message
        with pytest.raises(PortTaken, match=rf"^--port {port}: address already in use"):
            reserve_port("127.0.0.1", port, "--port")


def test_a_reserved_port_stays_taken_until_it_is_let_go() -> None:
    # What `albert dev` relies on through its seconds of seeding: a port checked at the
    # start cannot be taken by anything started (or bound with SO_REUSEADDR) meanwhile.
    sock = reserve_port("127.0.0.1", 0, "--port")
    port = sock.getsockname()[1]
    with sock:
        assert not port_is_free(port)
        with pytest.raises(PortTaken, match="address already in use"):
            reserve_port("127.0.0.1", port, "--port")
    assert port_is_free(port)


def test_a_port_that_cannot_be_listened_on_for_another_reason_says_so() -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine.
    with pytest.raises(PortTaken, match=r"^--port 8787: cannot listen on 192\.0\.2\.1:8787 \("):
        reserve_port("192.0.2.1", 8787, "--port")


async def test_connections_to_a_reserved_port_send_without_waiting_for_acks() -> None:
    # Served through asyncio as uvicorn serves it: TCP_NODELAY on each connection, or a
    # response written in two sends waits ~40 ms for the client's delayed ACK.
    sock = reserve_port("127.0.0.1", 0, "--port")
    flags: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.get_extra_info("socket")
        flags.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=sock)
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
    assert len(flags) == 1 and flags[0] != 0
