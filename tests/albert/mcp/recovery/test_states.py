"""The per-server state machine: the table of allowed moves, and a broadcast per change."""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

import pytest

from albert.clock import SystemClock
from albert.mcp.configs import McpServerConfig
from albert.mcp.recovery_policy import TRANSITIONS, IllegalTransition, RecoveryPolicy
from albert.mcp.remote_tool import RemoteToolSpec
from albert.mcp.server import McpServer
from tests.albert.mcp.recovery.scripted import lone_server

POLICY = RecoveryPolicy(base_seconds=1, max_seconds=4, attempts=2, cooldown_seconds=60)
SPECS = [RemoteToolSpec(name="search_vaults", description="", input_schema={})]


@dataclass
class FakeConnection:
    instructions: str | None = "Vault and yield data."
    server_name: str = "vault-server"


class Broadcasts:
    """The client's one socket, counting the status frames it is sent."""

    def __init__(self) -> None:
        self.count = 0

    def sockets(self) -> list[Broadcasts]:
        return [self]

    def send(self, text: str) -> None:
        self.count += 1

    def close(self, code: int, reason: str) -> None:
        pass


def make(enabled: bool = True) -> tuple[McpServer, Broadcasts]:
    sent = Broadcasts()
    config = McpServerConfig(
        name="vaults", url="http://127.0.0.1:1/mcp", enabled=enabled, kind="vaults"
    )
    return lone_server(config, SystemClock(), sent), sent


def test_a_new_server_starts_connecting_or_disabled() -> None:
    assert make()[0].state == "connecting"
    assert make(enabled=False)[0].state == "disabled"


def test_a_full_cycle_broadcasts_every_transition() -> None:
    server, sent = make()
    server.connected(FakeConnection(), SPECS, at=10.0)  # type: ignore[arg-type]
    assert (server.state, server.kind, server.checked_at, sent.count) == ("ready", "vaults", 10, 1)
    assert server.lost("connection closed") and server.conn is None
    assert (server.state, server.last_error, sent.count) == ("reconnecting", "connection closed", 2)
    assert not server.lost("again")  # already down: nothing changes, nothing is sent
    assert sent.count == 2
    uniform = random.Random(3).uniform
    server.recovery.begin(POLICY, now=0, uniform=uniform)
    server.recovery_planned()
    for attempt in (1, 2):
        server.recovery.record_failure(POLICY, now=attempt, uniform=uniform)
        server.retry_failed()
    assert (server.state, server.recovery.attempts, sent.count) == ("failed", 2, 5)
    server.half_open_failed()
    assert (server.state, sent.count) == ("failed", 6)
    server.connected(FakeConnection(), SPECS, at=99.0)  # type: ignore[arg-type]
    assert server.state == "ready" and server.recovery.attempts == 0 and sent.count == 7


def test_changes_besides_the_state_are_broadcast_only_when_they_change() -> None:
    server, sent = make()
    server.connected(FakeConnection(), SPECS, at=1.0)  # type: ignore[arg-type]
    server.tools_listed(SPECS, at=2.0)
    server.quarantine([])
    assert sent.count == 1
    server.tools_listed([*SPECS, SPECS[0].model_copy(update={"name": "top_yields"})], at=3.0)
    server.quarantine(["bad_tool: hidden instructions"])
    assert sent.count == 3 and server.quarantined == ["bad_tool: hidden instructions"]


@pytest.mark.parametrize(
    ("source", "target"),
    [(s, t) for s, allowed in TRANSITIONS.items() for t in TRANSITIONS if t not in allowed],
)
def test_moves_outside_the_table_are_refused(source: str, target: str) -> None:
    server, sent = make()
    server.state = source  # type: ignore[assignment]
    with pytest.raises(IllegalTransition):
        server._enter(target, "test")  # type: ignore[arg-type]
    assert server.state == source and sent.count == 0


def test_a_disabled_server_cannot_come_back_by_itself() -> None:
    server, _ = make()
    server.disabled()
    with pytest.raises(IllegalTransition):
        server.connected(FakeConnection(), SPECS, at=1.0)  # type: ignore[arg-type]
    assert server.conn is None and server.tools is None  # refused before anything changed
    with pytest.raises(IllegalTransition):
        server.recovery_planned()


def test_a_failing_server_is_a_warning_once_per_change_not_once_per_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, _ = make()
    uniform = random.Random(3).uniform
    with caplog.at_level(logging.INFO, logger="albert.mcp.server"):
        server.connect_failed("server unreachable (check its URL, and that it is running)")
        server.recovery.begin(POLICY, now=0, uniform=uniform)
        server.recovery_planned()  # connecting → reconnecting: a warning
        server.recovery.record_failure(POLICY, now=1, uniform=uniform)
        server.retry_failed()  # still reconnecting: information
        server.recovery.record_failure(POLICY, now=2, uniform=uniform)
        server.retry_failed()  # reconnecting → failed: a warning
        server.half_open_failed()  # still failed: information
        server.connected(FakeConnection(), SPECS, at=9.0)  # type: ignore[arg-type]
        server.lost("connection closed")  # ready → reconnecting: a warning
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3, warnings
    assert "connecting → reconnecting" in warnings[0] and "server unreachable" in warnings[0]
    assert "reconnecting → failed" in warnings[1]
    assert "ready → reconnecting" in warnings[2] and "connection closed" in warnings[2]
    assert all("\n" not in line for line in warnings)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("reconnecting → reconnecting" in line for line in infos), infos
