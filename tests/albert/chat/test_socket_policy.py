"""The socket policy: the oldest sockets go past the cap, expired ones close with 4001."""

from __future__ import annotations

from albert.chat.socket_policy import FrameGate, SocketMeta, SocketPolicy
from tests.support.clock import ManualClock
from tests.support.sockets import AttachedSocket, SocketList

START_MS = 1_700_000_000_000


class Sock(AttachedSocket):
    def __init__(self, opened_at_ms: int, expires_at: int) -> None:
        super().__init__(SocketMeta(opened_at_ms=opened_at_ms, expires_at=expires_at).encode())


def test_the_oldest_sockets_are_closed_past_the_cap_whatever_their_order() -> None:
    clock = ManualClock(START_MS)
    far = clock.ms // 1000 + 3600
    sockets = [Sock(opened, far) for opened in (5, 1, 4, 2, 3)]
    policy = SocketPolicy(SocketList(sockets), clock, max_sockets=3)
    assert policy.admit_newest() == 2
    closed = sorted(s.closed is not None for s in sockets)
    assert [s.closed[0] for s in sockets if s.closed] == [4008, 4008]
    assert {s.meta for s in sockets if s.closed} == {sockets[1].meta, sockets[3].meta}
    assert closed.count(False) == 3 and policy.admit_newest() == 0


def test_expired_sockets_are_closed_and_never_listed() -> None:
    clock = ManualClock(START_MS)
    now = clock.ms // 1000
    fresh, stale = Sock(1, now + 60), Sock(2, now)
    policy = SocketPolicy(SocketList([fresh, stale]), clock, max_sockets=8)
    assert policy.sockets() == [fresh]
    assert stale.closed is not None and stale.closed[0] == 4001
    clock.ms += 60_000
    assert policy.ended(fresh) and policy.sockets() == []


def test_the_frame_gate_tells_once_then_drops_until_it_refills() -> None:
    clock = ManualClock(START_MS)
    gate = FrameGate(3, clock, window_seconds=60)
    sock = Sock(1, 0)
    assert [gate.admit(sock) for _ in range(6)] == [True, True, True, False, False, False]
    assert len(sock.sent) == 1 and '"rate_limited"' in sock.sent[0]
    clock.ms += 20_000
    assert gate.admit(sock) and not gate.admit(sock)
    assert len(sock.sent) == 2
