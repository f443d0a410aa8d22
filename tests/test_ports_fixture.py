"""The `closed_port` fixture: a port that refuses connections and that nothing can take."""

from __future__ import annotations

import socket

import pytest


def test_a_closed_port_refuses_connections(closed_port: int) -> None:
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", closed_port), timeout=2).close()


def test_a_closed_port_cannot_be_taken_by_another_server(closed_port: int) -> None:
    with socket.socket() as other, pytest.raises(OSError, match="in use"):
        other.bind(("127.0.0.1", closed_port))
