"""One question, read once: entities, tokens, numbers, field mentions and cue words, and
the structure around them: what a negation reaches, time expressions, amounts to place and
the risk the question accepts.

Everything later (routing, binding, names) works from this reading, so a question is
tokenised and scanned the same way whichever tool it ends up calling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from demo_planner import vocabulary as voc
from demo_planner.amounts import Amount, take_amounts
from demo_planner.lexicon import Mention, PhraseTable, find_mentions
from demo_planner.negation import Item, negated_tokens, negator_at
from demo_planner.numbers import Numbers, add_implicit_ratios, read_numbers
from demo_planner.risk_appetite import Appetite, read_appetite
from demo_planner.text import (
    Entities,
    Token,
    find_entities,
    is_ticker_shaped,
    phrase_tokens,
    tokenize,
    without_possessive,
)
from demo_planner.timeframes import TimeWindow, read_windows


def _phrase_set(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    return sorted({phrase_tokens(w) for w in words}, key=len, reverse=True)


_CUES: dict[str, list[tuple[str, ...]]] = {
    "vault": _phrase_set(voc.VAULT_WORDS),
    "token_list": _phrase_set(voc.TOKEN_LIST_WORDS),
    "protocol": _phrase_set(voc.PROTOCOL_WORDS),
    "feed": _phrase_set(voc.FEED_WORDS),
    "wallet": _phrase_set(voc.WALLET_WORDS),
    "wallet_top": _phrase_set(voc.WALLET_TOP_WORDS),
    "wallet_list": _phrase_set(voc.WALLET_LIST_WORDS),
    "history": _phrase_set(voc.HISTORY_WORDS),
    "risk": _phrase_set(voc.RISK_WORDS),
    "yield_source": _phrase_set(voc.YIELD_SOURCE_WORDS),
    "judgement": _phrase_set(voc.JUDGEMENT_WORDS),
    "follow_token": _phrase_set(voc.FOLLOW_TOKEN_WORDS),
    "protocol_talk": _phrase_set(voc.PROTOCOL_TALK_WORDS),
}
_SHORT_OR_AMBIGUOUS = set(voc.CHAIN_SHORT) | set(voc.CHAIN_AMBIGUOUS)
_NOT_TICKER = {w.lower() for w in voc.NOT_TICKERS}
_CHAIN_NOUNS = ("chain", "network", "mainnet")


def _learned_only(word: str) -> bool:
    return word not in voc.CHAIN_NAMES and word not in voc.CHAIN_SHORT


@dataclass
class Reading:
    """What a question says, before any tool is chosen."""

    question: str
    entities: Entities
    tokens: list[Token]
    numbers: Numbers
    mentions: list[Mention]
    cues: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    negated: set[int] = field(default_factory=set)  # tokens a negation reaches
    windows: list[TimeWindow] = field(default_factory=list)
    amounts: list[Amount] = field(default_factory=list)
    appetite: Appetite | None = None

    @property
    def words(self) -> list[str]:
        return [t.low for t in self.tokens]

    def has(self, cue: str) -> bool:
        """True when any phrase of the cue list is in the question."""
        return bool(self.cues.get(cue))

    def mentions_of(self, kind: str) -> list[Mention]:
        return [m for m in self.mentions if m.kind == kind]

    def chains(self) -> list[tuple[str, bool]]:
        """Chain slugs named, in order, each with whether it is negated ('not on bsc')."""
        out: list[tuple[str, bool]] = []
        for m in self.mentions_of("chain"):
            item = (m.key, m.start in self.negated)
            if item not in out:
                out.append(item)
        return out

    def consumed(self) -> set[int]:
        """Tokens read as numbers, field mentions or amounts."""
        used = set(self.numbers.consumed)
        for m in self.mentions:
            used |= set(range(m.start, m.end + 1))
        for a in self.amounts:
            used |= set(range(a.start, a.end + 1)) - self.amount_assets()
        return used

    def amount_assets(self) -> set[int]:
        """Tokens naming what an amount is in ("USDC" in "50k USDC"): still names."""
        return {a.end for a in self.amounts if a.end > a.start and a.asset != "USD"}

    def in_windows(self) -> set[int]:
        """Tokens of time expressions ("since March": "March" is no name)."""
        return {i for w in self.windows for i in w.tokens}

    def dated(self) -> list[TimeWindow]:
        """Time expressions that give a length ("last week", "since March")."""
        return [w for w in self.windows if w.days is not None]


def _find_cues(words: list[str]) -> dict[str, list[tuple[int, int]]]:
    found: dict[str, list[tuple[int, int]]] = {}
    for cue, phrases in _CUES.items():
        for phrase in phrases:
            n = len(phrase)
            for i in range(len(words) - n + 1):
                if tuple(words[i : i + n]) == phrase:
                    found.setdefault(cue, []).append((i, i + n - 1))
    return found


def _gate_chains(mentions: list[Mention], tokens: list[Token]) -> list[Mention]:
    """Short chain names ('arb', 'eth') and everyday ones ('base', 'mode') count as chains
    only after a chain preposition ('on arb') or, for the everyday ones, when capitalised."""
    words = [t.low for t in tokens]
    out: list[Mention] = []
    for m in mentions:
        ticker = tokens[m.start].text.isupper() and words[m.start] in voc.CHAIN_SHORT
        listed = (
            _listed_after_chain(m, out, words)
            or _listed_before_chain(m, mentions, words)
            or _after_negator(m, words)
        )
        if m.kind == "chain" and not ticker and listed:
            out.append(m)  # "on arbitrum or base": a list of chains after one preposition
            continue
        if m.kind == "chain" and m.start == m.end and _learned_only(words[m.start]):
            # A chain known only from the index ('stable', 'tempo', 'ink') is read as one
            # only where a chain is named: "stable yields" are not yields on Stable.
            before = words[m.start - 1] if m.start > 0 else ""
            after = words[m.end + 1] if m.end + 1 < len(words) else ""
            if before not in voc.CHAIN_PREPOSITIONS and after not in _CHAIN_NOUNS:
                continue
        if m.kind == "chain" and m.start == m.end and words[m.start] in _SHORT_OR_AMBIGUOUS:
            before = words[m.start - 1] if m.start > 0 else ""
            after = words[m.end + 1] if m.end + 1 < len(words) else ""
            ok = before in voc.CHAIN_PREPOSITIONS or after in ("chain", "network", "mainnet")
            written = tokens[m.start].text
            if (
                words[m.start] in voc.CHAIN_AMBIGUOUS
                and written[:1].isupper()
                and not written.isupper()
            ):
                ok = True
            # "earn 5% on ETH" is the asset; "vaults on eth", "USDC on OP" the chain.
            if ok and written.isupper() and words[m.start] in voc.CHAIN_SHORT:
                other_ticker = any(
                    is_ticker_shaped(t.text) and t.index != m.start and t.low not in _NOT_TICKER
                    for t in tokens
                )
                ok = (
                    after in ("chain", "network", "mainnet")
                    or (m.start >= 2 and words[m.start - 2] in voc.NAME_SLOT_NEXT)
                    or other_ticker
                )
            if not ok:
                continue
        out.append(m)
    return out


def _listed_after_chain(m: Mention, accepted: list[Mention], words: list[str]) -> bool:
    """A chain right after a joiner that follows a chain already read ("arbitrum or base",
    "base, op and arb")."""
    j = m.start - 1
    if j < 1 or words[j] not in voc.LIST_JOINERS:
        return False
    while j > 0 and words[j] in voc.LIST_JOINERS:
        j -= 1
    return any(a.kind == "chain" and a.end == j for a in accepted)


def _after_negator(m: Mention, words: list[str]) -> bool:
    """'avoid base and blast', 'excluding mode': a chain where a negated list starts (a bare
    "no" or "not" is not enough: "no base yield")."""
    for k in range(max(0, m.start - 4), m.start):
        span = negator_at(words, k)
        if span and k + span == m.start and words[k] not in ("no", "not", "non", "zero"):
            return True
    return False


def _listed_before_chain(m: Mention, mentions: list[Mention], words: list[str]) -> bool:
    """A chain right before a joiner and a chain's full name ("base or ethereum")."""
    j = m.end + 1
    if j >= len(words) or words[j] not in voc.LIST_JOINERS:
        return False
    while j < len(words) and words[j] in voc.LIST_JOINERS:
        j += 1
    return any(
        n.kind == "chain"
        and n.start == j
        and words[j] in voc.CHAIN_NAMES
        and words[j] not in voc.CHAIN_AMBIGUOUS
        for n in mentions
    )


