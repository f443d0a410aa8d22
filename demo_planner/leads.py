"""The demo planner's lead sentence for a result the chat shows as a card.

A result with structured content of a kind the browser draws (web/js/cards.js) is shown
there in full: as a table, a card or a chart. The planner's answer then says only what
leads it, one sentence in plain words, with figures written as the tool's own text writes
them. A result without such content is quoted by `rendering.py` as before.
"""

from __future__ import annotations

import math
from typing import Any

# Tool → the card the chat draws from its structured content (web/js/cards.js `KINDS`;
# tests/demo_planner/test_leads.py keeps the two lists equal).
CARD_KINDS = {
    "search_vaults": "vaults",
    "top_yields": "vaults",
    "vault_history": "history",
    "analyze_yield": "yield",
    "analyze_risk": "risk",
    "wallet_portfolio": "wallet",
    "wallet_positions": "wallet",
    "wallet_top_positions": "wallet",
    "search_protocols": "protocols",
    "search_vault_assets": "assets",
    "analyze_token": "token",
    "analyze_address": "address",
    "search_feed": "feed",
    "search_tokens": "market",
}

# What each tool is called in an answer, for a failure or a note that names it.
PLAIN_NAMES = {
    "analyze_token": "the token analysis",
    "analyze_address": "the address check",
    "search_tokens": "the token search",
    "search_feed": "the feed search",
    "wallet_portfolio": "the wallet read",
    "wallet_positions": "the wallet read",
    "wallet_top_positions": "the wallet read",
    "vault_history": "the vault history",
    "analyze_risk": "the risk analysis",
    "analyze_yield": "the yield analysis",
    "search_vaults": "the vault search",
    "top_yields": "the top-yields search",
    "search_protocols": "the protocol lookup",
    "search_vault_assets": "the asset lookup",
}

_SORT_WORDS = {
    "apy": "APY",
    "apy_base": "base APY",
    "apy_reward": "reward APY",
    "tvl_usd": "TVL",
    "security_score": "security score",
    "reward_share": "share paid in rewards",
}
_RISK = {"low": "low", "medium": "medium", "high": "high", "very_high": "very high"}


def plain_name(tool: str) -> str:
    """The tool as an answer names it ("the vault search"); an unknown one: "the tool"."""
    return PLAIN_NAMES.get(tool, "the tool")


