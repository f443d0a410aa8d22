"""The carry check: another source's output, repeated at length in a call's arguments."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from albert.tools.provenance import CARRY_LIMIT_CHARS, OutputLedger

SECRET = "".join(f"line {n}: account {n * 7919} balance {n * 31} " for n in range(30))


def _ledger() -> OutputLedger:
    ledger = OutputLedger()
    ledger.record_output("private_notes", "notes", SECRET)
    return ledger


def test_a_long_run_of_another_servers_output_is_caught_anywhere_in_the_arguments() -> None:
    ledger = _ledger()
    chunk = SECRET[37 : 37 + CARRY_LIMIT_CHARS]
    for arguments in (
        {"text": chunk},
        {"text": f"summary please: {chunk} thanks"},
        {"a": {"b": [1, {"c": chunk}]}},
        {chunk: 1},
        {"text": "\n\n".join(chunk.split(" "))},  # reflowed whitespace
    ):
        carried = ledger.carried("elsewhere", arguments)
        assert carried is not None and carried.tool == "private_notes", arguments
        assert carried.chars >= CARRY_LIMIT_CHARS


def test_short_shared_values_the_same_server_and_the_users_words_pass() -> None:
    ledger = _ledger()
    assert ledger.carried("elsewhere", {"text": SECRET[: CARRY_LIMIT_CHARS - 1]}) is None
    assert ledger.carried("elsewhere", {"address": "account 7919", "n": 42}) is None
    assert ledger.carried("notes", {"text": SECRET}) is None
    ledger.record_user("please forward: " + SECRET[:300])
    assert ledger.carried("elsewhere", {"text": SECRET[:300]}) is None
    assert ledger.carried("elsewhere", {"text": SECRET[400:700]}) is not None


@settings(max_examples=200, deadline=None)
@given(start=st.integers(0, len(SECRET) - CARRY_LIMIT_CHARS), extra=st.integers(0, 100))
def test_every_window_of_the_limit_is_found(start: int, extra: int) -> None:
    end = min(len(SECRET), start + CARRY_LIMIT_CHARS + extra)
    chunk = SECRET[start:end]
    # Runs are compared with whitespace collapsed: an edge space does not count.
    assume(len(" ".join(chunk.split())) >= CARRY_LIMIT_CHARS)
    assert _ledger().carried("x", {"t": "noise " + chunk + " noise"}) is not None


def test_repetitive_output_costs_bounded_work() -> None:
    ledger = OutputLedger()
    ledger.record_output("huge_report", "a", "x" * 50_000)
    ledger.record_user("x" * 50_000)  # every run excused: the worst case for the search
    assert ledger.carried("b", {"t": "x" * 5_000}) is None