def _gate_price_words(
    mentions: list[Mention], reading_numbers: Numbers, words: list[str]
) -> list[Mention]:
    """'up'/'down' name a price move only next to one ('up 5%', 'went down'), not in
    'make up' or 'break down'."""
    out = []
    for m in mentions:
        if m.kind == "family" and m.key == "price_change" and words[m.start] in ("up", "down"):
            before = words[m.start - 1] if m.start > 0 else ""
            moved = (m.end + 1) in reading_numbers.consumed or before in voc.PRICE_VERBS
            if before in voc.PHRASAL_NOT_PRICE:
                moved = False
            if not moved:
                continue
        out.append(m)
    return out


def _items(tokens: list[Token], mentions: list[Mention], consumed: set[int]) -> list[Item]:
    """What a negation can reach: chains, flags, enum values and fields the tools name, and
    every other word that may be a name ("morpho", "Euler", "USDC")."""
    items = []
    covered: set[int] = set()
    kinds = {"chain": "chain", "flag": "flag", "enum": "enum", "family": "family"}
    for m in mentions:
        if m.kind in kinds and not covered & set(range(m.start, m.end + 1)):
            items.append(Item(kinds[m.kind], m.start, m.end))
            covered |= set(range(m.start, m.end + 1))
    for t in tokens:
        written_as_word = t.text[:1].isalpha() or t.text.startswith("$")
        if t.index in covered or t.index in consumed or not written_as_word:
            continue
        bare = without_possessive(t.low.lstrip("$"))
        if bare in voc.STOPWORDS or bare in voc.NEGATION_FILLERS or len(bare) < 2:
            continue
        items.append(Item("name", t.index, t.index))
    return items


