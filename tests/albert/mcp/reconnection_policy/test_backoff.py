"""The reconnection policy: 1, 2, 4, 8, 16 s, then half-open after a cool-down."""

from __future__ import annotations

import pytest

from albert.mcp.reconnection_policy import ReconnectPolicy, RetryState
from albert.settings import Settings


def test_default_schedule_is_five_retries_from_one_to_sixteen_seconds() -> None:
    policy = ReconnectPolicy.from_settings(Settings())
    assert policy.schedule() == [1.0, 2.0, 4.0, 8.0, 16.0]


def test_schedule_comes_from_settings_and_is_capped() -> None:
    settings = Settings.from_env(
        {
            "MCP_RETRY_BASE_SECONDS": "0.05",
            "MCP_RETRY_MAX_SECONDS": "0.15",
            "MCP_RETRY_ATTEMPTS": "4",
        }
    )
    assert ReconnectPolicy.from_settings(settings).schedule() == [0.05, 0.1, 0.15, 0.15]


def test_attempts_are_numbered_from_one() -> None:
    with pytest.raises(ValueError):
        ReconnectPolicy().delay(0)


def test_a_cycle_plans_each_retry_then_fails_then_opens_after_the_cool_down() -> None:
    policy = ReconnectPolicy(base_seconds=1, max_seconds=16, attempts=5, cooldown_seconds=60)
    state = RetryState()
    state.begin(policy, now=1000.0)
    assert state.next_at == 1001.0 and not state.exhausted
    planned = []
    now = 1000.0
    for _ in range(5):
        assert state.next_at is not None
        now = state.next_at
        assert state.due(now) and not state.due(now - 0.01)
        state.record_failure(policy, now)
        planned.append(now)
    assert [b - a for a, b in zip([1000.0, *planned], planned, strict=False)] == [1, 2, 4, 8, 16]
    assert state.exhausted and state.next_at is None and state.attempts == 5
    assert not state.half_open_ready(policy, now + 59)
    assert state.half_open_ready(policy, now + 60)
    state.reset()
    assert not state.exhausted and state.attempts == 0


def test_zero_attempts_fails_at_once() -> None:
    state = RetryState()
    state.begin(ReconnectPolicy(attempts=0), now=5.0)
    assert state.exhausted and state.next_at is None
