"""Reading a question as tokens with positions, and finding the entities written in it.

Entities that have a fixed shape (EVM addresses, ENS names, vault ids) are found first and
masked, so their digits never read as amounts. Everything else is a token: a word, a number
with whatever is glued to it (`$5m`, `10k+`, `35%`), or a punctuation mark that separates
clauses. Phrases of the vocabulary are tokenised the same way, so matching is token by token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{40}\b")
# An ENS-style name: labels of letters, digits and hyphens ending in .eth (also sub.name.eth).
ENS_NAME = re.compile(r"(?<![\w.-])((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+eth)\b", re.IGNORECASE)
VAULT_ID = re.compile(r"\b[a-z0-9][a-z0-9_-]*:[a-z0-9][a-z0-9_-]*:[^\s?,;!]+", re.IGNORECASE)

_TOKEN = re.compile(
    r"""
    (?P<num>[$€]?\d[\d,]*(?:\.\d+)?(?:[a-zA-Z%]{1,8})?\+?)   # 5, 1,000, $1.5M, 10k+, 35%, 24h
    | (?P<cmp>[<>]=?|[≥≤])
    | (?P<word>\$?[A-Za-z][A-Za-z0-9']*(?:\.[A-Za-z]+(?=\b))?|\#\d+)
    | (?P<punct>[,;:?!()/%+–—-]|\.(?!\d))
    """,
    re.VERBOSE,
)
CLAUSE_BREAKS = frozenset({",", ";", ":", "?", "!", "(", ")", ".", "and", "with", "where",
                           "while", "but", "or", "plus", "that", "which", "whose"})  # fmt: skip


@dataclass(frozen=True)
class Token:
    """One token of the question: its text as written, lowercased, and where it is."""

    text: str
    start: int
    end: int
    index: int

    @property
    def low(self) -> str:
        return self.text.lower()

    @property
    def is_number(self) -> bool:
        return self.text[:1].isdigit() or (self.text[:1] in "$€" and self.text[1:2].isdigit())


def tokenize(text: str) -> list[Token]:
    """The question's tokens, in order. A hyphen is kept only between two numbers (a range,
    `5-10%`); elsewhere it joins words (`highest-TVL`, `single-asset`) and is dropped, so
    "single-asset" and "single asset" read alike."""
    raw = list(_TOKEN.finditer(text))
    out: list[Token] = []
    for i, m in enumerate(raw):
        if m.group(0) in "-–—" and not _between_numbers(raw, i):
            continue
        out.append(Token(m.group(0), m.start(), m.end(), len(out)))
    return out


def _between_numbers(raw: list[re.Match[str]], i: int) -> bool:
    return 0 < i < len(raw) - 1 and bool(raw[i - 1]["num"]) and bool(raw[i + 1]["num"])


def phrase_tokens(phrase: str) -> tuple[str, ...]:
    """A vocabulary phrase as the lowercase token texts a question would have."""
    return tuple(t.low for t in tokenize(phrase))


def mask(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with the given character spans blanked out (same length)."""
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            chars[i] = " "
    return "".join(chars)


@dataclass(frozen=True)
class Entities:
    """Shapes found in a question before any word is read."""

    addresses: list[str]
    ens_names: list[str]
    vault_ids: list[str]
    masked: str


def find_entities(question: str) -> Entities:
    """Addresses, ENS names and vault ids, and the question with them masked."""
    spans: list[tuple[int, int]] = []
    addresses = []
    for m in ADDRESS.finditer(question):
        addresses.append(m.group(0))
        spans.append(m.span())
    vault_ids = []
    for m in VAULT_ID.finditer(question):
        rest = question[m.start() :].lower()
        if rest.startswith(("http", "0x")) or any(s <= m.start() < e for s, e in spans):
            continue
        vault_ids.append(m.group(0).rstrip("."))
        spans.append(m.span())
    ens = []
    for m in ENS_NAME.finditer(question):
        if any(s <= m.start() < e for s, e in spans):
            continue
        ens.append(m.group(1).lower())
        spans.append(m.span(1))
    return Entities(addresses, ens, vault_ids, mask(question, spans))


def without_possessive(word: str) -> str:
    """'vault's' → 'vault' (either apostrophe)."""
    return word.removesuffix("'s").removesuffix("\u2019s")


def is_ticker_shaped(word: str) -> bool:
    """Written like a ticker: all capitals (PEPE, 3CRV), capitals then a lowercase letter
    (USDe, USDbC), lowercase prefix then capitals (stETH, wstETH, cbBTC, sDAI), or
    $-prefixed."""
    if word.startswith("$"):
        return len(word) > 1
    letters = [c for c in word if c.isalpha()]
    if len(letters) < 2 and not any(c.isdigit() for c in word):
        return False
    if word.isupper():
        return True
    # USDe, USDbC: capitals with a lowercase letter after them (a plural 'APYs' is not).
    if re.fullmatch(r"[A-Z]{2,}[a-z][A-Z]*", word) and not word.endswith("s"):
        return True
    return bool(re.fullmatch(r"[a-z]{1,4}[A-Z][A-Z0-9.+]*[a-z]?", word))
