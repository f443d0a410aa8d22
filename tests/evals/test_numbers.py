"""The figure extractor: what counts as a figure, a date, or neither, and when it is backed."""

from __future__ import annotations

import pytest

from evals.numbers import extract, parse_single, ungrounded


def figures(text: str) -> list[tuple[str, float]]:
    return [(q.kind, q.value) for q in extract(text) if q.kind != "date"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("market cap $1.2M", [("money", 1.2e6)]),
        ("APY 3.4%", [("percent", 3.4)]),
        ("1,234.5 tokens", [("number", 1234.5)]),
        ("price $0.00000799", [("money", 7.99e-6)]),
        ("420.69T circulating", [("number", 4.2069e14)]),
        ("about 2.5 billion dollars", [("number", 2.5e9)]),
        ("rank #30", [("number", 30.0)]),
        ("down -0.44% today", [("percent", 0.44)]),
        ("FDV is 2.8x liquidity", [("number", 2.8)]),
    ],
)
def test_reads_figures_as_a_reader_would(text: str, expected: list[tuple[str, float]]) -> None:
    got = figures(text)
    assert [k for k, _ in got] == [k for k, _ in expected]
    assert all(v == pytest.approx(e) for (_, v), (_, e) in zip(got, expected, strict=True))


@pytest.mark.parametrize(
    "text",
    [
        "contract 0x6982508145454Ce325dDbE47a25d4ec3d2311933",
        "vault Yearn Stablecoin 0x0741…3215, or ask “Is 0x… risky?” or 0x12...ab",
        "id defillama:base:10137e20-efbc-4e15-a733-17ecb52c48e8",
        "https://cryptopanic.com/news/20750159/F2Pool",
        "CL100 pool of USD0 on F2Pool, an ERC-20 token",
        "24h volume and 7d change",
        "at 15:20 UTC",
        "1. first item\n2. second item",
        "3 vaults match",
    ],
)
def test_identifiers_windows_times_list_numbers_and_small_counts_are_not_figures(
    text: str,
) -> None:
    assert figures(text) == []


def test_dates_are_dates_in_every_spelling_and_never_prices() -> None:
    dates = [q.date for q in extract("2024-05-27, May 27, 2024, 27 May 2024 and 2023") if q.date]
    assert dates == ["2024-05-27", "2024-05-27", "2024-05-27", "2023"]
    # A date in a tool result does not back a price of 2024 or 27.
    assert [q.text for q in ungrounded("it costs $2,024", ["on 2024-05-27"])] == ["$2,024"]
    assert ungrounded("the ATH was on May 27, 2024", ["ATH on 2024-05-27"]) == []
    assert [q.text for q in ungrounded("the ATH was on May 28, 2024", ["2024-05-27"])] == [
        "May 28, 2024"
    ]


def test_a_rounded_figure_is_backed_by_its_source_and_a_wrong_one_is_not() -> None:
    source = ["market cap $3.36B, price $0.00000799, 24h volume $617.45M, APY 132.41%"]
    assert ungrounded("about $3.4B at $0.000008, APY ~132%, volume $617M", source) == []
    loose = ungrounded("about $3.5B, APY 140%, volume $620M", source)
    assert [q.text for q in loose] == ["$3.5B", "140%", "$620M"]


def test_parse_single_only_for_a_lone_figure() -> None:
    single = parse_single("$3.36B")
    assert single is not None and single.value == pytest.approx(3.36e9)
    assert parse_single("401,347 ETH") is None
    assert parse_single("between $1 and $2") is None
