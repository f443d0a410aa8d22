"""Amounts, percentages, ranges, suffixes, number words and comparators."""

from __future__ import annotations

import pytest

from demo_planner.numbers import read_numbers
from demo_planner.text import find_entities, tokenize


def conditions(text: str) -> list[tuple[str, float | None, float | None, str]]:
    found = read_numbers(tokenize(find_entities(text).masked))
    return [(c.side, c.low, c.high, c.unit) for c in found.conditions]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("above 5 million", [("min", 5e6, None, "plain")]),
        ("over $10k", [("min", 1e4, None, "usd")]),
        ("at least 1.5B", [("min", 1.5e9, None, "plain")]),
        ("under 2bn dollars", [("max", None, 2e9, "usd")]),
        ("no more than 20%", [("max", None, 20.0, "percent")]),
        ("more than 2,500,000", [("min", 2.5e6, None, "plain")]),
        ("10M+", [("min", 1e7, None, "plain")]),
        ("$5m or more", [("min", 5e6, None, "usd")]),
        ("3% or less", [("max", None, 3.0, "percent")]),
        ("between 5 and 15%", [("range", 5.0, 15.0, "percent")]),
        ("between $100M and $1B", [("range", 1e8, 1e9, "usd")]),
        ("between 100 and 500 million", [("range", 1e8, 5e8, "plain")]),
        ("from 1M to 10M", [("range", 1e6, 1e7, "plain")]),
        ("5-10%", [("range", 5.0, 10.0, "percent")]),
        ("above half", [("min", 0.5, None, "fraction")]),
        ("more than a quarter", [("min", 0.25, None, "fraction")]),
        ("over two thirds", [("min", 2 / 3, None, "fraction")]),
        ("half a million", [("eq", 5e5, None, "plain")]),
        ("above one billion", [("min", 1e9, None, "plain")]),
        ("over twenty five percent", [("min", 25.0, None, "percent")]),
        ("at least two hundred thousand", [("min", 2e5, None, "plain")]),
        ("older than a year", [("min", 365.0, None, "days")]),
        ("at least 18 months old", [("min", 540.0, None, "days")]),
        ("> 1B", [("min", 1e9, None, "plain")]),
        ("<= 40", [("max", None, 40.0, "plain")]),
        ("fewer than 1000", [("max", None, 1000.0, "plain")]),
        ("35% APY", [("eq", 35.0, None, "percent")]),
    ],
)
def test_quantities_and_comparators(text: str, expected: list) -> None:
    assert conditions(text) == expected


def test_strict_comparators_are_marked_for_integer_fields() -> None:
    over, at_least = (read_numbers(tokenize(t)).conditions[0] for t in ("over 90", "at least 90"))
    assert over.strict and not at_least.strict


def test_counts_pages_and_windows_are_not_conditions() -> None:
    found = read_numbers(tokenize("top 5 vaults, page 3, apy over the last 90 days and 24h change"))
    assert found.conditions == []
    assert [n for n, _, _ in found.counts] == [5]
    assert found.page == 3
    assert [d for d, _, _ in found.windows_days] == [90.0]
    assert [h for h, _, _ in found.windows_hours] == [24.0]


def test_history_over_n_days_is_a_window_but_live_for_over_two_years_a_bound() -> None:
    window = read_numbers(tokenize("its history over 30 days"))
    bound = read_numbers(tokenize("protocols live for over 2 years"))
    assert [d for d, _, _ in window.windows_days] == [30.0] and window.conditions == []
    assert [(c.side, c.low) for c in bound.conditions] == [("min", 730.0)]


def test_digits_inside_addresses_names_and_vault_ids_are_not_amounts() -> None:
    text = (
        "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045 and vault "
        "defillama:base:10137e20-efbc-4e15-a733-17ecb52c48e8 for name2.eth"
    )
    entities = find_entities(text)
    assert entities.addresses and entities.vault_ids and entities.ens_names == ["name2.eth"]
    assert read_numbers(tokenize(entities.masked)).conditions == []


def test_a_bare_number_is_kept_only_as_a_candidate() -> None:
    (cond,) = read_numbers(tokenize("how much is 1 ETH")).conditions
    assert cond.bare and cond.value == 1.0
    assert read_numbers(tokenize("launched in 2021")).conditions == []
