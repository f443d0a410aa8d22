"""Token buckets, the in-process shared limiter, and the address key of new sessions."""

from __future__ import annotations

import pytest

from albert.limits.new_sessions import address_key
from albert.limits.shared import InMemoryLimiter
from albert.limits.token_bucket import TokenBucket
from albert.web import HttpRequest
from tests.support.clock import ManualClock


def test_a_bucket_allows_a_burst_then_refills_evenly() -> None:
    bucket = TokenBucket.full(3, 0)
    assert [bucket.take(3, 60, 0) for _ in range(3)] == [None, None, None]
    assert bucket.take(3, 60, 0) == 20.0  # one token per 20 s
    assert bucket.take(3, 60, 20_000) is None
    assert bucket.take(3, 60, 20_000) is not None


def test_a_clock_going_backwards_never_adds_tokens() -> None:
    bucket = TokenBucket.full(1, 10_000)
    assert bucket.take(1, 60, 10_000) is None
    assert bucket.take(1, 60, 0) is not None


async def test_the_in_memory_limiter_keeps_keys_apart_and_bounded() -> None:
    clock = ManualClock(1_000_000)
    limiter = InMemoryLimiter(clock, max_keys=100)
    assert await limiter.take("a", 1, 60) is None
    assert await limiter.take("a", 1, 60) is not None
    assert await limiter.take("b", 1, 60) is None
    for n in range(500):
        await limiter.take(f"flood-{n}", 1, 60)
    assert len(limiter._buckets) == 100


@pytest.mark.parametrize(
    ("ip", "key"),
    [
        ("203.0.113.7", "session-ip:203.0.113.7"),
        ("2001:db8:1:2:3:4:5:6", "session-ip:2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "session-ip:2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "session-ip:203.0.113.7"),
        ("", "session-ip:unknown"),
        ("not an address", "session-ip:unknown"),
        ("203.0.113.7, 10.0.0.1", "session-ip:unknown"),
    ],
)
def test_addresses_key_by_ipv4_or_ipv6_slash_64(ip: str, key: str) -> None:
    request = HttpRequest(method="POST", path="/api/session", headers={"cf-connecting-ip": ip})
    assert address_key(request) == key
