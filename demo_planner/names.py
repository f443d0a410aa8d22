"""Names a question uses for assets, protocols and chains, checked against the indexed sets.

A word is a protocol or an asset only if the vault index has it. The planner learns the
index the way a model would: by calling the data server's own catalogue tools. A vault
question with a name the planner has not seen yet starts with one lookup step — the protocol
catalogue (`search_protocols`, all protocols by TVL, up to its limit of 50) and
`search_vault_assets` for each unknown word — and every later step reads the answers back
from the turn. The results are also kept in a small cache on the planner (per chat object,
ten minutes, bounded), so the next question with the same names needs no lookup. Vault
lines seen in any result (`[aave-v3 on ethereum] assets USDC`) teach protocols, chains and
assets too. Quoted examples in the tool schemas ('aave-v3', 'USDC') count as known values.

How a word is read depends on how it is written: ticker-shaped words (USDC, stETH, $AERO)
are assets first, name-shaped words (Aave, curve, Morpho) protocols first.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from demo_planner import vocabulary as voc
from demo_planner.negation import negator_at
from demo_planner.reading import Reading
from demo_planner.text import is_ticker_shaped, without_possessive
from demo_planner.vault_table import vault_rows

CACHE_SECONDS = 600.0
MAX_ASSET_ENTRIES = 512
MAX_CANDIDATES = 4

PROTOCOL_LINE = re.compile(r"^- ([a-z0-9][a-z0-9._-]*): \d+ vaults on ([^;]+);", re.MULTILINE)
ASSET_LINE = re.compile(r"^- (\S+) on ([a-z0-9._-]+): \d+ vaults", re.MULTILINE)
# A protocol or chain slug as the vault lines write it: only these are learned.
_SLUG = re.compile(r"[a-z0-9._-]+")
_ASSET_QUERY = re.compile(r"No vault holds a token matching '([^']+)'")


def letters(text: str) -> str:
    """Lowercase letters and digits only: 'Aave V3' and 'aave-v3' both read 'aavev3'."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


@dataclass
class NameIndex:
    """What the planner knows of the indexed protocols, assets and chains."""

    clock: Callable[[], float] = time.monotonic
    protocols: list[str] = field(default_factory=list)
    protocols_at: float = float("-inf")
    learned_protocols: set[str] = field(default_factory=set)
    chains: set[str] = field(default_factory=set)
    assets: dict[str, tuple[list[str], float]] = field(default_factory=dict)
    protocol_queries: dict[str, tuple[list[str], float]] = field(default_factory=dict)

    def has_catalogue(self) -> bool:
        """The full protocol list is fresh."""
        return self.clock() - self.protocols_at < CACHE_SECONDS

    def asset_lookup(self, word: str) -> list[str] | None:
        """Symbols the index returned for a word, or None if never looked up (or stale)."""
        return self._fresh(self.assets, word.upper())

    def protocol_lookup(self, word: str) -> list[str] | None:
        """Protocols the catalogue listed for a word, or None if never asked (or stale)."""
        return self._fresh(self.protocol_queries, word.lower())

    def _fresh(self, cache: dict[str, tuple[list[str], float]], key: str) -> list[str] | None:
        entry = cache.get(key)
        if entry is None or self.clock() - entry[1] >= CACHE_SECONDS:
            return None
        return entry[0]

    def _remember(
        self, cache: dict[str, tuple[list[str], float]], key: str, values: list[str]
    ) -> None:
        # Bounded: the oldest answer makes room for a new one.
        if len(cache) >= MAX_ASSET_ENTRIES:
            del cache[min(cache, key=lambda k: cache[k][1])]
        cache[key] = (values, self.clock())

    def learn_catalogue(self, text: str, query: str | None = None) -> None:
        """The catalogue's answer: all protocols by TVL, or (with `query`) those it matched."""
        found = PROTOCOL_LINE.findall(text)
        if not found and "No protocol matches" not in text:
            return
        slugs = [slug for slug, _ in found]
        if query:
            # Beyond the largest 50 a protocol is found only by its name.
            self._remember(self.protocol_queries, query.lower(), slugs)
            self.learned_protocols.update(slugs)
        else:
            self.protocols = slugs
            self.protocols_at = self.clock()
        for _, chains in found:
            self.chains |= {c.strip() for c in chains.split(",") if c.strip()}

    def learn_assets(self, query: str, text: str) -> None:
        symbols = [s.upper() for s, _ in ASSET_LINE.findall(text)]
        if not symbols and not _ASSET_QUERY.search(text):
            return
        self._remember(self.assets, query.upper(), symbols)

    def learn_vault_lines(self, text: str) -> None:
        for row in vault_rows(text):
            if not (_SLUG.fullmatch(row.protocol) and _SLUG.fullmatch(row.chain) and row.assets):
                continue
            self.learned_protocols.add(row.protocol)
            self.chains.add(row.chain)
            for symbol in row.assets.split("/"):
                symbol = symbol.strip().upper()
                if symbol and symbol != "?":
                    entry = self.assets.get(symbol)
                    if entry is None or symbol not in entry[0]:
                        self.assets[symbol] = ([symbol, *(entry[0] if entry else [])], self.clock())

    def known_protocols(self, schema_examples: set[str]) -> list[str]:
        """Protocol slugs known now, catalogue order (largest TVL) first."""
        out = list(self.protocols) if self.has_catalogue() else []
        for slug in sorted(self.learned_protocols | schema_examples):
            if slug not in out:
                out.append(slug)
        return out


