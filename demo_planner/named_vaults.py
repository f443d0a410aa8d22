"""A vault named by its own name: "the Syrup USDC vault", "Steakhouse USDC pool's APY".

A vault's own name mixes words the index knows (USDC, Aave) with words it does not
(Syrup, Steakhouse, Sentora). The words written as a name right before "vault" or "pool"
are one name when at least one of them is neither a protocol, a chain nor an asset the
question names exactly: then the name is searched as text (the vault search matches names),
rather than each word being read as a filter on its own ("Syrup" as an asset). Tickers
glued by hyphens ("the DAI-USDC pool", "CBLTC-CBBTC") are a pool's own name too: the pair
as written, not two assets to filter by.
"""

from __future__ import annotations

from dataclasses import dataclass

from demo_planner import vocabulary as voc
from demo_planner.names import Resolved
from demo_planner.reading import Reading
from demo_planner.text import is_ticker_shaped, without_possessive

# The nouns a vault's own name stands before.
_NAMED_NOUNS = frozenset({"vault", "pool", "strategy"})
# Words that end a name going backwards ("the", "is", "how has").
_NOT_NAME = frozenset({"the", "a", "an", "my", "this", "that", "which", "what", "how", "is"})


@dataclass(frozen=True)
class NamedVault:
    """A vault's own name as written, and the question's tokens it spans."""

    text: str
    indices: frozenset[int]


def named_vault(reading: Reading, names: list[Resolved]) -> NamedVault | None:
    """The vault the question names by its own name, if it names one."""
    chains = {i for m in reading.mentions_of("chain") for i in range(m.start, m.end + 1)}
    by_index = {r.index: r for r in names}
    for i, word in enumerate(reading.words):
        if without_possessive(word) not in _NAMED_NOUNS:
            continue
        span: list[int] = []
        j = i - 1
        while j >= 0 and _written_as_name(reading, j, by_index) and j not in chains:
            span.insert(0, j)
            j -= 1
        if any(_own_word(reading, k, by_index.get(k)) for k in span):
            text = " ".join(reading.tokens[k].text for k in span)
            return NamedVault(text, frozenset(span))
        pair = _glued_pair(reading, span)
        if pair is not None:
            return pair
    return None


def _glued_pair(reading: Reading, span: list[int]) -> NamedVault | None:
    """The last run of tickers joined by hyphens in `span` ("DAI-USDC"), as written."""
    tokens, question = reading.tokens, reading.question
    run: list[int] = []
    for k in span:
        glued = run and question[tokens[run[-1]].end : tokens[k].start] == "-"
        if is_ticker_shaped(tokens[k].text) and glued:
            run.append(k)
        elif is_ticker_shaped(tokens[k].text):
            run = [k] if len(run) < 2 else run
        else:
            run = [] if len(run) < 2 else run
    if len(run) < 2:
        return None
    text = question[tokens[run[0]].start : tokens[run[-1]].end]
    return NamedVault(text, frozenset(run))


def _written_as_name(reading: Reading, index: int, names: dict[int, Resolved]) -> bool:
    """A word the question reads as a name (a ticker, or a candidate name such as
    "Syrup"); a capitalised first word ("Largest") is not one."""
    token = reading.tokens[index]
    if token.low in _NOT_NAME:
        return False
    if is_ticker_shaped(token.text) or token.text[:1].isdigit():
        return True  # "USD" in "Gauntlet USD Alpha", though "usd" is a stopword
    return index in names and token.low not in voc.STOPWORDS


def _own_word(reading: Reading, index: int, resolved: Resolved | None) -> bool:
    """A word of the vault's own: name-shaped, and no protocol the index has ("Syrup",
    "Steakhouse"; a ticker such as USDC or a protocol such as Aave is a filter)."""
    text = reading.tokens[index].text
    if is_ticker_shaped(text) or text[:1].isdigit() or text.lower() in voc.COMMON_TICKERS:
        return False  # "the wbtc vault": a ticker written in lowercase is still a filter
    return resolved is not None and resolved.kind in ("unknown", "asset")
