"""Amounts the user has or wants to place: "I have 50k USDC", "$250k in stables", "with 10 ETH".

An amount is a position size, not a condition: no comparator before it, no field named next
to it, and either a word of holding or placing around it ("have", "put", "park", "deposit")
or the asset right after it ("50k USDC", "$250k in stables"). It is taken out of the
question's conditions, so no tool gets it as a minimum TVL, and said back to the user. Once
the results are in, each listed vault's TVL (as the tool wrote it) is weighed against it, in
words only: an answer may quote the amount and the TVL, never a share it computed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from demo_planner import vocabulary as voc
from demo_planner.lexicon import Mention
from demo_planner.numbers import Condition, Numbers
from demo_planner.text import Token, is_ticker_shaped
from demo_planner.vault_table import VaultRow

# A deposit above this share of a vault's TVL is large for it (it moves the APY and may be
# slow to withdraw); the share itself is never written in an answer.
LARGE_SHARE = 0.05
_HOLD = frozenset(voc.HOLDING_WORDS)
_USD_TVL = re.compile(r"^\$([\d,.]+)([KMBT]?)$")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


@dataclass(frozen=True)
class Amount:
    """An amount to place: its value, what it is in ("USD", "USDC", "stablecoins") and its
    words as written."""

    value: float
    asset: str
    text: str
    start: int
    end: int
    placed: bool = True  # to put to work ("where can 50k USDC earn?"), not to price

    @property
    def usd(self) -> float | None:
        """Its value in dollars, where it is dollars or dollar stablecoins; else None."""
        if self.asset in ("USD", "stablecoins") or self.asset in voc.DOLLAR_STABLECOINS:
            return self.value
        return None


def take_amounts(tokens: list[Token], numbers: Numbers, mentions: list[Mention]) -> list[Amount]:
    """Amounts the question holds, removed from `numbers.conditions`."""
    words = [t.low for t in tokens]
    fields = [m for m in mentions if m.kind == "family"]
    kept: list[Condition] = []
    found: list[Amount] = []
    for cond in numbers.conditions:
        amount = _amount(cond, tokens, words, fields)
        if amount is None:
            kept.append(cond)
        else:
            found.append(amount)
    numbers.conditions = kept
    return found


def _amount(
    cond: Condition, tokens: list[Token], words: list[str], fields: list[Mention]
) -> Amount | None:
    if cond.side != "eq" or cond.unit not in ("usd", "plain"):
        return None
    asset, end = _asset_after(tokens, words, cond.end + 1)
    near = [m for m in fields if m.gap(cond.start, cond.end) <= 1 and not _worth_of(m, words)]
    if near and asset is None:
        return None  # "$10M TVL", "TVL of 5M": a field's value ("earn on 5,000 DAI" is not)
    held = bool(_HOLD & set(words[max(0, cond.start - 4) : cond.start]))
    if asset is None and not held:
        return None
    if cond.unit == "plain" and asset is None and cond.value < 1000:
        return None  # "I have 3 questions"
    if asset is None:
        asset = "USD"  # "I have 50k to put to work": money, in dollars unless said
    text = " ".join(t.text for t in tokens[cond.start : end + 1])
    # "how much is 1 ETH worth?" prices an amount; "where can 1 ETH earn?" places it.
    placed = held or bool(set(words) & voc.PLACEMENT_WORDS)
    return Amount(cond.value, asset, text, cond.start, end, placed)


def _worth_of(mention: Mention, words: list[str]) -> bool:
    """'worth of' in "$5k worth of ETH" measures the amount; it names no field."""
    nxt = mention.end + 1
    return words[mention.start] == "worth" and nxt < len(words) and words[nxt] == "of"


def _asset_after(tokens: list[Token], words: list[str], i: int) -> tuple[str | None, int]:
    """What an amount is in, right after it: '50k USDC', '$250k in stables', '10 eth',
    '5k worth of ETH'; with the last token of the amount's words."""
    j = i
    if j < len(words) and words[j] in ("worth", "in", "of"):
        j += 1
        if j < len(words) and words[j] == "of":
            j += 1
    if j >= len(words):
        return None, i - 1
    word, text = words[j], tokens[j].text
    if word in voc.STABLE_WORDS:
        return "stablecoins", j
    if word in voc.ASSET_NAMES:
        return voc.ASSET_NAMES[word], j
    bare = text.lstrip("$")
    if (is_ticker_shaped(text) or word in voc.COMMON_TICKERS) and bare.isalnum():
        if bare.upper() not in voc.NOT_TICKERS:
            return bare.upper(), j
    return None, i - 1


def said_back(amount: Amount) -> str:
    """The amount as the answer repeats it."""
    return (
        f"Read “{amount.text}” as the amount you want to place: a position size, not a "
        "filter on the vaults."
    )


def sizing_lines(amount: Amount, rows: list[VaultRow]) -> list[str]:
    """The amount weighed against each listed vault's TVL, in words, with the tool's
    figures only."""
    if not rows:
        return []
    usd = amount.usd
    if usd is None:
        return [
            f"**Sizing:** these results carry no price for {amount.asset}, so I have not "
            f"weighed {amount.text} against each vault's TVL."
        ]
    large = []
    unknown = 0
    for row in rows:
        tvl = _tvl(row.tvl)
        if tvl is None:
            unknown += 1
        elif usd > LARGE_SHARE * tvl:
            large.append(f"{row.name} (TVL {row.tvl})")
    lines = []
    if large:
        lines.append(
            f"**Sizing:** {amount.text} would be a large part of "
            + ", ".join(large[:3])
            + (" and others listed" if len(large) > 3 else "")
            + ": a deposit that size moves a small vault's APY and can be slow to withdraw."
        )
    elif unknown < len(rows):
        lines.append(
            f"**Sizing:** {amount.text} is a small part of the TVL of every listed vault "
            "whose TVL is known, so your deposit alone would not move their rates much."
        )
    if unknown:
        lines.append("Some listed vaults have no TVL on record: their size is unknown.")
    return lines


def _tvl(text: str) -> float | None:
    found = _USD_TVL.match(text.strip())
    if found is None:
        return None
    return float(found[1].replace(",", "")) * _SCALE[found[2]]