def protocol_matches(words: list[str], i: int, slugs: list[str]) -> tuple[list[str], int]:
    """Slugs a name at words[i] (with up to two following words) stands for, and how many
    words it used: 'aave v3' → aave-v3; 'curve' → curve-dex, curve-llamalend."""
    words = [without_possessive(w) for w in words]
    for n in (3, 2, 1):
        if i + n > len(words):
            continue
        joined = letters("".join(words[i : i + n]))
        if len(joined) < 3:
            continue
        exact = [s for s in slugs if letters(s) == joined]
        if exact:
            return exact, n
    word = letters(words[i])
    if len(word) < 3:
        return [], 1
    family = [s for s in slugs if letters(s.split("-")[0]) == word]
    # 'spark' is spark-savings and sparklend: a long enough word also takes the slugs it
    # begins (a short one, 'aave', only its family: not 'aavegotchi').
    prefix = [s for s in slugs if letters(s).startswith(word)] if len(word) >= 5 else []
    found = family + [s for s in prefix if s not in family]
    return found, 1


def needs_name_lookup(word: str, slugs: list[str], index: NameIndex) -> bool:
    """Whether a name must be asked of the catalogue by itself: it holds the largest
    protocols only, so 'curve' may stand for more than the curve-dex it lists ('lido',
    a slug itself, may not)."""
    key = letters(word)
    return index.protocol_lookup(word) is None and not any(letters(s) == key for s in slugs)


@dataclass
class Candidate:
    """A word of the question that may be a name."""

    index: int
    text: str
    ticker: bool
    negated: bool


def _in_name_slot(words: list[str], i: int, texts: list[str] | None = None) -> bool:
    nxt = words[i + 1] if i + 1 < len(words) else ""
    if words[i].endswith(("'s", "\u2019s")) and len(words[i]) > 4:
        return True  # "aave's best vaults": a possessive names its owner
    if texts is not None and i + 1 < len(texts) and is_ticker_shaped(texts[i + 1]):
        return True  # "the pancakeswap DAI-USDC pool", "morpho WETH vaults"
    j = i - 1
    while j >= 0 and words[j] in ("the", "a", "an"):
        j -= 1
    prev = words[j] if j >= 0 else ""
    return nxt in voc.NAME_SLOT_NEXT or prev in voc.NAME_SLOT_PREV


