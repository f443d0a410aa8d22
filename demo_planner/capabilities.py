"""What the platform cannot do, and the nearest thing it can.

The tools read data: tokens, addresses, vaults, wallets, the news feed. They cannot make a
transaction (swap, buy, send, bridge, deposit for the user), see the future (price or APY
forecasts), read gas prices, or watch anything and call back later. A question asking for
one of these gets a short, plain answer that says so, then the nearest thing the tools can
do: the token's present data for a forecast, the vault's history for "will this APY last",
a vault search for "stake my ETH for me", and for the rest a few questions it can answer.

What makes a request one of these is its structure, not a word anywhere: a trading verb
used as a request ("swap 1 ETH to USDC", "can you buy me some PEPE", "send 100 USDC to …"),
not as a noun ("swap fees", "buy pressure"); a future with a move ("will ETH hit 10k",
"is SOL going to pump", "price prediction for ARB"); gas as a cost ("gas price on
ethereum", "how much is gas", "gwei"); a request to be told later ("alert me when …").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from demo_planner import vocabulary as voc
from demo_planner.text import phrase_tokens

GapKind = Literal["trade", "forecast", "gas", "alert", "advice", "other"]
# What the planner does instead: the nearest thing the tools can do.
Nearest = Literal["token", "history", "vaults", "none"]

_REQUEST_LEADS = sorted({phrase_tokens(p) for p in voc.REQUEST_LEADS}, key=len, reverse=True)
_DELEGATION = sorted({phrase_tokens(p) for p in voc.DELEGATION_LEADS}, key=len, reverse=True)
_OTHER = sorted(
    ((phrase_tokens(p), reply) for p, reply in voc.OTHER_GAPS.items()), key=lambda x: -len(x[0])
)


@dataclass(frozen=True)
class Gap:
    """Something asked that no tool can do: what it is, the plain answer, what comes
    instead."""

    kind: GapKind
    reply: str
    nearest: Nearest
    tickers: tuple[str, ...] = ()  # the tokens the question names, for what to offer


def find_gap(words: list[str], tickers: list[str], *, vault_words: bool) -> Gap | None:
    """The thing the question asks that the platform cannot do, if any. `tickers` are the
    tokens it names; `vault_words` whether it speaks of vaults or yields."""
    gap = _gap(words, tickers, vault_words=vault_words)
    return None if gap is None else Gap(gap.kind, gap.reply, gap.nearest, tuple(tickers))


def _gap(words: list[str], tickers: list[str], *, vault_words: bool) -> Gap | None:
    trade = _trade_verb(words)
    if trade is not None:
        if trade in voc.YIELD_ACTIONS and vault_words:
            return Gap("trade", voc.GAP_REPLIES["deposit"], "vaults")
        return Gap("trade", voc.GAP_REPLIES["trade"], "none")
    if _forecast(words):
        about_yield = vault_words or bool(set(words) & {"apy", "apr", "yield", "yields"})
        if about_yield:
            return Gap("forecast", voc.GAP_REPLIES["forecast"], "history")
        return Gap("forecast", voc.GAP_REPLIES["forecast"], "token" if tickers else "none")
    if _gas(words):
        return Gap("gas", voc.GAP_REPLIES["gas"], "none")
    if _alert(words):
        if vault_words:
            return Gap("alert", voc.GAP_REPLIES["alert"], "vaults")
        return Gap("alert", voc.GAP_REPLIES["alert"], "token" if tickers else "none")
    if _advice(words) and tickers:
        return Gap("advice", voc.GAP_REPLIES["advice"], "token")
    for phrase, reply in _OTHER:
        if _has(words, phrase):
            return Gap("other", reply, "none")
    return None


def _has(words: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(words[i : i + n]) == phrase for i in range(len(words) - n + 1))


def _trade_verb(words: list[str]) -> str | None:
    """A trading verb used as a request: at the start ("swap 1 ETH…"), after a request lead
    ("can you buy…", "I want to bridge…"), or with "for me"."""
    for i, word in enumerate(words):
        if word not in voc.TRADE_VERBS:
            continue
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if nxt in voc.TRADE_NOUN_AFTER:
            continue  # "swap fees", "buy pressure": nouns, not requests
        at_start = i == 0 or words[i - 1] in ("please", ",", "pls", "plz", "just", "now")
        leads = _DELEGATION if word in voc.YIELD_ACTIONS else _REQUEST_LEADS
        led = any(i - len(lead) >= 0 and tuple(words[i - len(lead) : i]) == lead for lead in leads)
        for_me = _has(words[i:], ("for", "me")) or (i + 1 < len(words) and words[i + 1] == "me")
        if at_start or led or for_me:
            return word
    return None


def _forecast(words: list[str]) -> bool:
    """'will ETH hit 10k', 'is SOL going to pump', 'price prediction', 'where will BTC be'."""
    if set(words) & voc.FORECAST_WORDS:
        return True
    for i, word in enumerate(words):
        future = word in ("will", "'ll", "gonna", "wil") or (
            word == "going" and i + 1 < len(words) and words[i + 1] == "to"
        )
        if not future:
            continue
        ahead = words[i + 1 : i + 7]
        if set(ahead) & voc.FUTURE_MOVES:
            return True
    return _has(words, ("how", "high", "will")) or _has(words, ("price", "target"))


def _gas(words: list[str]) -> bool:
    """Gas as a cost: 'gas price', 'gas fees', 'how much is gas', 'gwei'."""
    if set(words) & {"gwei", "gas-price", "gasprice"}:
        return True
    for i, word in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if word == "gas" and nxt not in ("token", "tokens", "coin"):
            return True  # in a DeFi question gas is what a transaction costs
    return any(_has(words, phrase_tokens(p)) for p in voc.NETWORK_FEE_PHRASES)


def _alert(words: list[str]) -> bool:
    return any(_has(words, phrase_tokens(p)) for p in voc.ALERT_PHRASES)


def _advice(words: list[str]) -> bool:
    """'should I buy PEPE?', 'is it time to sell ETH': a call only the user can make."""
    for i, word in enumerate(words):
        if word in ("buy", "sell", "ape", "dump") and i >= 2:
            if words[i - 2 : i] in (["should", "i"], ["time", "to"], ["i", "buy"]):
                return True
    return False


def nearest_examples(tickers: list[str]) -> list[str]:
    """Questions the tools can answer instead, about what the user named where possible."""
    symbol = tickers[0] if tickers else "ETH"
    return [
        f"“What is {symbol} trading at?” (price, market cap, 24h change, risk read)",
        f"“Any news on {symbol}?”",
        "“Best USDC yields on base”" if not tickers else f"“Best {symbol} yields”",
    ]
