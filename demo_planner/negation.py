"""Negation and its scope: which words of a question a "not", "without" or "excluding" reaches.

A negator reaches the list right after it, not only the next word or two: "excluding morpho
and euler" leaves out both, "not on arbitrum or base" both chains, "without Morpho/Euler"
both names, "anything but Aave" Aave. The list is read by its structure: items of one kind
(names and chains, or one field word) joined by commas, "and", "or", "nor", "/" or "&",
with articles and prepositions between them; it ends where anything else starts (a field, a
number, a verb, a clause word such as "with" or "that"). Auxiliary verbs negate with or
without their apostrophe ("hasn't", "hasnt", "isnt", "havent"), and a negated auxiliary
reaches past the verbs that follow it ("havent been audited", "hasn't ever been hacked").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from demo_planner import vocabulary as voc
from demo_planner.text import phrase_tokens

# "free" negates what comes before it ("IL-free"), never what follows ("free USDC yields").
_NEGATOR_PHRASES = sorted(
    {phrase_tokens(p) for p in voc.NEGATORS if p != "free" and phrase_tokens(p)},
    key=len,
    reverse=True,
)
_JOINERS = frozenset(voc.LIST_JOINERS)
_FILLERS = frozenset(voc.NEGATION_FILLERS)
# An item of these kinds is one list with the others: "not on base or Aave" reads as a list.
_ENTITY_KINDS = frozenset({"chain", "name"})


@dataclass(frozen=True)
class Item:
    """A word or phrase a negation can reach: a name, a chain, a flag or an enum value."""

    kind: str
    start: int
    end: int


def negator_at(words: list[str], i: int) -> int:
    """How many words a negator starting at `i` spans (0: none there)."""
    word = words[i]
    for phrase in _NEGATOR_PHRASES:
        n = len(phrase)
        if tuple(words[i : i + n]) == phrase:
            # "not only", "not just": a restriction, not a negation.
            if phrase == ("not",) and i + 1 < len(words) and words[i + 1] in ("only", "just"):
                return 0
            return n
    if is_negated_auxiliary(word):
        return 1
    return 0


def is_negated_auxiliary(word: str) -> bool:
    """'isn't', 'isnt', 'havent', "won't": an auxiliary verb with its negation glued on."""
    word = word.replace("\u2019", "'")
    if word.endswith("n't"):
        return word[:-3] in voc.AUXILIARIES or word in ("can't", "won't", "ain't")
    if word.endswith("nt"):
        return word[:-2] in voc.AUXILIARIES or word in ("cant", "wont", "aint")
    return word == "cannot"


def negated_tokens(
    words: list[str],
    items: list[Item],
    stops: set[int],
    *,
    after: Callable[[int], bool] | None = None,
) -> set[int]:
    """Token indices a negation reaches: each negator's list of items, and items negated by
    a word right after them ("IL-free"). `stops` are tokens read as numbers or comparators:
    "no more than 5%" is a bound, not a negation."""
    by_start = {item.start: item for item in items}
    out: set[int] = set()
    i = 0
    while i < len(words):
        if i in stops:
            i += 1
            continue
        span = negator_at(words, i)
        if not span:
            i += 1
            continue
        reached = _reach(words, i + span, by_start, stops)
        out |= reached
        i += span
    for item in items:
        nxt = item.end + 1
        if nxt < len(words) and words[nxt] == "free" and (after is None or after(item.start)):
            out |= set(range(item.start, item.end + 1))
    return out


def _reach(words: list[str], k: int, by_start: dict[int, Item], stops: set[int]) -> set[int]:
    """The list a negator ending just before `k` reaches."""
    k = _skip_fillers(words, k, by_start)
    first = by_start.get(k)
    if first is None or k in stops:
        return set()
    reached = set(range(first.start, first.end + 1))
    if first.kind not in _ENTITY_KINDS:
        return reached  # "no IL and audited": a field word negates alone
    current = first
    while True:
        j = current.end + 1
        if j >= len(words) or words[j] not in _JOINERS:
            return reached
        comma_only = words[j] == "," and (j + 1 >= len(words) or words[j + 1] not in _JOINERS)
        while j < len(words) and words[j] in _JOINERS:
            j += 1  # ", and", ", or"
        j = _skip_fillers(words, j, by_start)
        nxt = by_start.get(j)
        if nxt is None or nxt.kind not in _ENTITY_KINDS or j in stops:
            return reached
        # After a bare comma the list goes on only if it goes on again ("curve, convex and
        # yearn"); "avoid mode and base, USDC vaults…" ends at the comma.
        after = nxt.end + 1
        if comma_only and (after >= len(words) or words[after] not in _JOINERS):
            return reached
        reached |= set(range(nxt.start, nxt.end + 1))
        current = nxt


def _skip_fillers(words: list[str], k: int, by_start: dict[int, Item]) -> int:
    while k < len(words) and k not in by_start and words[k] in _FILLERS:
        k += 1
    return k