def candidates(reading: Reading, known: Callable[[str], bool] | None = None) -> list[Candidate]:
    """Words that may be names: neither grammar, nor numbers, nor field words. Ticker-shaped
    and capitalised words always; lowercase ones when known or where a name goes."""
    used = reading.consumed() | reading.in_windows()
    out: list[Candidate] = []
    words = reading.words
    texts = [tok.text for tok in reading.tokens]
    for t in reading.tokens:
        if (
            t.index in used
            or t.is_number
            or (not t.text[:1].isalpha() and not t.text.startswith("$"))
        ):
            continue
        bare = t.text.lstrip("$").strip("'").removesuffix("'s")
        low = bare.lower()
        if not bare or low in voc.STOPWORDS or len(bare) < 2 or negator_at(words, t.index):
            continue  # "isnt", "skip", "besides": grammar, however they are written
        if bare.upper() in voc.NOT_TICKERS and not t.text.startswith("$"):
            continue
        ticker = is_ticker_shaped(t.text)
        opening = t.index == 0 or words[t.index - 1] in (".", "?", "!", ":", ";", "(")
        nxt = reading.tokens[t.index + 1].text if t.index + 1 < len(words) else ""
        # "Syrup USDT vault…": an opening word written as a name, right before a ticker.
        named_first = opening and bare[:1].isupper() and is_ticker_shaped(nxt)
        capitalised = bare[:1].isupper() and (not opening or named_first)
        slot = _in_name_slot(words, t.index, texts) or t.index in reading.amount_assets()
        if not (ticker or capitalised or (known and known(bare)) or slot):
            continue
        out.append(Candidate(t.index, bare, ticker, t.index in reading.negated))
    return out[:MAX_CANDIDATES]


ResolvedKind = Literal["protocol", "asset", "unknown"]


@dataclass
class Resolved:
    """What a candidate word turned out to be."""

    word: str
    kind: ResolvedKind
    values: list[str]
    negated: bool = False
    index: int = 0
    used: int = 1


def resolve(
    reading: Reading,
    cands: list[Candidate],
    index: NameIndex,
    schema: dict[str, set[str]],
    *,
    need_catalogue: bool = False,
) -> tuple[list[Resolved], list[str]]:
    """Each candidate as a protocol, an asset or unknown; and the words that still need a
    lookup (asset lookups not done yet, or — with `need_catalogue` — the protocol catalogue
    not fetched yet, so that a protocol name reads the same with a cold or a warm cache)."""
    known = _Known(
        words=[t.text for t in reading.tokens],
        slugs=index.known_protocols(schema.get("protocol", set())),
        assets={a.upper() for a in schema.get("asset", set())},
        index=index,
        need_catalogue=need_catalogue and not index.has_catalogue(),
        can_ask_name=need_catalogue,
    )
    out: list[Resolved] = []
    pending: list[str] = []
    skip_until = -1
    for c in cands:
        if c.index <= skip_until:
            continue
        found = known.ticker(c) if c.ticker else known.name(c)
        if found is None:
            pending.append(c.text)
            continue
        out.append(found)
        skip_until = c.index + found.used - 1
    return out, pending


@dataclass
class _Known:
    """What a candidate can be checked against, and the two ways of reading it."""

    words: list[str]
    slugs: list[str]
    assets: set[str]
    index: NameIndex
    need_catalogue: bool
    can_ask_name: bool = False

    def ticker(self, c: Candidate) -> Resolved | None:
        """USDC, stETH, $AERO: an asset first; None while the index has not been asked."""
        looked = self.index.asset_lookup(c.text)
        upper = c.text.upper()
        if upper in self.assets or (looked and (upper in looked or c.text.isupper())):
            return Resolved(c.text, "asset", [upper], c.negated, c.index)
        if looked is None:
            return None
        protos, used = protocol_matches(self.words, c.index, self.slugs)
        if protos:
            return Resolved(c.text, "protocol", protos, c.negated, c.index, used)
        return Resolved(c.text, "unknown", [], c.negated, c.index)

    def name(self, c: Candidate) -> Resolved | None:
        """Aave, curve, Morpho: a protocol first; None while the index has not been asked."""
        if self.need_catalogue:
            return None
        if self.can_ask_name and needs_name_lookup(c.text, self.slugs, self.index):
            return None
        protos, used = protocol_matches(self.words, c.index, self.slugs)
        if protos:
            return Resolved(c.text, "protocol", protos, c.negated, c.index, used)
        upper = c.text.upper()
        if upper in self.assets:
            return Resolved(c.text, "asset", [upper], c.negated, c.index)
        looked = self.index.asset_lookup(c.text)
        if looked and upper in looked:
            return Resolved(c.text, "asset", [upper], c.negated, c.index)
        if not self.index.has_catalogue() or looked is None:
            return None
        if len(c.text) >= 3 and any(s.startswith(upper) for s in looked):
            return Resolved(c.text, "asset", [upper], c.negated, c.index)
        return Resolved(c.text, "unknown", [], c.negated, c.index)
