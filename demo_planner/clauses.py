"""Questions with more than one part: "what's AAVE trading at and any news on it?".

A question is split where a conjunction or a comma ("and", "but", "also", ",") is followed
by the start of a clause of its own — a question word ("what", "how"), an auxiliary with its
subject ("is it", "has Euler"), an imperative ("show", "tell me", "check") or "any" — and
at every sentence end. Lists never split ("Aave and Compound", "history and risk", "between
5 and 15%"): what follows their "and" starts no clause. Each part is then planned on its
own, within the same steps of the tool loop.

A part that points back with a pronoun ("it", "its", "that") gets the earlier part's subject
in its place ("any news on it?" → "any news on AAVE?"); a part with no subject of its own
gets it added ("Tell me about LINK. Any headlines?"). Two pieces that ask one thing stay
one part: the first sets the scene ("I have 50k USDC, where should I put it?", "with $20k,
what are…", "skip the unaudited stuff and show me…"), names what the second asks about
("0x… on base, what is it?"), or looks for vaults the second asks about ("find the best
WBTC vault and tell me how risky it is"): then the whole question is one plan, with the
analysis as its follow-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from demo_planner import vocabulary as voc
from demo_planner.negation import negator_at
from demo_planner.text import ADDRESS, ENS_NAME, VAULT_ID, is_ticker_shaped

MAX_PARTS = 3
_SPLIT = re.compile(
    r"(?P<sep>\s*(?:[;?!]|\.(?=\s))\s*(?:and\s+|but\s+|also\s+|plus\s+)*"
    r"|\s*,?\s+(?:and|but|plus)\s+(?:also\s+|then\s+)?"
    r"|\s*,\s+(?:also\s+|then\s+)?)",
    re.IGNORECASE,
)
# Single words that ask for something of their own (news, yields, history, risk, a list).
_CUE_LISTS = (
    voc.FEED_WORDS,
    voc.VAULT_WORDS,
    voc.HISTORY_WORDS,
    voc.RISK_WORDS,
    voc.WALLET_WORDS,
    voc.TOKEN_LIST_WORDS,
    voc.YIELD_SOURCE_WORDS,
)
_CUE_WORDS = frozenset(w for phrases in _CUE_LISTS for w in phrases if " " not in w)
_WORD = re.compile(r"[A-Za-z0-9$][A-Za-z0-9.$'’-]*")
# Words after which a lowercase word is what a part is about ("news on aave").
_SUBJECT_BEFORE = frozenset({"on", "about", "to", "at", "of", "with", "for", "into"})
_PRONOUNS = re.compile(
    r"\b(?:it|its|it's|them|they|their|this one|that one|that|this|those)\b(?!['’]s\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Part:
    """One part of a question: the words to plan, and how they were written."""

    text: str
    said: str  # the part as the user wrote it (before a subject was put in)


def split_question(question: str) -> list[Part]:
    """The parts of a question, in order; one part when it asks one thing."""
    pieces = _pieces(question)
    if len(pieces) < 2:
        return [Part(question, question)]
    # (start, end) of each part in the question, and the text planned for it.
    spans: list[tuple[int, int]] = [pieces[0]]
    texts: list[str] = [question[slice(*pieces[0])]]
    for start, end in pieces[1:]:
        piece = question[start:end]
        if _one_question(question[slice(*spans[-1])], piece):
            # One question: the earlier part goes on with the words as written.
            texts[-1] += question[spans[-1][1] : end]
            spans[-1] = (spans[-1][0], end)
            continue
        subject = _subject(texts[-1])
        spans.append((start, end))
        texts.append(_with_subject(piece, subject))
    parts = [Part(text, question[a:b]) for text, (a, b) in zip(texts, spans, strict=True)]
    if len(parts) > MAX_PARTS:
        a, b = spans[MAX_PARTS - 1][0], spans[-1][1]
        rest = _with_subject(question[a:b], _subject(texts[MAX_PARTS - 2]), every=True)
        parts = [*parts[: MAX_PARTS - 1], Part(rest, question[a:b])]
    return parts


def _pieces(question: str) -> list[tuple[int, int]]:
    """Where the question is cut: before each clause that starts on its own."""
    pieces: list[tuple[int, int]] = []
    start = 0
    for found in _SPLIT.finditer(question):
        left = question[start : found.start()].strip()
        right = question[found.end() :].strip()
        # A new sentence is a new clause ("ETH price? also best ETH staking yield").
        sentence = bool(re.match(r"\s*[;?!.]", found.group(0)))
        opens = _starts_clause(right) or (sentence and len(_words(right)) >= 2)
        if not left or not right or not opens or len(_words(left)) < 2:
            continue
        pieces.append((start, found.start()))
        start = found.end()
    pieces.append((start, len(question)))
    return [(a, b) for a, b in pieces if question[a:b].strip(" ,;?!.")]


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def _starts_clause(text: str) -> bool:
    """Whether text opens a clause of its own: a question word, an auxiliary, an imperative
    or "any"; an auxiliary must be followed by its subject ("and is it audited", not "and is
    above 5%")."""
    words = _words(text)
    if not words:
        return False
    first = words[0]
    if first in voc.CLAUSE_OPENERS:
        return True
    if first in voc.AUXILIARIES or first in ("will", "can"):
        nxt = words[1] if len(words) > 1 else ""
        return nxt in voc.CLAUSE_SUBJECTS or (nxt.isalpha() and nxt not in voc.STOPWORDS)
    return False


def _subject(text: str) -> str | None:
    """What a part is about, as written: an address, a vault id, a ticker or a name."""
    for pattern in (ADDRESS, ENS_NAME, VAULT_ID):
        found = pattern.search(text)
        if found:
            return found.group(0)
    words = _WORD.findall(text)
    lows = [w.lower() for w in words]
    for i, word in enumerate(words):
        bare = word.strip(".'’").removesuffix("'s").removesuffix("’s")
        low = bare.lower().lstrip("$")
        if low in voc.STOPWORDS or bare.upper() in voc.NOT_TICKERS or len(low) < 2:
            continue
        if low in voc.MONTHS or low in voc.CLAUSE_OPENERS or low[:1].isdigit():
            continue  # "since March", "Any news?", "$20k": no subject
        before = lows[i - 1] if i else ""
        if before in voc.CHAIN_PREPOSITIONS and (low in voc.CHAIN_NAMES or low in voc.CHAIN_SHORT):
            continue  # "on ethereum" is where, not what
        named = is_ticker_shaped(bare) or (i > 0 and bare[:1].isupper())
        # "the news on aave", "happened to euler": a word where a name goes.
        slot = before in _SUBJECT_BEFORE and bare.isalpha() and low not in _CUE_WORDS
        if named or low in voc.ASSET_NAMES or slot:
            return bare
    return None


def _one_question(left: str, right: str) -> bool:
    """Whether two pieces ask one thing: the left sets the scene for the right ("I have 50k
    USDC, where should I put it?", "with $20k, what are…", "skip the unaudited stuff and
    show me…"), names what the right asks about ("0x… on base, what is it?"), or looks
    for vaults the right asks about ("… the best WBTC vault and tell me how risky it is",
    "USDC vaults on base, how has the APY moved?"); the right names no subject of its own.
    """
    left_words = _words(left)
    if not left_words or left_words[0] in voc.SCENE_OPENERS or negator_at(left_words, 0):
        return True
    opens = left_words[0] in voc.CLAUSE_OPENERS or left_words[0] in voc.AUXILIARIES
    own_subject = _subject_of(right) is not None
    if not opens and not own_subject and not set(_words(right)) & _CUE_WORDS:
        return True  # "0x… on base, what is it?"; "price of AAVE? any news?" asks more
    nouns = voc.VAULT_SUBJECT_NOUNS | voc.LIST_SUBJECT_NOUNS
    if not opens and _subject(left) is None and not set(left_words) & nouns:
        return True
    return bool(set(left_words) & voc.VAULT_SUBJECT_NOUNS) and not own_subject


def _subject_of(text: str) -> str | None:
    """A subject of the part's own, pronouns aside."""
    return _subject(_PRONOUNS.sub(" ", text))


def _with_subject(piece: str, subject: str | None, *, every: bool = False) -> str:
    """The part with the earlier part's subject in place of its pronoun (`every`: of all
    of them), or added when it names none of its own ("and any news?")."""
    if subject is None or _subject_of(piece) is not None:
        return piece
    replaced, n = _PRONOUNS.subn(
        lambda m: _pronoun(m.group(0), subject), piece, count=0 if every else 1
    )
    if n:
        return replaced
    words = set(_words(piece))
    if words & voc.VAULT_SUBJECT_NOUNS or words & voc.LIST_SUBJECT_NOUNS:
        return piece  # "and the best stablecoin vaults?": a subject of its own
    return f"{piece.rstrip('?!. ')} about {subject}"


def _pronoun(word: str, subject: str) -> str:
    return f"{subject}'s" if word.lower() in ("its", "their") else subject
