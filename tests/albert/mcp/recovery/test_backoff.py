"""The recovery policy: five retries, each after a wait drawn between 0 and its ceiling
(1, 2, 4, 8, 16 s: full jitter), then half-open after a cool-down."""

from __future__ import annotations

import random
from statistics import fmean

import pytest

from albert.mcp.recovery_policy import RecoveryCycle, RecoveryPolicy
from albert.settings import Settings

SEED = 7


def test_default_ceilings_are_five_retries_from_one_to_sixteen_seconds() -> None:
    policy = RecoveryPolicy.from_settings(Settings())
    assert policy.ceilings() == [1.0, 2.0, 4.0, 8.0, 16.0]


def test_ceilings_come_from_settings_and_are_capped() -> None:
    settings = Settings.from_env(
        {
            "MCP_RETRY_BASE_SECONDS": "0.05",
            "MCP_RETRY_MAX_SECONDS": "0.15",
            "MCP_RETRY_ATTEMPTS": "4",
        }
    )
    assert RecoveryPolicy.from_settings(settings).ceilings() == [0.05, 0.1, 0.15, 0.15]


def test_attempts_are_numbered_from_one() -> None:
    with pytest.raises(ValueError):
        RecoveryPolicy().ceiling(0)
    with pytest.raises(ValueError):
        RecoveryPolicy().delay(0, random.Random(SEED).uniform)


def test_each_delay_is_drawn_over_the_whole_range_up_to_its_ceiling() -> None:
    policy = RecoveryPolicy()
    draws = random.Random(SEED)
    for attempt, ceiling in enumerate(policy.ceilings(), start=1):
        delays = [policy.delay(attempt, draws.uniform) for _ in range(500)]
        assert all(0 <= d <= ceiling for d in delays), attempt
        # Full jitter: anywhere from nothing to the ceiling, half of it on average.
        assert min(delays) < 0.05 * ceiling and max(delays) > 0.95 * ceiling
        assert 0.4 * ceiling < fmean(delays) < 0.6 * ceiling


def test_a_source_that_strays_out_of_its_bounds_is_held_to_them() -> None:
    policy = RecoveryPolicy()
    assert policy.delay(3, lambda low, high: high + 5) == 4.0
    assert policy.delay(3, lambda low, high: low - 5) == 0.0


def test_a_cycle_plans_retries_under_their_ceilings_fails_then_opens_after_the_cool_down() -> None:
    policy = RecoveryPolicy(base_seconds=1, max_seconds=16, attempts=5, cooldown_seconds=60)
    uniform = random.Random(SEED).uniform
    state = RecoveryCycle()
    state.begin(policy, now=1000.0, uniform=uniform)
    assert state.next_at is not None and not state.exhausted
    planned = []
    now = 1000.0
    for _ in range(5):
        assert state.next_at is not None
        planned.append(state.next_at - now)
        now = state.next_at
        assert state.due(now) and not state.due(now - 0.01)
        state.record_failure(policy, now, uniform)
    assert all(
        0 <= wait <= ceiling for wait, ceiling in zip(planned, policy.ceilings(), strict=True)
    )
    assert state.exhausted and state.next_at is None and state.attempts == 5
    assert state.failed_at == now
    assert not state.half_open_ready(policy, now + 59)
    assert state.half_open_ready(policy, now + 60)
    state.reset()
    assert not state.exhausted and state.attempts == 0


def test_zero_attempts_fails_at_once() -> None:
    state = RecoveryCycle()
    state.begin(RecoveryPolicy(attempts=0), now=5.0, uniform=random.Random(SEED).uniform)
    assert state.exhausted and state.next_at is None


def test_a_planned_retry_drawn_again_keeps_its_number_and_ceiling() -> None:
    policy = RecoveryPolicy()
    uniform = random.Random(SEED).uniform
    state = RecoveryCycle()
    state.begin(policy, now=0.0, uniform=uniform)
    state.record_failure(policy, now=1.0, uniform=uniform)
    state.replan(policy, now=100.0, uniform=uniform)
    assert state.attempts == 1 and state.next_at is not None
    assert 100.0 <= state.next_at <= 100.0 + policy.ceiling(2)