def read(question: str, table: PhraseTable, today: date | None = None) -> Reading:
    """Read a question against the phrase table of the offered tools (`today` dates the
    windows that start at a point in time, "since March")."""
    entities = find_entities(question)
    # "hasn’t" reads as "hasn't": the same length, so positions stay those of the question.
    tokens = tokenize(entities.masked.replace("\u2019", "'"))
    numbers = read_numbers(tokens)
    words = [t.low for t in tokens]
    windows = read_windows(tokens, numbers, today or datetime.now(UTC).date())
    in_windows = {i for w in windows for i in w.tokens}
    mentions = _gate_chains(find_mentions(tokens, table, numbers.consumed), tokens)
    mentions = _gate_price_words(mentions, numbers, words)
    ratios = [m.start for m in mentions if m.kind == "family" and m.key.endswith("_ratio")]
    add_implicit_ratios(numbers, words, ratios)
    amounts = take_amounts(tokens, numbers, mentions)
    items = _items(tokens, mentions, numbers.consumed | in_windows)
    return Reading(
        question=question,
        entities=entities,
        tokens=tokens,
        numbers=numbers,
        mentions=mentions,
        cues=_find_cues([without_possessive(w) for w in words]),  # "the vault's history"
        negated=negated_tokens(words, items, numbers.consumed),
        windows=windows,
        amounts=amounts,
        appetite=read_appetite(words, [t.text for t in tokens]),
    )
