"""Hypothesis strategies for token-search queries: valid ones and ones that must be refused."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from albert.tools.token_search.query import (
    MAX_HOLDERS,
    MAX_PRICE_CHANGE_PCT,
    MAX_RATIO,
    MAX_USD,
    Chain,
    SortField,
)
from data_server.tokens.seed import build_token_documents

_SEED = build_token_documents()


def _seed_values(field: str) -> list[Any]:
    """Values the seed documents hold, so bounds land exactly on them (boundary cases)."""
    return sorted({v for d in _SEED if (v := getattr(d, field)) is not None})


# Bounds exactly on seed values, near the seed data's magnitudes, and at the extremes.
usd = st.one_of(
    st.sampled_from(_seed_values("marketcap") + _seed_values("liquidity")),
    st.sampled_from([0.0, 1.0, 1e3, 1e6, 5e7, 1e8, 1e9, 1e10, 1e11, 1e12, MAX_USD]),
    st.floats(min_value=0, max_value=MAX_USD, allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=10**12).map(float),
)
ratio = st.one_of(
    st.sampled_from(_seed_values("vol_mcap_ratio")),
    st.sampled_from([0.0, 0.001, 0.01, 0.05, 0.1, 0.5, 1.0]),
    st.floats(min_value=0, max_value=MAX_RATIO, allow_nan=False, allow_infinity=False),
)
score = st.one_of(
    st.sampled_from(_seed_values("authenticity_score")), st.integers(min_value=0, max_value=100)
)
holders = st.integers(min_value=0, max_value=MAX_HOLDERS)
pct = st.one_of(
    st.sampled_from(_seed_values("price_change_1h") + _seed_values("price_change_24h")),
    st.sampled_from([-100.0, -33.53, -5.0, -1.0, 0.0, 0.25, 1.0, 10.0]),
    st.floats(min_value=-100, max_value=MAX_PRICE_CHANGE_PCT, allow_nan=False),
)
RANGES: dict[str, tuple[str, str, st.SearchStrategy[Any]]] = {
    "market_cap": ("min_market_cap_usd", "max_market_cap_usd", usd),
    "liquidity": ("min_liquidity_usd", "max_liquidity_usd", usd),
    "ratio": ("min_vol_mcap_ratio", "max_vol_mcap_ratio", ratio),
    "score": ("min_authenticity_score", "max_authenticity_score", score),
    "holders": ("min_holders", "max_holders", holders),
    "price": ("min_price_change_pct", "max_price_change_pct", pct),
}


@st.composite
def _bounds(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> tuple[Any, Any]:
    """An ordered (low, high) pair where either may be missing."""
    a, b = sorted([draw(values), draw(values)])
    # Mostly unset: with every range set at once almost no seed token would match, and the
    # comparison with the oracle would only ever see empty answers.
    shape = draw(st.sampled_from(["none"] * 6 + ["low", "high", "both"]))
    return (
        a if shape in ("low", "both") else None,
        b if shape in ("high", "both") else None,
    )


@st.composite
def valid_query_args(draw: st.DrawFn) -> dict[str, Any]:
    """Arguments of a query that must validate and compile."""
    args: dict[str, Any] = {}
    if draw(st.booleans()):
        args["query"] = draw(st.sampled_from(["usdc", "ether", "bitcoin", "wood", "usd coin", "x"]))
    if draw(st.booleans()):
        args["chain"] = draw(st.sampled_from(list(Chain))).value
    for key, (low_name, high_name, values) in RANGES.items():
        if key == "price":
            continue
        low, high = draw(_bounds(values))
        if low is not None:
            args[low_name] = low
        if high is not None:
            args[high_name] = high
    low, high = draw(_bounds(pct))
    if low is not None or high is not None:
        args["price_change_window"] = draw(st.sampled_from(["1h", "24h", "7d"]))
        if low is not None:
            args["min_price_change_pct"] = low
        if high is not None:
            args["max_price_change_pct"] = high
    stable = draw(st.sampled_from([None, True, False]))
    if stable is not None:
        args["stablecoin"] = stable
    if draw(st.booleans()):
        args["sort_by"] = draw(st.sampled_from(list(SortField))).value
        direction = draw(st.sampled_from([None, "asc", "desc"]))
        if direction:
            args["sort_direction"] = direction
    args["page"] = draw(st.integers(min_value=1, max_value=5))
    return args


@st.composite
def invalid_query_args(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """Arguments that must be refused, with a fragment the error message must contain."""
    args = draw(valid_query_args())
    kind = draw(
        st.sampled_from(
            [
                "min_gt_max",
                "negative_money",
                "score_range",
                "bounds_without_window",
                "window_without_bounds",
                "price_below_minus_100",
                "bad_page",
                "unknown_chain",
                "direction_without_sort",
                "not_finite",
                "unknown_field",
                "too_large",
            ]
        )
    )
    for name in ("price_change_window", "min_price_change_pct", "max_price_change_pct"):
        args.pop(name, None)
    if kind == "min_gt_max":
        key = draw(st.sampled_from(sorted(RANGES)))
        low_name, high_name, values = RANGES[key]
        a = draw(values)
        b = draw(values.filter(lambda v, a=a: v != a))
        args[low_name], args[high_name] = max(a, b), min(a, b)
        if key == "price":
            args["price_change_window"] = "24h"
        return args, f"{low_name} ("
    if kind == "negative_money":
        name = draw(
            st.sampled_from(
                [
                    "min_market_cap_usd",
                    "max_liquidity_usd",
                    "min_vol_mcap_ratio",
                    "max_market_cap_usd",
                ]
            )
        )
        args.pop(
            name.replace("min_", "max_")
            if name.startswith("min_")
            else name.replace("max_", "min_"),
            None,
        )
        args[name] = -draw(st.floats(min_value=0.01, max_value=1e9))
        return args, "must not be negative"
    if kind == "score_range":
        name = draw(st.sampled_from(["min_authenticity_score", "max_authenticity_score"]))
        args.pop("min_authenticity_score", None)
        args.pop("max_authenticity_score", None)
        args[name] = draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=101)))
        return args, "0 to 100"
    if kind == "bounds_without_window":
        args[draw(st.sampled_from(["min_price_change_pct", "max_price_change_pct"]))] = 1.0
        return args, "need price_change_window"
    if kind == "window_without_bounds":
        args["price_change_window"] = draw(st.sampled_from(["1h", "24h", "7d"]))
        return args, "price_change_window is only used"
    if kind == "price_below_minus_100":
        args["price_change_window"] = "7d"
        args["min_price_change_pct"] = -draw(st.floats(min_value=100.001, max_value=1e9))
        return args, "more than 100%"
    if kind == "bad_page":
        args["page"] = draw(st.one_of(st.integers(max_value=0), st.integers(min_value=1001)))
        return args, "page"
    if kind == "unknown_chain":
        args["chain"] = draw(st.sampled_from(["ethereum-mainnet", "dogechain", "", "solana!"]))
        return args, "chain"
    if kind == "direction_without_sort":
        args.pop("sort_by", None)
        args["sort_direction"] = draw(st.sampled_from(["asc", "desc"]))
        return args, "sort_direction needs sort_by"
    if kind == "not_finite":
        args.pop("max_market_cap_usd", None)
        args["min_market_cap_usd"] = draw(st.sampled_from([float("nan"), float("inf")]))
        return args, "finite"
    if kind == "unknown_field":
        args["min_marketcap"] = 5
        return args, "min_marketcap"
    # too_large
    args.pop("min_holders", None)
    args["max_holders"] = 10**13
    return args, "at most"
