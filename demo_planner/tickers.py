"""Tickers and feed topics, as the question writes them.

A token question names its token the way people do: `$PEPE`, `PEPE`, "what is pepe", or an
everyday name ("chainlink"). These are taken as written — the token analysis service says
itself when it does not know a symbol — except for upper-case words that are not tickers.
"""

from __future__ import annotations

import re

from demo_planner import vocabulary as voc
from demo_planner.reading import Reading
from demo_planner.text import is_ticker_shaped

_DOLLAR = re.compile(r"\$([A-Za-z][A-Za-z0-9]{1,14})\b")
_CAPS = re.compile(r"(?<![$\w])([A-Z][A-Z0-9]{1,14})\b")
_ABOUT = re.compile(
    r"\b(?:what is|what's|tell me about|analy[sz]e|info on|about|ticker|price of)\s+"
    r"([A-Za-z][A-Za-z0-9]{1,14})\b",
    re.IGNORECASE,
)


def token_symbols(reading: Reading, *, names: bool = True) -> list[str]:
    """Tickers in the question, in order: $PEPE, PEPE, 'what is pepe', everyday names."""
    text = reading.entities.masked
    found: list[str] = []
    for symbol in [*_DOLLAR.findall(text), *_CAPS.findall(text)]:
        _add(found, symbol)
    for token in reading.tokens:
        # Mixed-case tickers (USDe, stETH) the capitals pattern does not see.
        if not token.text.isupper() and not token.text.startswith("$"):
            if is_ticker_shaped(token.text) and token.text.isalnum():
                _add(found, token.text)
    if not found:
        about = _ABOUT.search(text)
        word = about.group(1) if about else ""
        if (
            word
            and word.upper() not in {"THIS", "THAT", "MY"}
            and word.lower() not in voc.ASSET_NAMES
        ):
            _add(found, word)
    if not found and names:
        lowered = text.lower()
        for name, symbol in voc.ASSET_NAMES.items():
            if re.search(rf"\b{re.escape(name)}\b", lowered):
                _add(found, symbol)
    return found


def _add(found: list[str], symbol: str) -> None:
    symbol = symbol.upper()
    if symbol not in found and symbol not in voc.NOT_TICKERS:
        found.append(symbol)


def feed_topic(reading: Reading) -> str:
    """The topic of a feed question: its content words, filler and intent words left out."""
    words = re.findall(r"[A-Za-z0-9$][A-Za-z0-9.$'-]*", reading.question)
    out = []
    for word in words:
        bare = word.strip(".'-").lstrip("$")
        if bare and bare.lower() not in voc.FEED_FILLER:
            out.append(bare)
    return " ".join(out) if out else re.sub(r"[?!.]+$", "", reading.question).strip()