def lead(tool: str, data: dict[str, Any]) -> str | None:
    """The sentence that leads the card of this result, or None when it has no card."""
    kind = CARD_KINDS.get(tool)
    writer = _WRITERS.get(kind or "")
    if writer is None:
        return None
    try:
        return writer(data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        # Content of an unexpected shape: the card is not drawn either (cards.js).
        return None


# --- figures, as the tools write them ---------------------------------------------------------


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _pct(value: Any) -> str:
    v = _num(value)
    return "n/a" if v is None else f"{v:.2f}%"


def _signed(value: Any) -> str:
    v = _num(value)
    return "n/a" if v is None else f"{v:+.2f}%"


def _usd(value: Any) -> str:
    """$1.25M, as the vault tools write TVL."""
    v = _num(value)
    if v is None:
        return "n/a"
    for limit, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(v) >= limit:
            return f"${v / limit:.2f}{suffix}"
    return f"${v:,.0f}"


def _cents(value: Any) -> str:
    """$26,624.00, as the wallet tools write values."""
    v = _num(value)
    return "n/a" if v is None else f"${v:,.2f}"


def _price(value: Any) -> str:
    """$0.00000799, $6.39, as the token analysis writes a price."""
    v = _num(value)
    if v is None:
        return "n/a"
    a = abs(v)
    if a >= 1e6:
        return _usd(v)
    if a >= 1000:
        return f"${v:,.0f}"
    if a >= 1 or a == 0:
        return f"${v:,.2f}"
    decimals = -math.floor(math.log10(a)) + 3
    return f"${v:.{decimals}f}".rstrip("0")


def _exact(value: float) -> str:
    """$0.9951, $1.001: four significant digits, cents at least (a depeg shows)."""
    if value <= 0:
        return f"${value:.2f}"
    decimals = max(2, 3 - math.floor(math.log10(value)))
    return f"${value:,.{decimals}f}"


def _bold(text: Any) -> str:
    # A name is data: Markdown in it (a `*` or a pipe) is shown, not followed.
    cleaned = str(text).replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")
    return f"**{cleaned}**"


def _count(n: Any, one: str, many: str) -> str:
    v = int(_num(n) or 0)
    return f"{v:,} {one if v == 1 else many}"


# --- one sentence per kind ------------------------------------------------------------------


def _vaults(d: dict[str, Any]) -> str:
    vaults = [v for v in d.get("vaults") or [] if isinstance(v, dict)]
    found = int(_num(d.get("found")) or 0)
    if not vaults:
        if found:
            matched = _count(found, "vault matches", "vaults match")
            return f"{matched}, but that page is past the last one."
        return "No vault matches these conditions."
    first = vaults[0]
    field, _, direction = str(d.get("sort_by") or "").split(",")[0].partition(":")
    matched = _count(found, "vault matches", "vaults match")
    leader = f"{_bold(first.get('name'))} ({first.get('protocol')} on {first.get('chain')})"
    figures = f"{_pct(first.get('apy'))} APY and {_usd(first.get('tvl_usd'))} TVL"
    if field == "_text_match":
        order = "by closest match to the name"
    else:
        most = "lowest" if direction == "asc" else "highest"
        order = f"by {most} {_SORT_WORDS.get(field, 'TVL')}"
    page = int(_num(d.get("page")) or 1)
    if page > 1:
        return f"{matched}; on page {page}, {order}, {leader} comes first with {figures}."
    return f"{matched}; {order}, {leader} leads with {figures}."


def _vault_name(d: dict[str, Any]) -> str:
    vault = d.get("vault") if isinstance(d.get("vault"), dict) else {}
    return _bold(vault.get("name")) if vault.get("name") else "this vault"


def _history(d: dict[str, Any]) -> str:
    name = _vault_name(d)
    points = [p for p in d.get("points") or [] if isinstance(p, dict)]
    summary = d.get("summary") if isinstance(d.get("summary"), dict) else None
    if not points or summary is None:
        days = int(_num(d.get("days")) or 0)
        return f"No history is on record for {name} in the last {days} days."
    if len(points) == 1:
        return (
            f"Only one day of history is on record for {name}: APY {_pct(summary.get('apy_last'))} "
            f"on {summary.get('last_day')}."
        )
    sentence = (
        f"The APY of {name} went from {_pct(summary.get('apy_first'))} to "
        f"{_pct(summary.get('apy_last'))} over {len(points)} daily points, "
        f"{summary.get('first_day')} to {summary.get('last_day')}"
    )
    change = _num(summary.get("tvl_change_pct"))
    if change is not None:
        sentence += f"; its TVL changed {change:+.2f}%"
    return sentence + "."


def _yield(d: dict[str, Any]) -> str:
    vault = d["vault"]
    sentence = f"{_vault_name(d)} pays {_pct(vault.get('apy'))} APY"
    if d.get("apy_band_label"):
        sentence += f" ({d['apy_band_label']})"
    reward = _num(d.get("reward_share_pct"))
    if reward is not None:
        sentence += f", {reward:.0f}% of it paid in rewards"
    return sentence + "."


def _risk(d: dict[str, Any]) -> str:
    score = _num(d.get("security_score"))
    rating = _RISK.get(str(d.get("risk_rating")), "unrated")
    scored = "is unscored" if score is None else f"has a security score of {score:.0f}/100"
    concerns = [
        str(f.get("label") or f.get("factor", "")).replace("_", " ")
        for f in d.get("factors") or []
        if isinstance(f, dict) and f.get("assessment") == "concern"
    ]
    if not concerns:
        return f"{_vault_name(d)} {scored} ({rating} risk), with no factor of concern."
    return (
        f"{_vault_name(d)} {scored} ({rating} risk), with "
        f"{_count(len(concerns), 'concern', 'concerns')}: {', '.join(concerns)}."
    )


def _wallet(d: dict[str, Any]) -> str:
    who = f"This wallet ({d['ens_name']})" if d.get("ens_name") else "This wallet"
    positions = [p for p in d.get("positions") or [] if isinstance(p, dict)]
    if not positions:
        return f"{who} holds none of the listed tokens and no position in a known vault."
    if "share_of_value_pct" in d:
        first = positions[0]
        value = _num(first.get("value_usd"))
        worth = "an unknown value" if value is None else _cents(value)
        held = _count(d.get("total_positions"), "position", "positions")
        return (
            f"{who} has {held}; the {len(positions)} largest by value are shown, led by "
            f"{_bold(first.get('name'))} at {worth}, of "
            f"{_cents(d.get('total_value_usd'))} known value in all."
        )
    vaults = sum(1 for p in positions if p.get("kind") == "vault")
    total = _num(d.get("total_value_usd"))
    if total is not None:
        return (
            f"{who} holds {_cents(total)} of known value across "
            f"{_count(len(positions), 'position', 'positions')}, {vaults} of them in vaults."
        )
    # A listing without a total: its largest position leads (the tool gives no sum).
    priced = [p for p in positions if _num(p.get("value_usd")) is not None]
    sentence = (
        f"{who} has {_count(len(positions), 'position', 'positions')}, {vaults} of them in vaults"
    )
    if priced:
        top = max(priced, key=lambda p: _num(p.get("value_usd")) or 0.0)
        sentence += (
            f"; the largest by value is {_bold(top.get('name'))} at {_cents(top.get('value_usd'))}"
        )
    return sentence + "."


def _protocols(d: dict[str, Any]) -> str:
    protocols = [p for p in d.get("protocols") or [] if isinstance(p, dict)]
    if not protocols:
        return "No protocol matches."
    first = protocols[0]
    return (
        f"{_count(len(protocols), 'protocol', 'protocols')} found; the largest by TVL is "
        f"{_bold(first.get('protocol'))} with {_usd(first.get('total_tvl_usd'))} across "
        f"{_count(first.get('vaults'), 'vault', 'vaults')}."
    )


def _assets(d: dict[str, Any]) -> str:
    tokens = [t for t in d.get("tokens") or [] if isinstance(t, dict)]
    if not tokens:
        return "No vault holds a token of that name."
    first = tokens[0]
    return (
        f"{_count(len(tokens), 'token', 'tokens')} found; {_bold(first.get('symbol'))} on "
        f"{first.get('chain')} is held by {_count(first.get('vaults'), 'vault', 'vaults')}."
    )


def _token(d: dict[str, Any]) -> str:
    ident = d["token"]["identity"]
    market = d["token"].get("market") or {}
    name = _bold(f"{ident.get('name')} ({ident.get('symbol')})")
    if _num(market.get("price_usd")) is None:
        return f"{name}: no market data is on record."
    sentence = f"{name} trades at {_price(market.get('price_usd'))}"
    if _num(market.get("price_change_24h_pct")) is not None:
        sentence += f" ({_signed(market.get('price_change_24h_pct'))} in 24h)"
    if _num(market.get("market_cap_usd")) is not None:
        sentence += f", market cap {_usd(market.get('market_cap_usd'))}"
    low, high = _num(market.get("low_24h_usd")), _num(market.get("high_24h_usd"))
    if low is not None and high is not None:
        # The band a peg is read from: four significant digits, as the tool writes it.
        sentence += f", 24h range {_exact(low)} – {_exact(high)}"
    if market.get("as_of"):
        sentence += f", as of {str(market['as_of'])[:10]}"
    return sentence + "."


_ADDRESS_RISK = {
    "none_known": "no known risk",
    "unknown": "risk unknown",
}


def _address(d: dict[str, Any]) -> str:
    a = d["address"]
    if not a.get("known"):
        return "No data on record for this address."
    labels = [str(x) for x in a.get("labels") or []]
    who = a.get("entity") or (labels[0] if labels else "a known address")
    level = str(a.get("risk_level") or "unknown")
    risk = _ADDRESS_RISK.get(level, f"{level} risk")
    return f"This address is on record as {_bold(who)} ({risk})."


def _feed(d: dict[str, Any]) -> str:
    hits = [h for h in d.get("hits") or [] if isinstance(h, dict)]
    hits = [h for h in hits if isinstance(h.get("item"), dict)]
    if not hits:
        return "Nothing in the feed matches."
    item = hits[0]["item"]
    when = str(item.get("published_at") or "")[:10]
    total = _count(d.get("total_matches"), "item matches", "items match")
    return f"{total}; the most relevant is “{item.get('title')}” ({item.get('source')}, {when})."


def _market(d: dict[str, Any]) -> str:
    hits = [h for h in d.get("hits") or [] if isinstance(h, dict)]
    found = int(_num(d.get("found")) or 0)
    if not hits:
        if not found:
            return "No tokens match."
        return f"{found:,} tokens match, but that page is past the last one."
    first = hits[0]
    name = _bold(f"{first.get('name')} ({first.get('symbol')})")
    snapshot = d.get("snapshot") if isinstance(d.get("snapshot"), dict) else None
    if snapshot:
        field = str((d.get("query") or {}).get("sort_by") or "")
        figure = first.get(field)
        shown = _signed(figure) if field.startswith("price_change") else None
        with_figure = f" with {shown}" if shown else ""
        return (
            f"Data as of {snapshot.get('date')}: {name} comes first by {snapshot.get('figure')}"
            f"{with_figure}, among {_count(found, 'token', 'tokens')} with data of that day."
        )
    dates = [str(x) for x in d.get("data_dates") or []]
    when = f" (data as of {dates[0]})" if len(dates) == 1 else ""
    return f"{_count(found, 'token', 'tokens')} found{when}; first, {name}."


_WRITERS = {
    "vaults": _vaults,
    "history": _history,
    "yield": _yield,
    "risk": _risk,
    "wallet": _wallet,
    "protocols": _protocols,
    "assets": _assets,
    "token": _token,
    "address": _address,
    "feed": _feed,
    "market": _market,
}
