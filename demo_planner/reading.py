"""One question, read once: entities, tokens, numbers, field mentions and cue words.

Everything later (routing, binding, names) works from this reading, so a question is
tokenised and scanned the same way whichever tool it ends up calling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from demo_planner import vocabulary as voc
from demo_planner.lexicon import Mention, PhraseTable, find_mentions
from demo_planner.numbers import Numbers, add_implicit_ratios, read_numbers
from demo_planner.text import (
    Entities,
    Token,
    find_entities,
    is_ticker_shaped,
    phrase_tokens,
    tokenize,
    without_possessive,
)


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
_NEGATORS = _phrase_set(voc.NEGATORS)
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
    negated: set[int] = field(default_factory=set)

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
        """Tokens read as numbers or field mentions."""
        used = set(self.numbers.consumed)
        for m in self.mentions:
            used |= set(range(m.start, m.end + 1))
        return used


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
    out = []
    for m in mentions:
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


def _negated(mentions: list[Mention], words: list[str]) -> set[int]:
    """Start tokens of mentions negated by a word just before ('no IL') or after ('IL-free')."""
    out = set()
    for m in mentions:
        for back in (1, 2):
            probe = m.start - back + 1
            if any(
                probe - len(p) >= 0 and tuple(words[probe - len(p) : probe]) == p for p in _NEGATORS
            ):
                out.add(m.start)
        if m.end + 1 < len(words) and words[m.end + 1] == "free":
            out.add(m.start)
    return out


def read(question: str, table: PhraseTable) -> Reading:
    """Read a question against the phrase table of the offered tools."""
    entities = find_entities(question)
    tokens = tokenize(entities.masked)
    numbers = read_numbers(tokens)
    words = [t.low for t in tokens]
    mentions = _gate_chains(find_mentions(tokens, table, numbers.consumed), tokens)
    mentions = _gate_price_words(mentions, numbers, words)
    ratios = [m.start for m in mentions if m.kind == "family" and m.key.endswith("_ratio")]
    add_implicit_ratios(numbers, words, ratios)
    return Reading(
        question=question,
        entities=entities,
        tokens=tokens,
        numbers=numbers,
        mentions=mentions,
        cues=_find_cues([without_possessive(w) for w in words]),  # "the vault's history"
        negated=_negated(mentions, words),
    )
