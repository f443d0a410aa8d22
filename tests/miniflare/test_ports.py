"""Ports given on the command line are used or refused, never silently moved."""

from __future__ import annotations

import socket

import pytest

from miniflare.process import PortTaken, port_is_free, require_port
from miniflare.stack import data_server_port
from tests.support.time_wait import in_time_wait, lingering_port


def test_a_port_left_in_time_wait_by_a_quick_restart_is_free() -> None:
    port = lingering_port()
    assert in_time_wait(port)  # the case under test, really there
    assert port_is_free(port)
    assert data_server_port(port) == port  # --data-port is honoured


def test_a_port_someone_listens_on_is_refused_with_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert not port_is_free(port)
        with pytest.raises(PortTaken) as taken:
            data_server_port(port)
        message = str(taken.value)
        assert message.startswith(f"--data-port {port}: address already in use")
        assert "without --data-port any free one is taken" in message
        with pytest.raises(PortTaken, match=rf"^--port {port}: address already in use"):
            require_port("127.0.0.1", port, "--port")
